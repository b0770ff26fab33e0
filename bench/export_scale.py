"""Benchmark: the export's peak memory and time against the catalogue's size (issue 21: <= 2 GiB at 1M runs, streaming).

Builds a synthetic SQLite catalogue of N latency runs (bench/efficiency.py's generator: real WorkloadCases of
curated kernels, one H100 environment, nightly sweeps), published in batches so the builder never holds the
catalogue either, then exports it in a fresh process per measurement and reads that process's peak RSS
(VmHWM, which the child reports: see PEAK):

- `stream`: what streams (catalogue/export.py's JSON Lines + YAML bundle, catalogue/tables.py's Parquet tables);
- `cli`: the whole `kernelindex-pipeline export` (adds efficiency.jsonl, reporting/efficiency.py's sidecar, which
  builds a RecordIndex of the catalogue: not streamed, though it holds a compact row per run, not its manifest);
- `parts`: the export per publication into a fresh folder (catalogue/parts.py, what the `catalogue_export` asset
  writes: a full rebuild), then again into the same folder (a refresh that found nothing new).

    .venv/bin/python bench/export_scale.py --runs 20000 100000          # sizes to compare
    .venv/bin/python bench/export_scale.py --runs 1000000 --only stream  # the target (long on two cores)

Peak memory that stays flat from one size to the next is the streaming; one that grows with N is not.
The catalogue is built from one pass over the generator (linear in N).
"""

from __future__ import annotations

import argparse
import itertools
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from efficiency import catalogue as synthetic_catalogue  # noqa: E402

from kernelindex_pipeline.catalogue.store import CatalogueStore  # noqa: E402

SERIES = 4000
BATCH = 50_000

# Each child reports its own peak (VmHWM, reset at exec): ru_maxrss of a child counts the parent's peak at fork,
# and this parent held the synthetic catalogue while building it.
PEAK = "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')), file=sys.stderr)"
STREAM = f"""
import sys
from kernelindex_pipeline.catalogue.export import export_bundle, export_jsonl
from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.catalogue.tables import export_tables
with CatalogueStore.open(sys.argv[1], read_only=True) as store:
    export_jsonl(store, sys.argv[2]); export_bundle(store, sys.argv[2]); export_tables(store, sys.argv[2])
{PEAK}
"""
PARTS = f"""
import sys
from kernelindex_pipeline.catalogue.parts import export_parts
from kernelindex_pipeline.catalogue.store import CatalogueStore
with CatalogueStore.open(sys.argv[1], read_only=True) as store:
    export_parts(store, sys.argv[2])
{PEAK}
"""
CLI = f"""
import sys
from kernelindex_pipeline.cli import main
code = main(sys.argv[1:])
{PEAK}
sys.exit(code)
"""


def build(url: str, runs: int) -> None:
    """Publish `runs` runs: the generator's sweeps of SERIES series, read once, BATCH records at a time (the
    generator yields the environment and the WorkloadCases before the runs that reference them)."""
    sweeps = max(1, runs // SERIES)
    series = min(SERIES, runs)
    stream = synthetic_catalogue(series, sweeps)
    with CatalogueStore.open(url) as store:
        for number in itertools.count():
            batch = list(itertools.islice(stream, BATCH))
            if not batch:
                break
            store.publish(batch, partition=f"bench-{number}", source=None, report=None)


def measure(command: list[str]) -> tuple[float, float]:
    """(wall seconds, peak RSS in MiB) of one child process, as the child reports it (VmHWM, last stderr line)."""
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode:
        raise SystemExit(f"{command[:3]} exited {done.returncode}: {done.stderr[-2000:]}")
    return time.perf_counter() - start, int(done.stderr.split()[-1]) / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--only", choices=["stream", "cli", "parts"], help="measure one of the three")
    args = parser.parse_args()
    results = []
    for runs in sorted(args.runs):
        with tempfile.TemporaryDirectory(prefix="export-scale-") as tmp:
            url = f"sqlite:///{tmp}/catalogue.sqlite"
            start = time.perf_counter()
            build(url, runs)
            built = time.perf_counter() - start
            row = {"runs": runs, "buildSeconds": round(built, 1)}
            if args.only in (None, "stream"):
                wall, peak = measure([sys.executable, "-c", STREAM, url, f"{tmp}/stream"])
                size = sum(p.stat().st_size for p in Path(f"{tmp}/stream").iterdir())
                row |= {"streamSeconds": round(wall, 1), "streamPeakMiB": round(peak), "streamBytes": size}
            if args.only in (None, "parts"):
                wall, peak = measure([sys.executable, "-c", PARTS, url, f"{tmp}/parts"])
                size = sum(p.stat().st_size for p in Path(f"{tmp}/parts").rglob("*") if p.is_file())
                again, _ = measure([sys.executable, "-c", PARTS, url, f"{tmp}/parts"])
                row |= {"partsSeconds": round(wall, 1), "partsPeakMiB": round(peak), "partsBytes": size}
                row |= {"partsAgainSeconds": round(again, 1)}
            if args.only in (None, "cli"):
                wall, peak = measure([sys.executable, "-c", CLI, "export", "--catalogue", url, "--out", f"{tmp}/cli"])
                row |= {"cliSeconds": round(wall, 1), "cliPeakMiB": round(peak)}
            print(json.dumps(row), flush=True)
            results.append(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
