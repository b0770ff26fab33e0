"""The noise figures of issue 17 on real records: how many changes, and how many of them sit where noise
makes them (a same-code pair, the edges of a slow-host block, series whose raw values are flat).

    for f in ../shared/data/liger-ci/*.csv; do
        .venv/bin/kernelindex-pipeline transform "$f" --out "ci/$(basename "$f" .csv)"
    done
    .venv/bin/python bench/regressions_noise.py ci/*/records.jsonl \\
        --same-code 7644a0f-v0.7.0 7644a0f --slow-block 7644a0f-v0.7.0 7644a0f

`--same-code A B`: two source runs of the same commit (changes between them are noise); `--slow-block`:
consecutive source runs known to be on a slow host (a change into or out of the block is noise);
raw-flat: the series' raw values stay within 2 % over every run, yet a change is reported.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter

from kernelindex_pipeline.detection.detect import detect_in_record_files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+")
    parser.add_argument("--same-code", nargs=2, metavar=("BEFORE", "AFTER"))
    parser.add_argument("--slow-block", nargs="+", default=[], metavar="SOURCE")
    parser.add_argument("--flat", type=float, default=0.02, help="raw max/min - 1 below which a series is flat")
    args = parser.parse_args()
    started = time.perf_counter()
    report = detect_in_record_files(args.records)
    elapsed = time.perf_counter() - started
    print(f"{report.summary()} ({elapsed:.1f} s)")
    judged = len(report.trends)
    print(
        f"changes {len(report.changes)} (by cause {dict(Counter(c.cause for c in report.changes))}); "
        f"pending {len(getattr(report, 'pending', []))}; host effects {len(report.host_effects)}"
    )
    if args.same_code:
        pair = [
            c
            for c in report.changes
            if (c.trend.sources[c.split.index - 1], c.trend.sources[c.split.index]) == tuple(args.same_code)
        ]
        print(
            f"same-code pair {args.same_code[0]} -> {args.same_code[1]}: {len(pair)} changes in {judged} series "
            f"({100 * len(pair) / max(judged, 1):.2f} %)"
        )
    if args.slow_block:
        block = set(args.slow_block)
        edges = [
            c
            for c in report.changes
            if (c.trend.sources[c.split.index] in block) != (c.trend.sources[c.split.index - 1] in block)
        ]
        print(f"changes at the edges of the slow block {sorted(block)}: {len(edges)}")
    flat = [c for c in report.changes if c.trend.values.max() / c.trend.values.min() - 1 <= args.flat]
    print(f"changes on raw-flat series (max/min within {args.flat:.0%}): {len(flat)}")
    for c in flat[:5]:
        print(
            f"  {c.key.kernel} {c.key.mode} {c.key.provider} {c.trend.case_key} {c.key.metric} x{c.magnitude:.3g} at {c.trend.sources[c.split.index]}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
