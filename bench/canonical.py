"""µs per digest_of on a typical BenchmarkRun manifest: the rfc8785 package vs the project's fast path.

    .venv/bin/python bench/canonical.py [--number N] [--repeat R]

Prints the median and the best of R repeats of N calls each, for every kind in the seed bundles
(tests/fixtures/seed-bundles.json), BenchmarkRun first.
"""

from __future__ import annotations

import hashlib

import rfc8785
from microbench import arguments, microseconds, seed_manifests_by_kind

from kernelindex_pipeline.records import canonical


def reference_digest_of(manifest: dict) -> str:
    body = {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "spec": manifest["spec"]}
    return "sha256:" + hashlib.sha256(rfc8785.dumps(body)).hexdigest()


def main() -> None:
    args = arguments(__doc__.splitlines()[0])
    manifests = seed_manifests_by_kind()
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
