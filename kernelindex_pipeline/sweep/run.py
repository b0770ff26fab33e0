"""Run a Liger release's benchmark scripts on this host and collect what they measured.

`run_sweep(SweepRequest(...))`:
1. extract the release (or take an extracted one) and make a fresh work tree with an empty data CSV
   (discovery.py, workdir.py);
2. find or build the scripts' Python environment (cached per Liger version; environment.py);
3. probe the host in that environment and refuse any GPU but the partition's (non-retryable; host.py);
4. run each selected script in its own process group with TZ=UTC and a timeout, its output in a log
   (process.py), every round and backend variant (rounds.py, backends.py), the sentinel around them;
5. after each script read the shared data CSV back: count the rows it added, and restore earlier
   scripts' rows if it left the file damaged (a kill during its rewrite), so no failure loses them
   (data_csv.py);
6. recheck every sample artifact against its digest, merge the rounds into one data CSV (rounds.py),
   take the sentinel band from this GPU's earlier sweeps (a history file in the environment cache) and
   append this sweep's sentinel to it (sentinel.py);
7. publish the evidence (raw samples, logs) to the artifact store (artifact_store.py).

Everything returned is plain data (`SweepResult.to_dict()` is JSON; protocol.py). See docs/concepts/sweeps.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..liger.sample_statistics import row_key_of
from ..liger.sentinel import PLAN as SENTINEL_PLAN
from . import contain, sentinel, tp
from .artifact_store import ArtifactStore, publish_evidence
from .backends import Dispatches, Variant, backend_variants, dispatch_environment, read_dispatches
from .coverage import SweepCoverage, expected_cases, read_rows, sweep_coverage
from .data_csv import UPSTREAM_COLUMNS, RowLedger, read_data_csv, write_data_csv, write_empty_data_csv
from .discovery import benchmark_scripts, resolve_release, scripts_for_kernel, select_scripts
from .environment import (
    ScriptEnvironment,
    default_environment_cache_dir,
    measured_project_versions,
    prepare_environment,
    script_environment,
)
from .gpu_state import read_gpu_state, throttle_reasons
from .host import HostCapture, check_host, probe_host
from .outcomes import HostCheckError, ScriptOutcome, ScriptStatus, classify
from .process import ScriptRun, file_digest, read_log_tail, run_problems, run_script
from .protocol import SweepRequest, SweepResult
from .rounds import RoundRun, merge_rounds
from .samples import (
    HOOK_DIR,
    ArtifactDirectory,
    collect_calls,
    collect_samples,
    hook_environment,
    private_spool,
    verify_artifact,
)
from .workdir import DATA_CSV, WorkDir, prepare_workdir

Progress = Callable[[dict], None]


def scripts_environment(request: SweepRequest, environment_python: Path | None = None) -> dict[str, str]:
    """The scripts' environment variables: the allowlisted part of ours (environment.SCRIPT_ENV_ALLOWLIST)
    plus the request's, TZ=UTC, unbuffered output. The sample hook comes first on PYTHONPATH: its
    sitecustomize wraps do_bench in every script (inert without its spool variable, which only
    run_scripts sets)."""
    return script_environment(
        os.environ,
        extra_pythonpath=[HOOK_DIR, *request.extra_pythonpath],
        extra_env=request.extra_env,
        python=environment_python,
    )


def control_dir(workdir: WorkDir) -> Path:
    """The runner's own files of a sweep (launcher status files, quarantined CSV debris): not evidence."""
    return workdir.root.parent / "runner"


# --- one round: the scripts one after another ---------------------------------------------------------
@dataclass
class ContainedRun:
    """One script's process and what it left besides the data CSV."""

    run: ScriptRun
    tp_rows: tuple[list[dict], list[dict]] | None  # the TP script's (rows, problems) from its output; None for others
    dispatches: Dispatches
    gpu_state: dict  # sweep/gpu_state.py: {"before": ..., "after": ..., "throttle_reasons": [...]}


def run_contained(
    script: Path,
    plan: tp.TpPlan | None,
    python: Path,
    env: dict[str, str],
    variant: Variant,
    spool,
    *,
    log_path: Path,
    timeout_s: float,
    args: list[str] | None,
    control: Path,
    gpu_identity: tuple[str | None, str | None],
) -> ContainedRun:
    """The script (the TP script: once per provider under torchrun) with the sample hook writing to
    `spool` and Liger's dispatcher to a spool of its own, between two readings of the GPU's state."""
    with private_spool(control) as dispatch_spool:
        script_env = {
            **env,
            **variant.env,
            **hook_environment(spool.fileno()),
            **dispatch_environment(dispatch_spool.fileno()),
        }
        fds = (spool.fileno(), dispatch_spool.fileno())
        gpu_before = read_gpu_state(env, *gpu_identity)
        if plan is not None:
            run, tp_rows = tp.run_tp(script, plan, python, script_env, log_path, timeout_s, control, fds)
        else:
            run = run_script(script, python, script_env, log_path, timeout_s, list(args or []), control, pass_fds=fds)
            tp_rows = None
        gpu_after = read_gpu_state(env, *gpu_identity)
        dispatches = read_dispatches(dispatch_spool)
    gpu_state = {"before": gpu_before, "after": gpu_after, "throttle_reasons": throttle_reasons(gpu_before, gpu_after)}
    return ContainedRun(run, tp_rows, dispatches, gpu_state)


def dispatch_problems(dispatches: Dispatches) -> list[dict]:
    return [
        {"kind": "dispatch_failed", "message": f"Liger's dispatcher raised for op {failure['op']!r}: {failure['error']} "
         "(pin another implementation with the sweep's backends setting, or install its extra)"}
        for failure in dispatches.errors[:3]
    ]  # fmt: skip


def run_one_script(
    script: Path,
    plan: tp.TpPlan | None,
    python: Path,
    env: dict[str, str],
    ledger: RowLedger,
    *,
    artifacts: ArtifactDirectory,
    log_path: Path,
    timeout_s: float,
    args: list[str] | None,
    control: Path,
    round_number: int,
    variant: Variant,
    gpu_identity: tuple[str | None, str | None],
    liger_version: str,
) -> ScriptOutcome:
    """Run one script and account for it: its status, the rows it added (earlier scripts' rows kept,
    `ledger`), its raw samples, the backends Liger resolved, and every problem on the way."""
    control.mkdir(parents=True, exist_ok=True)
    spool = private_spool(control)  # this script's alone (no name): no other can reach it
    ran = run_contained(
        script,
        plan,
        python,
        env,
        variant,
        spool,
        log_path=log_path,
        timeout_s=timeout_s,
        args=args,
        control=control,
        gpu_identity=gpu_identity,
    )
    status, error_line = classify(ran.run.exit_code, ran.run.timed_out, read_log_tail(log_path))
    problems = run_problems(ran.run) + dispatch_problems(ran.dispatches)
    if ran.tp_rows is not None:
        problems += tp.append_rows(ledger.path, ran.tp_rows, gpu_identity[0] or "", liger_version)
    rows = ledger.settle(script.name)
    problems += rows.problems
    new_rows = rows.new_rows()
    with spool:
        samples = collect_samples(spool, artifacts, script.name, new_rows)
    problems += samples.problems + artifacts.take_problems()
    dispatches = ran.dispatches
    return ScriptOutcome(
        script=script.name,
        status=status,
        exit_code=ran.run.exit_code,
        error_line=error_line,
        rows=len(rows.new_keys),
        kernels=sorted({row["kernel_name"] for row in new_rows}),
        seconds=round(ran.run.seconds, 3),
        log_path=str(log_path.resolve()),
        log_digest=file_digest(log_path),
        csv_repaired=rows.repaired,
        samples=samples.summary(),
        raw_samples=samples.by_row,
        problems=problems,
        round=round_number,
        variant=variant.name,
        backends=dispatches.summary() if (dispatches.by_case or dispatches.errors or dispatches.outside_cases) else {},
        backends_by_row={row_key_of(row): backend for row in new_rows if (backend := dispatches.backend_of(row))},
        gpu_state=ran.gpu_state,
    )


def run_scripts(
    workdir: WorkDir,
    scripts: list[Path],
    python: Path,
    env: dict[str, str],
    *,
    artifacts: ArtifactDirectory,
    timeout_s: float,
    args: list[str] | None = None,
    progress: Progress | None = None,
    round_number: int = 1,
    variant: Variant | None = None,
    gpus: int | None = None,
    gpu_identity: tuple[str | None, str | None] = (None, None),
    liger_version: str = "",
) -> list[ScriptOutcome]:
    """Run `scripts` one after another against the work tree's data CSV; one outcome per script.

    After each script the CSV is read back and checked against what the earlier scripts left
    (data_csv.RowLedger): rows of earlier scripts that went missing or changed, and a CSV a script
    damaged or replaced (by a directory, say), are restored and named in that script's outcome. A
    script that needs more GPUs than the host has is skipped (tp.py)."""
    outcomes: list[ScriptOutcome] = []
    control = control_dir(workdir)
    ledger = RowLedger(workdir.data_csv, control / "quarantine")
    variant = variant or Variant("resolved", {})
    for index, script in enumerate(scripts, start=1):
        plan = tp.plan_of(script)
        if plan is not None and (gpus or 0) < plan.gpus:
            outcome = tp.skipped_outcome(script, plan, gpus, round_number, variant.name)
        else:
            outcome = run_one_script(
                script,
                plan,
                python,
                env,
                ledger,
                artifacts=artifacts,
                log_path=workdir.logs_dir / f"{script.stem}.log",
                timeout_s=timeout_s,
                args=args,
                control=control,
                round_number=round_number,
                variant=variant,
                gpu_identity=gpu_identity,
                liger_version=liger_version,
            )
        outcomes.append(outcome)
        if progress is not None:
            progress(
                {**outcome.to_dict(), "index": index, "total": len(scripts), "rows_so_far": len(ledger.state.rows)}
            )
    return outcomes


# --- rounds, the sentinel, coverage -------------------------------------------------------------------
def round_label(round_number: int, variant: Variant, variants: int) -> str:
    """The folder of one round (and variant) under logs/: round-2, round-2-swiglu-nvidia-cutedsl."""
    suffix = "" if variants == 1 else "-" + re.sub(r"[^a-z0-9_]+", "-", variant.name.lower()).strip("-")
    return f"round-{round_number}{suffix}"


def run_rounds(
    workdir: WorkDir,
    scripts: list[Path],
    python: Path,
    env: dict[str, str],
    request: SweepRequest,
    variants: list[Variant],
    progress: Progress | None,
    *,
    artifacts: ArtifactDirectory,
    gpus: int | None,
    gpu_identity: tuple[str | None, str | None],
) -> list[RoundRun]:
    """Every script `request.rounds` times, interleaved: round 1 runs each variant's scripts in order,
    then round 2, ... Each round and variant starts from an empty data CSV, kept afterwards in its log
    folder (a script that fails or hangs in one round loses nothing of the others)."""
    runs: list[RoundRun] = []
    for round_number in range(1, request.rounds + 1):
        for variant in variants:
            logs = workdir.logs_dir / round_label(round_number, variant, len(variants))
            logs.mkdir(parents=True, exist_ok=True)
            round_dir = WorkDir(
                root=workdir.root, scripts_dir=workdir.scripts_dir, data_csv=workdir.data_csv, logs_dir=logs
            )
            write_empty_data_csv(workdir.data_csv)
            outcomes = run_scripts(
                round_dir,
                scripts,
                python,
                env,
                artifacts=artifacts,
                timeout_s=request.script_timeout_s,
                args=request.script_args,
                progress=progress,
                round_number=round_number,
                variant=variant,
                gpus=gpus,
                gpu_identity=gpu_identity,
                liger_version=request.liger_version,
            )
            rows = [
                {c: row.get(c, "") for c in UPSTREAM_COLUMNS} for row in read_data_csv(workdir.data_csv).rows.values()
            ]
            write_data_csv(logs / DATA_CSV.name, list(UPSTREAM_COLUMNS), rows, control_dir(workdir) / "quarantine")
            script_of_kernel = {kernel: o.script for o in outcomes for kernel in o.kernels}
            backends = {key: backend for o in outcomes for key, backend in o.backends_by_row.items()}
            runs.append(
                RoundRun(
                    round_number, variant.name, outcomes, {row_key_of(r): r for r in rows}, backends, script_of_kernel
                )
            )
    return runs


def logs_by_kernel(outcomes: list[ScriptOutcome]) -> dict[str, dict]:
    """CSV kernel name -> the log of the script that measured it, as BenchmarkRun evidence."""
    logs: dict[str, dict] = {}
    for outcome in outcomes:
        for kernel in outcome.kernels:
            logs.setdefault(kernel, {"uri": Path(outcome.log_path).as_uri(), "digest": outcome.log_digest})
    return logs


def run_sentinel(
    position: str,
    workdir: WorkDir,
    python: Path,
    env: dict[str, str],
    gpu_name: str | None,
    liger_version: str,
    artifacts: ArtifactDirectory,
) -> list[dict]:
    """Time the sentinel's reference operations in the scripts' interpreter (see sweep/sentinel.py)."""
    logs = workdir.logs_dir
    out = sentinel.result_path(logs, position)
    log_path = logs / f"sentinel-{position}.log"
    control_dir(workdir).mkdir(parents=True, exist_ok=True)
    with private_spool(control_dir(workdir)) as spool:  # in the work dir: a pod's /tmp may be small
        run = run_script(
            sentinel.PROGRAM,
            python,
            {**env, **hook_environment(spool.fileno())},
            log_path,
            sentinel.TIMEOUT_S,
            [json.dumps(SENTINEL_PLAN), str(out.resolve())],
            control_dir(workdir),
            pass_fds=(spool.fileno(),),
        )
        read, _ = collect_calls(spool, artifacts, sentinel.PROGRAM.name)
    status, error = classify(run.exit_code, run.timed_out, read_log_tail(log_path))
    results = json.loads(out.read_text()) if status is ScriptStatus.OK and out.is_file() else {}
    error = None if status is ScriptStatus.OK else f"{status.value}: {error}"
    measurements = sentinel.collect_sentinel(position, read.calls, results, gpu_name, error)
    log = {"uri": log_path.resolve().as_uri(), "digest": file_digest(log_path)}
    return [{**m, "liger_version": liger_version, "log": log} for m in measurements]


def recheck_artifacts(outcomes: list[ScriptOutcome], measurements: list[dict]) -> None:
    """Every sample artifact against its digest, after the last script ended and before the result
    leaves the sweep: a run whose artifact was changed, removed or replaced by a link loses its raw
    samples (named in its script's outcome); a sentinel measurement becomes `failed`."""
    for outcome in outcomes:
        changed = {}
        for key, entry in list(outcome.raw_samples.items()):
            problem = verify_artifact(entry["artifact"])
            if problem is not None:
                changed[key] = problem
                del outcome.raw_samples[key]
        if changed:
            outcome.samples["rows_with_samples"] = len(outcome.raw_samples)
            without = outcome.samples.setdefault("rows_without_samples", {})
            without["artifact_changed"] = without.get("artifact_changed", 0) + len(changed)
            problems = sorted(set(changed.values()))
            outcome.problems.append(
                {
                    "kind": "samples",
                    "message": f"{len(changed)} row(s) lost their raw samples: "
                    + "; ".join(problems[:3])
                    + ("; ..." if len(problems) > 3 else ""),
                }
            )
    for measurement in measurements:
        if measurement.get("status") == "ok" and (problem := verify_artifact(measurement["artifact"])) is not None:
            for name in ("returned", "observed_at", "artifact", "samples", "latencyNs"):
                measurement.pop(name, None)
            measurement.update(status="failed", error=f"its samples artifact {problem}")


def coverage_of(
    request: SweepRequest, release_root: Path, workdir: WorkDir, outcomes: list[ScriptOutcome]
) -> SweepCoverage:
    """The sweep's coverage against the previous sweep's CSV (request.expected_csv) or the release's history."""
    if request.expected_csv:
        rows, expectation, source = read_rows(Path(request.expected_csv)), "previous_sweep", request.expected_csv
    else:
        source = f"{release_root.name}/{DATA_CSV}"
        rows, expectation = read_rows(release_root / DATA_CSV), "release_history"
    expected = expected_cases(rows)
    available = benchmark_scripts(workdir.scripts_dir)
    script_of_kernel = {}
    for kernel in expected:
        found = scripts_for_kernel(kernel, available)
        if found:
            script_of_kernel[kernel] = found[0].name
    return sweep_coverage(
        read_data_csv(workdir.data_csv).rows.values(),
        outcomes,
        expected,
        script_of_kernel,
        expectation=expectation if rows else "none",
        source=source,
    )


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def fresh_work_dir(requested: str | None) -> Path:
    """`requested` if it is new or empty, else the first free `<requested>-2`, `-3`, ... (a retried step
    reuses its run's name: the earlier attempt's logs stay where they are); None: a temporary directory."""
    if not requested:
        return Path(tempfile.mkdtemp(prefix="kernelindex-sweep-"))
    base = Path(requested)
    candidate, attempt = base, 1
    while candidate.exists() and any(candidate.iterdir()):
        attempt += 1
        candidate = base.with_name(f"{base.name}-{attempt}")
    candidate.mkdir(parents=True, exist_ok=True)
    return candidate


@contextlib.contextmanager
def _sigterm_tears_down() -> Iterator[None]:
    """While a sweep runs in the main thread with SIGTERM's default action, SIGTERM raises SystemExit
    (143), so the running script and its launcher are stopped on the way out (a handler the caller set,
    e.g. pipes_entry's, stays as it is). If the process dies without unwinding, the launcher's
    parent-death signal does the same teardown."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def exit_on_sigterm(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, exit_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_sweep(request: SweepRequest, progress: Progress | None = None) -> SweepResult:
    """Run one partition's sweep on this host. Raises HostCheckError (never retry) before running any script
    when the host lacks the partition's GPU or cannot contain the scripts (not Linux); script failures are
    outcomes, not exceptions."""
    try:
        contain.check_available()
    except contain.ContainmentUnavailable as error:
        raise HostCheckError(f"this host cannot contain benchmark scripts: {error}") from None
    with _sigterm_tears_down():
        return _run_sweep(request, progress)


@dataclass
class PreparedSweep:
    """A sweep ready to run: its work tree and scripts, their environment, and the host they run on."""

    work_dir: Path
    release_root: Path
    workdir: WorkDir
    scripts: list[Path]
    environment: ScriptEnvironment
    env: dict[str, str]  # the scripts' environment variables
    capture: HostCapture


def prepare_sweep(request: SweepRequest, timings: dict[str, float]) -> PreparedSweep:
    """The work tree, the scripts' environment and the host check (HostCheckError before any script)."""
    work_dir = fresh_work_dir(request.work_dir)
    mark = time.monotonic()
    release_root = resolve_release(request.release, request.liger_version, work_dir / "release")
    workdir = prepare_workdir(release_root, work_dir)
    scripts = select_scripts(workdir.scripts_dir, request.kernels, request.scripts)
    timings["workdir_s"] = time.monotonic() - mark

    base_env = scripts_environment(request)

    def refuse_wrong_host_before_building() -> None:
        # Building an environment takes minutes: check the GPU with the base interpreter first.
        check_host(probe_host(request.base_python or sys.executable, base_env), request.gpu)

    mark = time.monotonic()
    environment: ScriptEnvironment = prepare_environment(
        request.liger_version,
        scripts_dir=workdir.scripts_dir,
        cache_dir=request.env_cache_dir,
        base_python=request.base_python,
        wheel_dir=request.wheel_dir,
        before_build=refuse_wrong_host_before_building,
        liger_extras=request.liger_extras,
        liger_wheel=request.liger_wheel,
    )
    timings["environment_s"] = time.monotonic() - mark

    mark = time.monotonic()
    env = scripts_environment(request, environment.python)
    capture = probe_host(environment.python, env)
    (workdir.logs_dir / "host.json").write_text(json.dumps(capture.to_dict(), indent=2, sort_keys=True))
    if capture.raw_nvidia_smi_xml:
        (workdir.logs_dir / "nvidia-smi.xml").write_text(capture.raw_nvidia_smi_xml)
    check_host(capture, request.gpu)
    timings["probe_s"] = time.monotonic() - mark
    return PreparedSweep(work_dir, release_root, workdir, scripts, environment, env, capture)


def measure(
    request: SweepRequest, prepared: PreparedSweep, progress: Progress | None, timings: dict[str, float]
) -> tuple[list[RoundRun], list[dict], list[Variant]]:
    """The sentinel at the start, every round of every variant, the sentinel at the end; then every
    sample artifact rechecked. Returns (the rounds' runs, the sentinel measurements, the variants)."""
    workdir, python, capture = prepared.workdir, prepared.environment.python, prepared.capture
    env = prepared.env
    mark = time.monotonic()
    with ArtifactDirectory(workdir.logs_dir / "samples", control_dir(workdir) / "quarantine") as artifacts:
        measurements = run_sentinel(
            "start", workdir, python, env, capture.device_name, request.liger_version, artifacts
        )
        timings["sentinel_s"] = time.monotonic() - mark
        variants = backend_variants(request.backends)
        if request.flce_chunk_mem_consts:
            env = {**env, tp.FLCE_CHUNK_VARIABLE: ",".join(str(c) for c in request.flce_chunk_mem_consts)}
        round_runs = run_rounds(
            workdir,
            prepared.scripts,
            python,
            env,
            request,
            variants,
            progress,
            artifacts=artifacts,
            gpus=capture.device_count,
            gpu_identity=(capture.device_name, capture.device_uuid),
        )
        mark = time.monotonic()
        measurements += run_sentinel("end", workdir, python, env, capture.device_name, request.liger_version, artifacts)
        timings["sentinel_s"] += time.monotonic() - mark
    recheck_artifacts([outcome for run in round_runs for outcome in run.outcomes], measurements)
    return round_runs, measurements, variants


def _run_sweep(request: SweepRequest, progress: Progress | None) -> SweepResult:
    started_at, started = _utc_now(), time.monotonic()
    timings: dict[str, float] = {}
    request.check()
    prepared = prepare_sweep(request, timings)
    round_runs, measurements, variants = measure(request, prepared, progress, timings)
    workdir, capture = prepared.workdir, prepared.capture
    outcomes = [outcome for run in round_runs for outcome in run.outcomes]
    with ArtifactDirectory(workdir.logs_dir / "samples", control_dir(workdir) / "quarantine") as artifacts:
        merged = merge_rounds(round_runs, artifacts)
    write_data_csv(workdir.data_csv, list(UPSTREAM_COLUMNS), merged.rows, control_dir(workdir) / "quarantine")
    store = ArtifactStore.from_environment(request.artifact_store)
    # This GPU's earlier sweeps (a file in the sweep cache) and the request's own: the band; then this sweep joins them.
    history_file = sentinel.history_path(
        request.env_cache_dir or default_environment_cache_dir(), capture.device_uuid, capture.device_name
    )
    band = sentinel.sentinel_band([*request.sentinel_history, *sentinel.read_history(history_file)], measurements)
    sentinel.append_history(history_file, measurements, request.liger_version)

    total = time.monotonic() - started
    scripts_s = sum(outcome.seconds for outcome in outcomes)
    timings.update(total_s=total, scripts_s=scripts_s, overhead_s=total - scripts_s)
    return publish_evidence(
        SweepResult(
            gpu=request.gpu,
            liger_version=request.liger_version,
            csv_path=str(workdir.data_csv.resolve()),
            rows=len(read_data_csv(workdir.data_csv).rows),
            outcomes=outcomes,
            host=capture.to_dict(),
            software=capture.software(),
            settings=capture.settings(),
            labels=capture.labels(socket.gethostname()),
            project_versions=measured_project_versions(request.liger_version, capture, request.liger_commit),
            logs_by_kernel=logs_by_kernel(outcomes),
            environment=prepared.environment.to_dict(),
            timings={k: round(v, 3) for k, v in timings.items()},
            work_dir=str(prepared.work_dir.resolve()),
            started_at=started_at,
            finished_at=_utc_now(),
            sentinel=measurements,
            coverage=coverage_of(request, prepared.release_root, workdir, outcomes).to_dict(),
            rounds=request.rounds,
            variants=[{"name": v.name, "env": v.env} for v in variants],
            merged_samples=merged.raw_samples,
            row_labels=merged.row_labels,
            sentinel_band=band,
        ),
        store,
    )
