"""Write tests/fixtures/liger-ci-slice.csv: one row of each row format in Liger's CI CSVs.

    .venv/bin/python scripts/liger_ci_slice.py ../shared/data/liger-ci/*.csv ../shared/data/*.csv > tests/fixtures/liger-ci-slice.csv

A row format is (kernel, provider, mode, metric, x_name, config keys, GPU); the first row of each, in
the order the files are given, is kept unmodified.
"""

from __future__ import annotations

import csv
import json
import sys


def main(paths: list[str]) -> int:
    seen: set[tuple] = set()
    header: list[str] | None = None
    writer = csv.writer(sys.stdout, lineterminator="\n")
    for path in paths:
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.reader(f)
            columns = next(reader)
            if header is None:
                header = columns
                writer.writerow(header)
            elif columns != header:
                print(f"{path}: a different header, left out", file=sys.stderr)
                continue
            for row in reader:
                cells = dict(zip(columns, row, strict=False))
                try:
                    config = json.loads(cells["extra_benchmark_config_str"])
                except ValueError:
                    config = None
                keys = tuple(sorted(config)) if isinstance(config, dict) else None
                key = (
                    cells["kernel_name"],
                    cells["kernel_provider"],
                    cells["kernel_operation_mode"],
                    cells["metric_name"],
                    cells["x_name"],
                    keys,
                    cells["gpu_name"],
                )
                if key not in seen:
                    seen.add(key)
                    writer.writerow(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
