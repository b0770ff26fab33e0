"""What a BenchmarkRun measured: the memory-run contract, read in one place.

A run measured latency when it has `spec.timing` (its median in `timing.latencyNs.median`, ns); it
measured peak memory when it has no timing and its first measurement is `peak_memory` in bytes (the
value is `measurements[0].value`). Never decided from names (external ids, titles). `liger.runs`
writes runs this way; reports, detection and the KernelIndex export read them through `run_metric`.
"""

from __future__ import annotations

from typing import Any

LATENCY = "latency"
PEAK_MEMORY = "peak_memory"
METRIC_UNITS = {LATENCY: "ns", PEAK_MEMORY: "bytes"}


def run_metric(spec: dict[str, Any]) -> str | None:
    """What a run measured, by the memory-run contract: latency when it has `timing`, peak memory when
    its first measurement is one, else None (never decided from names)."""
    if spec.get("timing") is not None:
        return LATENCY
    measurements = spec.get("measurements") or []
    first = measurements[0] if measurements and isinstance(measurements[0], dict) else {}
    if first.get("metric") == PEAK_MEMORY and first.get("unit") == METRIC_UNITS[PEAK_MEMORY]:
        return PEAK_MEMORY
    return None
