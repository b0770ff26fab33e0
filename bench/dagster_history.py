"""Benchmark: import every history partition of a Liger release through Dagster, as an operator does.

Two measurements in a fresh DAGSTER_HOME and catalogue, each one `kernelindex-pipeline import-history`
process (real runs through `dagster job launch` and the daemon, all partitions in one run):
  import   the whole history into an empty instance and catalogue
  rerun    the same again (idempotent: nothing new is inserted)
Prints the wall time of each process and the summary's first lines (the runs' own time is in them).
Each command waits for the catalogue refresh (`--wait`); with --no-wait it returns when its own run ends,
as the command does by default.
Usage:
  .venv/bin/python bench/dagster_history.py [--history-release 0.8.5] [--no-wait]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _import(home: Path, release: str, wait: bool) -> tuple[float, list[str]]:
    env = {**os.environ, "DAGSTER_HOME": str(home), "KERNELINDEX_HISTORY_RELEASE": release}
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "kernelindex_pipeline.cli", "import-history", *(["--wait"] if wait else [])],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        sys.exit(f"import-history failed ({completed.returncode}):\n{completed.stderr[-3000:]}")
    return wall, completed.stdout.splitlines()[:2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history-release", default="0.8.5")
    parser.add_argument("--no-wait", dest="wait", action="store_false", help="do not wait for the catalogue refresh")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kernelindex-bench-"))
    try:
        home = root / "home"
        for label in ("import", "rerun"):
            wall, summary = _import(home, args.history_release, args.wait)
            refresh = "catalogue refresh included" if args.wait else "the catalogue refresh left to the automation"
            print(f"{label}: wall {wall:.1f}s (process start to exit, {refresh})")
            for line in summary:
                print(f"  {line}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
