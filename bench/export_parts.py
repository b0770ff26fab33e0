"""Benchmark: the export per publication (catalogue/parts.py, what the `catalogue_export` asset writes) over nights.

Builds bench/night.py's synthetic SQLite catalogue (`--series` x `--sweeps` runs, published 50,000 records at a
time), exports it into a fresh folder (the first, full export), then plays bench/night.py's three nights, each
followed by the export into the same folder: one sweep partition of `--night-runs` runs on the catalogue's GPU, one
on a new GPU, one that adds nothing; finally a rebuild into a fresh folder, compared file by file (the manifest's
generatedAt aside). Each export runs in this process (wall and CPU seconds, what `recomputed` says); the stage of
bench/night.py adds a process start and the efficiency sidecar.

    .venv/bin/python bench/export_parts.py --series 4000 --sweeps 250      # 1M runs (a few minutes to build)
    .venv/bin/python bench/export_parts.py --series 1000 --sweeps 20       # 20k runs, seconds

Prints one JSON line per export; exits 1 if the nightly folder differs from the rebuild.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import night  # noqa: E402

from kernelindex_pipeline.catalogue.parts import export_parts  # noqa: E402
from kernelindex_pipeline.catalogue.store import CatalogueStore  # noqa: E402


def timed(url: str, out: Path, label: str) -> None:
    with CatalogueStore.open(url, read_only=True) as store:
        wall, cpu = time.perf_counter(), time.process_time()
        result = export_parts(store, out)
        row = {"night": label, "wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
    print(
        json.dumps(
            {
                **{k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()},
                "recomputed": result.recomputed(),
            }
        ),
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=1000)
    parser.add_argument("--sweeps", type=int, default=20)
    parser.add_argument("--night-runs", type=int, default=300)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="export-parts-"))
    try:
        url = f"sqlite:///{tmp}/catalogue.sqlite"
        start = time.perf_counter()
        night.build(url, args.series, args.sweeps)
        print(json.dumps({"built": args.series * args.sweeps, "seconds": round(time.perf_counter() - start, 1)}))
        timed(url, tmp / "nightly", "full")
        for number, kind in enumerate(("sweep", "new-gpu", "nothing"), start=1):
            if kind != "nothing":
                records = night.night_records(url, args.night_runs, number, new_gpu=kind == "new-gpu")
                with CatalogueStore.open(url) as store:
                    store.publish(records, partition=f"night-{number}-{kind}", source=None, report=None)
            timed(url, tmp / "nightly", kind)
        timed(url, tmp / "rebuild", "rebuild")
        found = night.differences(tmp / "nightly", tmp / "rebuild")
        print(json.dumps({"sameAsRebuild": not found, "differs": found[:10]}))
        return 1 if found else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
