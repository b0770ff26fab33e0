"""Benchmark: what computing efficiency (reporting/efficiency.py) adds to the report (issue 15: at most 10 %).

Two measurements:

1. default: a synthetic catalogue of S series x R sweeps (default 4,000 x 250 = 1M latency runs) on one
   H100, the series spread over curated kernels with real WorkloadCases (norms, softmax, MLPs, losses,
   embedding, rope, and a kernel without a cost model). Timed, each after a garbage collection: the data
   stages every report runs (RecordIndex, latency and peak-memory series, regression detection) against
   what the report's efficiency adds (derive_series_efficiency over the series it built, the ranking
   table, the counts). The report draws charts on top of its data stages, so the share printed is an upper
   bound of efficiency's share of a whole report. Also timed, apart: derive_efficiency, the per-run
   derivation the export's sidecar and the efficiency_table asset use (not part of the report).
2. `--records FILE...`: the whole site (build_site; its charts are drawn in the browser) of real records
   files, with and without efficiency (the site's derive_efficiency replaced by one that finds nothing: no
   figures, no table), in both orders.

    .venv/bin/python bench/efficiency.py                          # 1M runs
    .venv/bin/python bench/efficiency.py --series 400 --sweeps 25   # quick
    .venv/bin/python bench/efficiency.py --records ci/*/records.jsonl
"""

from __future__ import annotations

import argparse
import gc
import math
import resource
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from kernelindex_pipeline.detection.detect import detect_regressions
from kernelindex_pipeline.liger import identity
from kernelindex_pipeline.records.canonical import API_VERSION, digest_of
from kernelindex_pipeline.records.names import kebab
from kernelindex_pipeline.reporting import efficiency as efficiency_module
from kernelindex_pipeline.reporting.efficiency import derive_efficiency, derive_series_efficiency, rank_by_efficiency
from kernelindex_pipeline.reporting.series import PEAK_MEMORY_METRIC, RecordIndex, build_series

GPU = "NVIDIA H100 80GB HBM3"
DIGEST = "sha256:" + "0" * 64


def _t(shape: list[int], dtype: str) -> dict[str, Any]:
    return {"shape": shape, "dtype": dtype}


# kernel -> (axes of case i, tensors of those axes): each series gets a workload of its own
CASES: dict[str, Callable[[int], tuple[dict[str, int], dict[str, Any]]]] = {
    "rms_norm": lambda i: (
        {"rows": 2048, "hidden": 64 * (i + 1)},
        {"x": _t([2048, 64 * (i + 1)], "bf16"), "weight": _t([64 * (i + 1)], "bf16")},
    ),
    "layer_norm": lambda i: (
        {"rows": 4096, "hidden": 64 * (i + 1)},
        {
            "x": _t([4096, 64 * (i + 1)], "fp32"),
            "weight": _t([64 * (i + 1)], "fp32"),
            "bias": _t([64 * (i + 1)], "fp32"),
        },
    ),
    "softmax": lambda i: ({"rows": 2048, "hidden": 64 * (i + 1)}, {"x": _t([2048, 64 * (i + 1)], "fp32")}),
    "swiglu": lambda i: (
        {"batch": 4, "seq": 16 * (i + 1), "hidden": 4096, "intermediate": 11008},
        {
            "x": _t([4, 16 * (i + 1), 4096], "bf16"),
            "w_gate": _t([11008, 4096], "bf16"),
            "w_up": _t([11008, 4096], "bf16"),
            "w_down": _t([4096, 11008], "bf16"),
        },
    ),
    "cross_entropy": lambda i: (
        {"tokens": 8192, "vocab": 256 * (i + 1)},
        {"logits": _t([8192, 256 * (i + 1)], "fp32"), "target": _t([8192], "int64")},
    ),
    "fused_linear_cross_entropy": lambda i: (
        {"tokens": 16 * (i + 1), "hidden": 4096, "vocab": 128256},
        {
            "x": _t([16 * (i + 1), 4096], "bf16"),
            "weight": _t([128256, 4096], "bf16"),
            "target": _t([16 * (i + 1)], "int64"),
        },
    ),
    "embedding": lambda i: (
        {"batch": 8, "seq": 2048, "hidden": 4096, "vocab": 64 * (i + 1)},
        {"input_ids": _t([8, 2048], "int64"), "weight": _t([64 * (i + 1), 4096], "fp32")},
    ),
    "kl_div": lambda i: (
        {"tokens": 4096, "vocab": 256 * (i + 1)},
        {"log_probs": _t([4096, 256 * (i + 1)], "fp32"), "target_probs": _t([4096, 256 * (i + 1)], "fp32")},
    ),
    "dyt": lambda i: ({"rows": 4096, "hidden": 64 * (i + 1)}, {"x": _t([4096, 64 * (i + 1)], "bf16")}),  # no cost model
}
MODES = ("forward", "backward", "full")
PROVIDERS = ("liger", "huggingface")


def _manifest(kind: str, name: str, spec: dict[str, Any], labels: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec}


def catalogue(series: int, sweeps: int, seed: int = 7) -> Iterator[dict[str, Any]]:
    """WorkloadCases, one environment and `series` x `sweeps` latency runs (nightly sweeps, noise, releases),
    made as they are read (a caller that needs a list takes `list(...)`): a consumer that streams, as the
    catalogue's `store.manifests()` does, holds no run it has read."""
    rng = np.random.default_rng(seed)
    environment = _manifest(
        "ExecutionEnvironment",
        "liger-bench-h100",
        {"hardware": {"vendor": "nvidia", "product": "NVIDIA H100", "architecture": "sm_90"}, "software": {}},
    )
    environment_digest = digest_of(environment)
    yield environment
    kernels = list(CASES)
    templates = []  # (externalId head, workload digest) per series
    per_case = max(1, series // (len(kernels) * len(MODES) * len(PROVIDERS)))
    for i in range(series):
        kernel = kernels[i % len(kernels)]
        mode = MODES[(i // len(kernels)) % len(MODES)]
        provider = PROVIDERS[(i // (len(kernels) * len(MODES))) % len(PROVIDERS)]
        axes, tensors = CASES[kernel](i // (len(kernels) * len(MODES) * len(PROVIDERS)) % per_case)
        key = identity.case_key(axes, next(iter(tensors.values()))["dtype"])
        case = _manifest(
            "WorkloadCase",
            f"liger-{kernel}-{key}".replace("_", "-"),
            {
                "operationSpecDigest": DIGEST,
                "axes": axes,
                "tensors": tensors,
                "correctness": {"comparator": "not_asserted"},
            },
        )
        yield case
        templates.append(
            (identity.external_id_prefix(kernel, mode, provider, identity.gpu_slug(GPU), key), digest_of(case))
        )
    level = np.exp(rng.uniform(math.log(2e4), math.log(2e7), size=series))
    values = level[:, None] * np.exp(rng.normal(0.0, 0.03, size=(series, sweeps)))
    start = datetime(2025, 1, 1, tzinfo=UTC)
    for j in range(sweeps):
        version = f"0.{9 + j // 30}.0"
        for i in range(series):
            stamp = (start + timedelta(days=j, seconds=i % 3000)).strftime("%Y-%m-%dT%H:%M:%S.000Z")
            head, workload = templates[i]
            yield _manifest(
                "BenchmarkRun",
                f"run-{i}-{j}",
                {
                    "implementationDigest": DIGEST,
                    "workloadDigest": workload,
                    "protocolDigest": DIGEST,
                    "environmentDigest": environment_digest,
                    "status": "passed",
                    "observedAt": stamp,
                    "timing": {"primaryStatistic": "median", "latencyNs": {"median": int(values[i, j])}},
                    "sourceNative": {"source": "liger-kernel-bench", "externalId": head + kebab(stamp)},
                },
                {"liger_version": version},
            )


def _timed(label: str, fn: Callable[[], Any], times: dict[str, float]) -> Any:
    """Run `fn`, print its wall and CPU time, keep the CPU time (on a shared machine the wall time also
    counts other processes' turns)."""
    gc.collect()
    start, cpu = time.perf_counter(), time.process_time()
    result = fn()
    times[label] = time.process_time() - cpu
    print(f"  {label:44s} {time.perf_counter() - start:8.2f} s wall {times[label]:8.2f} s CPU", flush=True)
    return result


def bench_runs(series: int, sweeps: int) -> None:
    print(f"building {series} series x {sweeps} sweeps ...", flush=True)
    manifests = list(catalogue(series, sweeps))
    runs = sum(1 for m in manifests if m["kind"] == "BenchmarkRun")
    print(f"{runs:,} runs, {len(manifests) - runs:,} other records; timing:")
    times: dict[str, float] = {}
    index = _timed("RecordIndex (digests)", lambda: RecordIndex(manifests), times)
    latency = _timed("build_series latency", lambda: build_series(index), times)
    _timed("build_series peak memory", lambda: build_series(index, PEAK_MEMORY_METRIC), times)
    _timed("detect_regressions", lambda: detect_regressions(manifests), times)
    report = _timed("+ derive_series_efficiency", lambda: derive_series_efficiency(index, latency), times)
    rows = _timed("+ rank_by_efficiency", lambda: rank_by_efficiency(latency, report), times)
    counts = _timed("+ status_counts", report.status_counts, times)
    base = sum(v for k, v in times.items() if not k.startswith("+"))
    added = sum(v for k, v in times.items() if k.startswith("+"))
    print(
        f"report data stages {base:.1f} s CPU; the report's efficiency adds {added:.2f} s = {added / base:.1%} "
        f"(an upper bound of its share of a whole report, which also draws charts)"
    )
    print(f"runs by status: {counts}; ranking rows {len(rows)}")
    every = _timed("per-run derive_efficiency (sidecar, asset)", lambda: derive_efficiency(index), {})
    flags = _timed("its flag counts", every.counts, {})
    print(f"per run: {flags}; peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB")


def bench_records(paths: list[Path]) -> None:
    from kernelindex_pipeline.records.io import load_manifests
    from kernelindex_pipeline.reporting import site as site_module

    manifests = {digest_of(m): m for path in paths for _, m in load_manifests(path)}
    runs = sum(1 for m in manifests.values() if m["kind"] == "BenchmarkRun")
    print(f"{len(paths)} files, {runs:,} runs")
    real = site_module.derive_efficiency

    def nothing(index, **kwargs):  # the same site without efficiency: no figure, no table row
        return efficiency_module.EfficiencyReport({}, efficiency_module.DEFAULT_LOW_THRESHOLD)

    times: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as out:
        for order, (label, derive) in enumerate(
            (("without", nothing), ("with", real), ("with", real), ("without", nothing))
        ):
            site_module.derive_efficiency = derive
            folder = Path(out) / f"{order}-{label}"
            _timed(
                f"site {label} efficiency ({order + 1})",
                lambda folder=folder: site_module.build_site(list(manifests.values()), folder),
                times,
            )
    site_module.derive_efficiency = real
    without = sum(v for k, v in times.items() if " without " in k)
    with_ = sum(v for k, v in times.items() if " with " in k)
    print(
        f"efficiency adds {with_ - without:.1f} s CPU = {(with_ - without) / without:.1%} to the whole site "
        "(two builds each way, alternating)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--series", type=int, default=4000)
    parser.add_argument("--sweeps", type=int, default=250)
    parser.add_argument("--records", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.records:
        bench_records(args.records)
    else:
        bench_runs(args.series, args.sweeps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
