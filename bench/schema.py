"""µs per validate_manifest for each kind (a seed manifest of each), and validation throughput.

    .venv/bin/python bench/schema.py [--number N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import statistics
import timeit
from pathlib import Path

from kernelindex_pipeline.records.schema import KINDS, validate_manifest

SEED_BUNDLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "seed-bundles.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20_000, help="calls per repeat (default 20000)")
    parser.add_argument("--repeat", type=int, default=5, help="repeats (default 5)")
    args = parser.parse_args()

    bundles = json.loads(SEED_BUNDLES.read_text(encoding="utf-8"))
    manifests = {}
    for entry in bundles[0]["manifests"]:
        manifests.setdefault(entry["manifest"]["kind"], entry["manifest"])

    print(f"{args.repeat} x {args.number} calls; µs per validate_manifest (median / best)")
    for kind in KINDS:
        manifest = manifests[kind]
        assert validate_manifest(manifest) == []
        times = timeit.repeat(lambda: validate_manifest(manifest), number=args.number, repeat=args.repeat)
        per_call = [t / args.number * 1e6 for t in times]
        median = statistics.median(per_call)
        print(f"{kind:<24}{median:>8.2f} / {min(per_call):<6.2f} ({1e6 / median:,.0f} per second on one core)")


if __name__ == "__main__":
    main()
