"""Benchmark: Liger CSV -> records -> validation, at N = 3k, 200k and 1M rows.

The input is the 0.8.5 release's history CSV repeated, each repetition's timestamps shifted by
1000 days (so every run keeps a distinct externalId), cut to N rows. Each measurement runs in a
fresh process so its peak RSS is its own.

    .venv/bin/python bench/transform.py                 # 3k, 200k, 1M; import only
    .venv/bin/python bench/transform.py --write         # also write records.jsonl (sorted) + report.json
    .venv/bin/python bench/transform.py --rows 200000 --workers 1
    .venv/bin/python bench/transform.py --profile reference   # KernelIndex parity: speed rows only

The default catalogue profile is `full` (memory rows become runs too, so there are more runs to build).

The CSV comes from --csv, or the cached/fetched liger-kernel 0.8.5 sdist (needs the package index once).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

SHIFT = timedelta(days=1000)


def history_csv(path: str | None) -> bytes:
    if path:
        return Path(path).read_bytes()
    from kernelindex_pipeline.liger.release import fetch_release, read_history_csv

    data, _ = read_history_csv(fetch_release("0.8.5"))
    return data


def build_input(source: bytes, rows: int, dest: Path) -> None:
    text = source.decode("utf-8")
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader)
    body = list(reader)
    ts_col = header.index("timestamp")
    stamps = {r[ts_col]: datetime.strptime(r[ts_col], "%Y-%m-%d %H:%M:%S") for r in body}
    with open(dest, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(header)
        written, rep = 0, 0
        while written < rows:
            shift = SHIFT * rep
            for r in body:
                if written == rows:
                    break
                r = list(r)
                r[ts_col] = (stamps[r[ts_col]] + shift).strftime("%Y-%m-%d %H:%M:%S")
                writer.writerow(r)
                written += 1
            rep += 1


def measure(csv_path: str, out_dir: str | None, workers: int | None, profile: str) -> dict:
    """Runs in the child process: one import, timed."""
    from kernelindex_pipeline.liger import import_csv

    t0, c0 = time.perf_counter(), time.process_time()
    if out_dir:
        from kernelindex_pipeline.cli import main

        code = main(
            ["transform", csv_path, "--out", out_dir, "--profile", profile]
            + ([] if workers is None else ["--workers", str(workers)])
        )
        assert code == 0
        report = json.loads((Path(out_dir) / "report.json").read_text())
        runs, rows = report["runs"], report["rowsRead"]
    else:
        count = [0]

        def on_run(run):
            count[0] += 1

        kwargs = {"profile": profile} if workers is None else {"workers": workers, "profile": profile}
        result = import_csv(csv_path, on_run=on_run, **kwargs)
        assert result.report.conserved()
        runs, rows = count[0], result.report.rows_read
    elapsed = time.perf_counter() - t0
    cpu = time.process_time() - c0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    worker_cpu = children.ru_utime + children.ru_stime
    worker_peak_kib = children.ru_maxrss  # the largest worker (each has its own address space)
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "rows": rows,
        "runs": runs,
        "seconds": round(elapsed, 2),
        "cpuSeconds": round(cpu, 2),
        "workerCpuSeconds": round(worker_cpu, 2),
        "rowsPerSecond": round(rows / elapsed),
        "peakRssMiB": round(peak_kib / 1024, 1),
        "workerPeakRssMiB": round(worker_peak_kib / 1024, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, action="append", help="N (repeatable); default 3000, 200000, 1000000")
    parser.add_argument("--csv", help="history CSV to repeat (default: the liger-kernel 0.8.5 sdist's)")
    parser.add_argument("--write", action="store_true", help="time the CLI transform (records.jsonl + report.json) too")
    parser.add_argument("--workers", type=int, help="worker processes (default: the library's choice)")
    parser.add_argument(
        "--profile", choices=("full", "reference"), default="full", help="catalogue profile (default full)"
    )
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child[0], args.child[1] or None, args.workers, args.profile)))
        return 0
    source = history_csv(args.csv)
    with tempfile.TemporaryDirectory(prefix="bench-transform-") as tmp:
        for n in args.rows or [3_000, 200_000, 1_000_000]:
            path = Path(tmp) / f"rows-{n}.csv"
            build_input(source, n, path)
            modes = [("import", "")] + ([("transform", str(Path(tmp) / f"out-{n}"))] if args.write else [])
            for label, out in modes:
                cmd = [sys.executable, __file__, "--child", str(path), out, "--profile", args.profile]
                cmd += [] if args.workers is None else ["--workers", str(args.workers)]
                proc = subprocess.run(cmd, capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"N={n} {label}: failed\n{proc.stderr}", file=sys.stderr)
                    return 1
                figures = json.loads(proc.stdout.strip().splitlines()[-1])
                print(
                    f"N={n:>9,} {label:9} {figures['seconds']:7.2f} s  {figures['rowsPerSecond']:>9,} rows/s  "
                    f"peak RSS {figures['peakRssMiB']:7.1f} MiB (+ {figures['workerPeakRssMiB']:.0f} MiB per worker)  ({figures['runs']:,} runs; CPU {figures['cpuSeconds']:.2f} s main + {figures['workerCpuSeconds']:.2f} s workers; load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
            path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
