"""µs per validate_manifest for each kind (a seed manifest of each), and validation throughput.

.venv/bin/python bench/schema.py [--number N] [--repeat R]
"""

from __future__ import annotations

from microbench import arguments, microseconds, seed_manifests_by_kind

from kernelindex_pipeline.records.schema import KINDS, validate_manifest


def main() -> None:
    args = arguments(__doc__.splitlines()[0])
    manifests = seed_manifests_by_kind()

    print(f"{args.repeat} x {args.number} calls; µs per validate_manifest (median / best)")
    for kind in KINDS:
        manifest = manifests[kind]
        assert validate_manifest(manifest) == []
        median, best = microseconds(validate_manifest, manifest, args.number, args.repeat)
        print(f"{kind:<24}{median:>8.2f} / {best:<6.2f} ({1e6 / median:,.0f} per second on one core)")


if __name__ == "__main__":
    main()
