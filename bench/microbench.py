"""What the micro-benchmarks share: one seed manifest of each kind, and µs per call."""

from __future__ import annotations

import argparse
import json
import statistics
import timeit
from pathlib import Path

SEED_BUNDLES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "seed-bundles.json"


def arguments(description: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--number", type=int, default=20_000, help="calls per repeat (default 20000)")
    parser.add_argument("--repeat", type=int, default=5, help="repeats (default 5)")
    return parser.parse_args()


def seed_manifests_by_kind() -> dict[str, dict]:
    """The first seed row's manifest of each kind."""
    manifests: dict[str, dict] = {}
    for entry in json.loads(SEED_BUNDLES.read_text(encoding="utf-8"))[0]["manifests"]:
        manifests.setdefault(entry["manifest"]["kind"], entry["manifest"])
    return manifests


def microseconds(function, manifest, number: int, repeat: int) -> tuple[float, float]:
    """(median, best) µs per call of function(manifest)."""
    times = timeit.repeat(lambda: function(manifest), number=number, repeat=repeat)
    per_call = [t / number * 1e6 for t in times]
    return statistics.median(per_call), min(per_call)
