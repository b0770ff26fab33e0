"""Small synthetic Liger CSV rows for the liger tests (no upstream data is copied into the project)."""

from __future__ import annotations

import csv
import io
import json

from kernelindex_pipeline.liger.csv import UPSTREAM_COLUMNS

BASE_ROW = {
    "kernel_name": "rms_norm",
    "kernel_provider": "liger",
    "kernel_operation_mode": "forward",
    "metric_name": "speed",
    "metric_unit": "ms",
    "x_name": "H",
    "x_label": "hidden size",
    "x_value": "1024",
    "y_value_50": "0.125",
    "y_value_20": "0.12",
    "y_value_80": "0.13",
    "extra_benchmark_config_str": json.dumps({"M": 2048, "dtype": "torch.bfloat16", "eps": 1e-6}),
    "gpu_name": "NVIDIA H100 80GB HBM3",
    "timestamp": "2025-01-02 03:04:05",
    "liger_version": "0.5.0",
}


def row(**changes: str) -> dict[str, str]:
    out = dict(BASE_ROW)
    out.update(changes)
    return out


def csv_bytes(rows: list[dict[str, str]], *, columns=UPSTREAM_COLUMNS, newline: str = "\n", bom: bool = False) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator=newline)
    writer.writerow(columns)
    for r in rows:
        writer.writerow([r.get(c, "") for c in columns])
    return (("\ufeff" if bom else "") + buf.getvalue()).encode("utf-8")
