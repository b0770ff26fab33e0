"""Benchmark: materialize every history partition of the newest Liger release through Dagster.

Three measurements, each in a fresh DAGSTER_HOME and catalogue:
  backfill   every partition, one run each, all in one Python process (what `import-history` does)
  rerun      the same again on the same instance and catalogue (idempotent: nothing new is inserted)
  per-run    one `dagster asset materialize` process per partition (what a daemon-launched backfill costs)
Prints wall time and peak RSS of each. Usage:
  .venv/bin/python bench/dagster_history.py [--history-release 0.8.5] [--skip-per-run]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAIN = "benchmark_csv,benchmark_rows,kernelindex_records,catalogue_publication"


def _child(mode: str, home: str, release: str) -> dict:
    """Run `mode` in a fresh interpreter so its peak RSS is its own."""
    code = """
import json, resource, time
from dagster import DagsterInstance
from kernelindex_pipeline.defs.history_import import import_history
started = time.perf_counter()
import sys
summary = import_history(DagsterInstance.get(), log=lambda line: print(line, file=sys.stderr))
print(json.dumps({"seconds": time.perf_counter() - started, "partitions": summary.partitions,
    "failed": summary.failed_partitions, "inserted": summary.inserted, "already_present": summary.already_present,
    "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""
    env = {**os.environ, "DAGSTER_HOME": home, "KERNELINDEX_HISTORY_RELEASE": release}
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", code], env=env, capture_output=True, text=True, check=True, cwd=ROOT)
    failures = [line for line in out.stderr.splitlines() if "FAILED" in line]
    if failures:
        print("\n".join(failures[:5]), file=sys.stderr)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["wall_s"] = time.perf_counter() - started  # includes interpreter start and imports
    return result


def _per_run(home: str, release: str) -> dict:
    env = {**os.environ, "DAGSTER_HOME": home, "KERNELINDEX_HISTORY_RELEASE": release}
    setup = f"""
from dagster import DagsterInstance
from kernelindex_pipeline.defs.history_import import register_history_partitions
from kernelindex_pipeline.liger.release import fetch_release, read_history_csv
data, _ = read_history_csv(fetch_release("{release}"))
slices = register_history_partitions(DagsterInstance.get(), data)
print("\\n".join(f"{{gpu}}|{{version}}" for gpu, version in slices.partitions))
"""
    keys = subprocess.run([sys.executable, "-W", "ignore", "-c", setup], env=env, capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()
    started = time.perf_counter()
    peak = 0.0
    for key in keys:
        subprocess.run(
            [sys.executable, "-W", "ignore", "-m", "dagster", "asset", "materialize", "-m", "kernelindex_pipeline.definitions",
             "--select", CHAIN, "--partition", key],
            env=env, capture_output=True, text=True, check=True, cwd=ROOT,
        )
        peak = max(peak, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
    return {"wall_s": time.perf_counter() - started, "partitions": len(keys), "peak_rss_mib": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history-release", default="0.8.5")
    parser.add_argument("--skip-per-run", action="store_true")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="kernelindex-bench-"))
    try:
        home = root / "home"
        home.mkdir()
        shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
        first = _child("backfill", str(home), args.history_release)
        print(f"backfill in one process: {first['partitions']} partitions, wall {first['wall_s']:.1f}s "
              f"(runs {first['seconds']:.1f}s), peak RSS {first['peak_rss_mib']:.0f} MiB, {first['inserted']} new, failed {first['failed']}")
        again = _child("rerun", str(home), args.history_release)
        print(f"idempotent re-run:       {again['partitions']} partitions, wall {again['wall_s']:.1f}s "
              f"(runs {again['seconds']:.1f}s), peak RSS {again['peak_rss_mib']:.0f} MiB, {again['inserted']} new, "
              f"{again['already_present']} already present")
        if not args.skip_per_run:
            home2 = root / "home-per-run"
            home2.mkdir()
            shutil.copy(ROOT / "dagster.yaml", home2 / "dagster.yaml")
            per = _per_run(str(home2), args.history_release)
            print(f"one process per partition: {per['partitions']} runs, wall {per['wall_s']:.1f}s, peak RSS {per['peak_rss_mib']:.0f} MiB")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
