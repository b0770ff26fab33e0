"""How far two runs of the same code disagree on Liger's real CI data, and what intervals would be needed.

    .venv/bin/python bench/same_code_noise.py ../shared/data/liger-ci/7644a0f.csv ../shared/data/liger-ci/7644a0f-v0.7.0.csv

The two files are two runs of Liger's benchmark workflow on one commit (7644a0f), 96 minutes apart. Each
speed row present in both (same kernel, provider, mode, x, config, GPU) is one pair: prints the
distribution of |a - b| / min(a, b) of their medians, and how many pairs a tie rule like KernelIndex's
(policy/ranking.ts: a strict order only when the intervals do not overlap) would order strictly if each
run's interval were its own p20-p80 band (already far wider than a bootstrap of one process's samples).
"""

from __future__ import annotations

import csv
import sys

import numpy as np

KEY = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "x_name",
    "x_value",
    "extra_benchmark_config_str",
    "gpu_name",
)


def speed_rows(path: str) -> dict[tuple, tuple[float, float, float]]:
    rows = {}
    with open(path, newline="") as handle:
        for row in csv.DictReader(handle):
            if row.get("metric_name") != "speed":
                continue
            try:
                values = tuple(float(row[c]) for c in ("y_value_50", "y_value_20", "y_value_80"))
            except (TypeError, ValueError):
                continue
            if all(np.isfinite(values)) and values[0] > 0:
                rows.setdefault(tuple(row[c] for c in KEY), values)
    return rows


def main(first: str, second: str) -> None:
    a, b = speed_rows(first), speed_rows(second)
    keys = sorted(set(a) & set(b))
    relative = np.array([abs(a[k][0] - b[k][0]) / min(a[k][0], b[k][0]) for k in keys])
    bands_apart = sum(1 for k in keys if a[k][2] < b[k][1] or b[k][2] < a[k][1])
    print(f"pairs: {len(keys)}")
    for q in (50, 90, 99):
        print(f"  |a - b| / min: p{q} {100 * np.percentile(relative, q):.1f} %")
    print(
        f"  strictly ordered with each run's p20-p80 band as its interval: {bands_apart} ({100 * bands_apart / len(keys):.1f} %)"
    )


if __name__ == "__main__":
    main(*sys.argv[1:3])
