"""Soak: kill -9 of `import-history` at random points, each followed by a rerun (issue 22, item 5).

1. A clean import into a fresh DAGSTER_HOME, exported (`kernelindex-pipeline export`): the reference.
2. In a second fresh DAGSTER_HOME, KILLS times: start `import-history`, kill -9 it after a random
   delay in [0, the clean import's wall time], then rerun it to the end. After each rerun: no run is
   QUEUED/STARTING/STARTED/CANCELING, and no process is left whose environment names this
   DAGSTER_HOME (daemon, code servers, run workers, supervisors).
3. The soak's catalogue exported and compared byte for byte with the reference (JSON Lines export and
   YAML bundle).

Prints one line per kill (delay, what the rerun reported, its wall time) and the totals; exits 1 if any
check failed. CPU-heavy (every start loads Dagster and the code location): run it alone.

Usage:
  .venv/bin/python bench/import_soak.py [--kills 20] [--history-release 0.8.5]
      [--partition 'nvidia-b200|0.8.0' ...] [--seed 22]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_PARTITIONS = ["nvidia-b200|0.8.0", "nvidia-h100-80gb-hbm3|0.8.0"]
EXPORT_FILES = ("kernelindex-catalogue.jsonl", "kernelindex-catalogue.bundle.yaml")
STUCK_STATUSES = ("QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING")


def _env(home: Path, release: str) -> dict[str, str]:
    return {**os.environ, "DAGSTER_HOME": str(home), "KERNELINDEX_HISTORY_RELEASE": release}


def _command(partitions: list[str]) -> list[str]:
    return [
        sys.executable,
        "-W",
        "ignore",
        "-m",
        "kernelindex_pipeline.cli",
        "import-history",
        "--wait",  # the kill points include the catalogue refresh, as before the default stopped waiting for it
        *(arg for key in partitions for arg in ("--partition", key)),
    ]


def _import(home: Path, release: str, partitions: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    completed = subprocess.run(
        _command(partitions),
        env=_env(home, release),
        capture_output=True,
        text=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    return time.perf_counter() - started, completed


def _export(home: Path, out: Path) -> dict[str, str]:
    subprocess.run(
        [sys.executable, "-W", "ignore", "-m", "kernelindex_pipeline.cli", "export", "--out", str(out)],
        env={**os.environ, "DAGSTER_HOME": str(home)},
        check=True,
        capture_output=True,
        cwd=ROOT,
    )
    return {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in EXPORT_FILES}


def _processes_of(home: Path) -> list[str]:
    """Processes whose environment names `home` as DAGSTER_HOME (ours: this script has no such variable)."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        try:
            if process.environ().get("DAGSTER_HOME") == str(home):
                found.append(f"{process.pid} {' '.join(process.info['cmdline'][:4])}")
        except psutil.Error:
            continue
    return found


def _stuck_runs(home: Path) -> list[str]:
    from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

    with DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(RunsFilter(statuses=[DagsterRunStatus(s) for s in STUCK_STATUSES]))
        return [f"{run.run_id} {run.job_name} {run.status.value}" for run in runs]


def _run_counts(home: Path) -> dict[str, int]:
    from dagster import DagsterInstance

    counts: dict[str, int] = {}
    with DagsterInstance.from_config(str(home)) as instance:
        for run in instance.get_runs():
            counts[run.status.value] = counts.get(run.status.value, 0) + 1
    return counts


def soak(home: Path, args, clean_wall: float, rng: random.Random) -> list[str]:
    problems = []
    for number in range(1, args.kills + 1):
        delay = rng.uniform(0, clean_wall)
        victim = subprocess.Popen(
            _command(args.partition),
            env=_env(home, args.history_release),
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            victim.wait(timeout=delay)
            finished_first = True
        except subprocess.TimeoutExpired:
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            finished_first = False
        wall, rerun = _import(home, args.history_release, args.partition)
        reported = [line for line in rerun.stderr.splitlines() if "marked failed" in line or "left behind" in line]
        stuck, left = _stuck_runs(home), _processes_of(home)
        verdict = "ok" if rerun.returncode == 0 and not stuck and not left else "FAIL"
        print(
            f"kill {number:2d}: after {delay:5.1f}s{' (had finished)' if finished_first else ''}; rerun exit "
            f"{rerun.returncode} in {wall:5.1f}s, {len(reported)} lines about leftovers; stuck runs {len(stuck)}, "
            f"processes left {len(left)}: {verdict}",
            flush=True,
        )
        for line in reported:
            print(f"          {line[:200]}", flush=True)
        if verdict != "ok":
            print("          " + "\n          ".join(rerun.stderr.strip().splitlines()[-5:] + stuck + left), flush=True)
            problems.append(
                f"kill {number}: exit {rerun.returncode}, stuck {stuck}, left {left}, "
                f"stderr tail {rerun.stderr.strip().splitlines()[-3:]}"
            )
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--history-release", default="0.8.5")
    parser.add_argument("--partition", action="append", help=f"a history partition (default {DEFAULT_PARTITIONS})")
    parser.add_argument("--seed", type=int, default=22)
    args = parser.parse_args()
    args.partition = args.partition or DEFAULT_PARTITIONS
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="kernelindex-soak-"))
    try:
        clean_home, soak_home = root / "clean", root / "soak"
        clean_wall, clean = _import(clean_home, args.history_release, args.partition)
        if clean.returncode != 0:
            print(f"the clean import failed ({clean.returncode}):\n{clean.stderr[-3000:]}")
            return 1
        print(f"clean import: {clean_wall:.1f}s; {clean.stdout.splitlines()[0]}", flush=True)
        reference = _export(clean_home, root / "clean-export")
        started = time.perf_counter()
        problems = soak(soak_home, args, clean_wall, rng)
        soaked = _export(soak_home, root / "soak-export")
        identical = soaked == reference
        print(
            f"{args.kills} kills + reruns in {time.perf_counter() - started:.0f}s; runs by status: {_run_counts(soak_home)}"
        )
        print(
            f"export identical to the clean import's: {identical} ({', '.join(f'{n} {h[:12]}' for n, h in soaked.items())})"
        )
        if not identical:
            problems.append(f"exports differ: clean {reference}, soak {soaked}")
        for problem in problems:
            print(f"PROBLEM {problem}")
        return 1 if problems else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
