"""µs per digest_of on a typical BenchmarkRun manifest: the rfc8785 package vs the project's fast path.

    .venv/bin/python bench/canonical.py [--number N] [--repeat R]

Prints the median and the best of R repeats of N calls each, for every kind in the seed bundles
(tests/fixtures/seed-bundles.json), BenchmarkRun first.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import timeit
from pathlib import Path

import rfc8785

from kernelindex_pipeline.records import canonical

SEED_BUNDLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "seed-bundles.json"


def reference_digest_of(manifest: dict) -> str:
    body = {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "spec": manifest["spec"]}
    return "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()


def microseconds(function, manifest, number: int, repeat: int) -> tuple[float, float]:
    times = timeit.repeat(lambda: function(manifest), number=number, repeat=repeat)
    per_call = [t / number * 1e6 for t in times]
    return statistics.median(per_call), min(per_call)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--number", type=int, default=20_000, help="calls per repeat (default 20000)")
    parser.add_argument("--repeat", type=int, default=5, help="repeats (default 5)")
    args = parser.parse_args()

    bundles = json.loads(SEED_BUNDLES.read_text(encoding="utf-8"))
    manifests = {}
    for entry in bundles[0]["manifests"]:
        manifests.setdefault(entry["manifest"]["kind"], entry["manifest"])
    order = ["BenchmarkRun"] + [kind for kind in manifests if kind != "BenchmarkRun"]

    print(f"fast path: {canonical.FAST_PATH}; {args.repeat} x {args.number} calls; µs per digest_of (median / best)")
    print(f"{'kind':<24}{'rfc8785':>18}{'fast path':>18}{'speed-up':>10}")
    for kind in order:
        manifest = manifests[kind]
        assert canonical.digest_of(manifest) == reference_digest_of(manifest)
        reference = microseconds(reference_digest_of, manifest, max(args.number // 10, 1), args.repeat)
        fast = microseconds(canonical.digest_of, manifest, args.number, args.repeat)
        print(
            f"{kind:<24}{reference[0]:>9.2f} / {reference[1]:<6.2f}{fast[0]:>9.2f} / {fast[1]:<6.2f}"
            f"{reference[0] / fast[0]:>9.1f}x"
        )


if __name__ == "__main__":
    main()
