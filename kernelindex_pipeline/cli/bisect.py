"""`bisect`: which commit of a change's suspects moved a series, measured on this host (docs/concepts/bisection.md).

Either a group of a regressions.json (``--regressions FILE --group ID``: its boundary, its series, its
suspects) or a kernel by hand (``--kernel --gpu --good --bad --mode``). Each step sweeps the kernel's own
benchmark script at one commit on this host (sweep/bisection.py over liger/bisection.py); the verdict and
every step are printed and written as JSON (docs/concepts/bisection.md). Exit 0 with any verdict (``not
reproduced`` is a finding), 1 when the clone, the group or the commits cannot be used, 2 for usage.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from kernelindex_pipeline.cli.errors import Command, CommandError, UsageError
from kernelindex_pipeline.home import liger_clone

_SLUG = re.compile(r"^[a-z0-9._-]+$")


def _arguments(p: argparse.ArgumentParser) -> None:
    group = p.add_argument_group("from a regressions.json group")
    group.add_argument("--regressions", type=Path, metavar="FILE", help="a regressions.json that `regressions` wrote")
    group.add_argument(
        "--group", metavar="ID", help="the group's id (g-...) or its place in the report's groups (1, 2, ...)"
    )
    hand = p.add_argument_group("by hand")
    hand.add_argument("--kernel", help="the CSV kernel name its benchmark script writes, e.g. layer_norm")
    hand.add_argument("--gpu", help="the GPU slug this host has, e.g. nvidia-h100-80gb-hbm3")
    hand.add_argument("--good", metavar="COMMIT", help="the code of the last run before the change")
    hand.add_argument("--bad", metavar="COMMIT", help="the code of the first run after it")
    hand.add_argument("--mode", help="forward, backward or full")
    hand.add_argument("--provider", default="liger", help="(default: liger)")
    hand.add_argument("--case-key", help="the case, where the script measures several (e.g. hidden8192-rows4096-fp32)")
    p.add_argument(
        "--liger-git",
        metavar="DIR",
        default=liger_clone(),
        help="a clone of Liger-Kernel with full history (default: $KERNELINDEX_LIGER_GIT, else DAGSTER_HOME/liger-git)",
    )
    p.add_argument(
        "--harness", metavar="COMMIT", help="the commit whose benchmark scripts every step runs (default: the bad one)"
    )
    p.add_argument("--rounds", type=int, default=3, help="rounds per step, 2 or more (default 3)")
    p.add_argument(
        "--budget-gpu-seconds", type=float, metavar="S", help="stop cleanly before spending more (default: none)"
    )
    p.add_argument("--out", type=Path, required=True, metavar="FILE", help="writes the verdict and its steps as JSON")
    p.add_argument("--work-dir", type=Path, metavar="DIR", help="the steps' sweeps (default: beside --out)")
    p.add_argument("--build-cache", type=Path, metavar="DIR", help="wheels by commit (default: <cache>/liger-builds)")
    p.add_argument("--env-cache", type=Path, metavar="DIR", help="the sweeps' environments (default: <cache>/envs)")
    p.add_argument(
        "--base-python", metavar="PYTHON", help="the interpreter with the host's torch/triton (default: this one)"
    )
    p.add_argument(
        "--wheel-dir", type=Path, metavar="DIR", help="offline: install the scripts' requirements from these wheels"
    )
    p.add_argument(
        "--pythonpath", action="append", default=[], metavar="DIR", help="prepended for the scripts (repeatable)"
    )
    p.add_argument("--script-timeout", type=float, default=1800.0, metavar="S", help="per script run (default 1800)")


def _check(args: argparse.Namespace) -> str:
    """'group' or 'hand'; a UsageError for anything else (before anything is read)."""
    by_group = args.regressions is not None or args.group is not None
    hand = [args.kernel, args.gpu, args.good, args.bad, args.mode]
    if by_group and any(v is not None for v in hand):
        raise UsageError("give either --regressions with --group, or --kernel --gpu --good --bad --mode, not both")
    if by_group and (args.regressions is None or args.group is None):
        raise UsageError("--regressions and --group go together")
    if not by_group and any(v is None for v in hand):
        raise UsageError("give --regressions FILE --group ID, or all of --kernel --gpu --good --bad --mode")
    if args.gpu is not None and not _SLUG.match(args.gpu):
        raise UsageError(f"--gpu {args.gpu!r} is not a GPU slug (lowercase, e.g. nvidia-h100-80gb-hbm3)")
    if args.rounds < 2:
        raise UsageError(f"--rounds {args.rounds}: a step needs 2 rounds or more for its interval")
    if args.budget_gpu_seconds is not None and not args.budget_gpu_seconds > 0:
        raise UsageError("--budget-gpu-seconds must be positive")
    if not args.liger_git:
        raise UsageError("--liger-git DIR (or $KERNELINDEX_LIGER_GIT): a bisection builds Liger from its clone")
    return "group" if by_group else "hand"


def _bisect(args: argparse.Namespace) -> int:
    mode = _check(args)
    from kernelindex_pipeline.liger.commit_build import CommitBuildError
    from kernelindex_pipeline.liger.source_history import LigerSourceHistory, SourceHistoryError
    from kernelindex_pipeline.sweep.bisection import (
        BisectionInputError,
        SeriesSelector,
        StepSweeper,
        bisection_document,
        plan_by_hand,
        plan_of_group,
        run_bisection,
    )
    from kernelindex_pipeline.sweep.outcomes import SweepError

    try:
        history = LigerSourceHistory(args.liger_git)
        if mode == "group":
            try:
                report = json.loads(args.regressions.read_text(encoding="utf-8"))
            except ValueError as exc:
                raise CommandError(f"{args.regressions}: not JSON ({exc})") from None
            plan = plan_of_group(history, report, args.group, harness=args.harness)
        else:
            series = SeriesSelector(args.kernel, args.mode, args.provider, args.case_key)
            plan = plan_by_hand(
                history, gpu=args.gpu, good=args.good, bad=args.bad, series=series, harness=args.harness
            )
        print(
            f"bisecting {plan.series.label()} on {plan.gpu}: {plan.good[:12]}..{plan.bad[:12]}, "
            f"{len(plan.candidates)} candidate(s), harness {plan.harness[:12]}"
            + (f", group {plan.group}" if plan.group else "")
        )
        fields = {
            "env_cache_dir": str(args.env_cache) if args.env_cache else None,
            "wheel_dir": str(args.wheel_dir) if args.wheel_dir else None,
            "base_python": args.base_python,
            "extra_pythonpath": list(args.pythonpath),
            "script_timeout_s": args.script_timeout,
        }
        step = StepSweeper(
            history,
            plan,
            args.work_dir or args.out.resolve().parent / f"{args.out.stem}-steps",
            rounds=args.rounds,
            build_cache_dir=args.build_cache,
            request_fields=fields,
            progress=lambda line: print(f"  {line}", flush=True),
        )
        verdict = run_bisection(plan, step, budget_seconds=args.budget_gpu_seconds)
    except (SourceHistoryError, BisectionInputError, CommitBuildError) as exc:
        raise CommandError(str(exc)) from None
    except SweepError as exc:  # the host (no such GPU, cannot contain scripts) or the configuration
        raise CommandError(f"the sweep of a step failed: {exc}") from None
    for line in verdict.summary_lines():
        print(line)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(bisection_document(plan, verdict, step.builds), indent=2) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stdout)
    return 0


COMMANDS: dict[str, Command] = {
    "bisect": (
        "bisect a change across Liger's commits with the kernel's own benchmark on this host",
        _arguments,
        _bisect,
    ),
}
