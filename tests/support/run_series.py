"""A BenchmarkRun's series read straight from its externalId and digests: the tests' own reading,
independent of reporting/series.py, so that counting series with it checks what the site counts."""

from __future__ import annotations

from typing import Any, NamedTuple


class RunSeries(NamedTuple):
    kernel: str
    mode: str
    metric: str
    provider: str
    gpu: str
    case_key: str
    implementation: str
    workload: str
    protocol: str
    environment: str


def run_series(manifest: dict[str, Any]) -> RunSeries | None:
    """The series of a BenchmarkRun manifest; None for other kinds."""
    if manifest["kind"] != "BenchmarkRun":
        return None
    spec = manifest["spec"]
    parts = spec["sourceNative"]["externalId"].split("/")
    metric = parts.pop(2) if len(parts) == 7 else "speed"  # memory runs: a `memory` segment after the mode
    kernel, mode, provider, gpu, case_key, _timestamp = parts
    return RunSeries(
        kernel,
        mode,
        metric,
        provider,
        gpu,
        case_key,
        spec["implementationDigest"],
        spec["workloadDigest"],
        spec["protocolDigest"],
        spec["environmentDigest"],
    )
