"""Raw timing samples of measured runs: their statistics, and the step that adds them to a run.

A sweep keeps every timed sample of each `triton.testing.do_bench` call (sweep/samples.py collects
them, one content-addressed artifact per call). A measured speed row then becomes a BenchmarkRun with

    timing.samples                  how many samples the call timed
    timing.latencyNs.minimum/maximum/p05/p95/mad, confidence95
    timing.rawSamples, evidence.rawSamples   the artifact (uri + sha256 digest)

The median stays the CSV's (it is the call's own return value, so the samples' median by construction).
Quantiles interpolate linearly between order statistics, as triton's own `_quantile` does. `mad` is the
unscaled median absolute deviation from the median. `confidence95` is a percentile bootstrap of the
median: BOOTSTRAP_RESAMPLES resamples drawn with numpy's PCG64 from the fixed BOOTSTRAP_SEED (through
the order statistics, see bootstrap_medians), so the same samples always give the same interval. All values are whole nanoseconds (Math.round(ms * 1e6), as
every other latency of the import).

Memory rows have no do_bench call and keep their single peak value.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from kernelindex_pipeline.records.jsnumber import ms_to_ns
from kernelindex_pipeline.records.units import MAX_SAFE_INTEGER

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 12


# the cells of a CSV row that `row_key` takes, in its order
ROW_KEY_CELLS = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "x_name", "x_value",
                 "extra_benchmark_config_str", "gpu_name")  # fmt: skip


def row_key(
    kernel: str, provider: str, mode: str, metric: str, x_name: str, x_value: str, config: str, gpu: str
) -> str:
    """The text key of a CSV row (the cells `update_benchmark_data_csv` uses as a row's identity)."""
    return json.dumps([kernel, provider, mode, metric, x_name, x_value, config, gpu], separators=(",", ":"))


def row_key_of(row: dict[str, str]) -> str:
    """`row_key` of a CSV row as csv.DictReader gives it (a missing cell counts as empty)."""
    return row_key(*(row.get(cell, "") for cell in ROW_KEY_CELLS))


def _ns(ms: float) -> int:
    return int(ms_to_ns(float(ms)))


def bootstrap_medians(
    samples_ms: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> np.ndarray:
    """The medians of `resamples` bootstrap resamples (n draws with replacement) of the samples.

    Drawn through the order statistics instead of n indices per resample: the indices of one resample
    are floor(n * U_i) for n uniform U_i, so its k-th smallest index is floor(n * U_(k)), and U_(k) follows
    Beta(k, n - k + 1); given U_(k) = u, the next one is u + (1 - u) * Beta(1, n - k). The medians have
    exactly the distribution of resampling, at O(resamples) instead of O(resamples * n) (a sweep's call
    can hold 10^4-10^5 samples).
    """
    values = np.sort(np.asarray(samples_ms, dtype=np.float64))
    n = values.size
    rng = np.random.default_rng(seed)
    k = (n - 1) // 2 + 1  # 1-based rank of the lower middle order statistic
    lower = rng.beta(k, n - k + 1, size=resamples)
    upper = lower if n % 2 else lower + (1.0 - lower) * rng.beta(1, n - k, size=resamples)
    low_index = np.minimum((n * lower).astype(np.int64), n - 1)
    high_index = np.minimum((n * upper).astype(np.int64), n - 1)
    return (values[low_index] + values[high_index]) / 2.0


def bootstrap_median_interval(
    samples_ms: Sequence[float], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """(2.5 %, 97.5 %) percentiles of the bootstrap medians, in ms."""
    low, high = np.quantile(bootstrap_medians(samples_ms, resamples, seed), [0.025, 0.975])
    return float(low), float(high)


def latency_statistics(samples_ms: Sequence[float]) -> dict[str, Any]:
    """{"samples": n, "latencyNs": {minimum, maximum, p05, p95, mad, confidence95}} of one call's samples."""
    values = np.asarray(samples_ms, dtype=np.float64)
    if values.size == 0 or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError("latency samples must be a non-empty list of finite, non-negative milliseconds")
    if values.max() > MAX_SAFE_INTEGER / 1e6:  # a record's ns must be an exact JSON integer (2^53 - 1)
        raise ValueError(f"a latency sample of {float(values.max())!r} ms is beyond {MAX_SAFE_INTEGER} ns")
    median = float(np.median(values))
    p05, p95 = (float(v) for v in np.quantile(values, [0.05, 0.95]))
    low, high = bootstrap_median_interval(values)
    return {
        "samples": int(values.size),
        "latencyNs": {
            "minimum": _ns(values.min()),
            "maximum": _ns(values.max()),
            "p05": _ns(p05),
            "p95": _ns(p95),
            "mad": _ns(float(np.median(np.abs(values - median)))),
            "confidence95": [_ns(low), _ns(high)],
        },
    }


# How a run of several rounds states its interval (the sweep protocol's notes say the same).
ROUNDS_INTERVAL_METHOD = (
    "confidence95: 95 % percentile interval of a two-level bootstrap of the median of round medians "
    "(resampling unit: the round, then the samples within each drawn round; 2000 resamples, fixed seed); "
    "a single round publishes none"
)


def rounds_median_interval(
    rounds_ms: Sequence[Sequence[float]], resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> tuple[float, float]:
    """(2.5 %, 97.5 %) of the median of round medians under a two-level bootstrap: draw the rounds with
    replacement, then each drawn round's median from its own samples' bootstrap. So the interval covers
    how far the rounds (separate processes, minutes apart) disagree, which is far more than one
    process's samples scatter (7-22 % against 0.07-0.15 % on Liger's CI data)."""
    if len(rounds_ms) < 2:
        raise ValueError("an interval over rounds needs at least two rounds")
    per_round = np.stack(
        [bootstrap_medians(samples, resamples, seed + index) for index, samples in enumerate(rounds_ms)]
    )
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, len(rounds_ms), size=(resamples, len(rounds_ms)))
    medians = np.median(per_round[drawn, np.arange(resamples)[:, None]], axis=1)
    low, high = np.quantile(medians, [0.025, 0.975])
    return float(low), float(high)


def rounds_statistics(rounds_ms: Sequence[Sequence[float]]) -> dict[str, Any]:
    """latency_statistics over the pooled samples of every round, with `confidence95` from the rounds
    (rounds_median_interval) when there are two or more and none for a single round."""
    pooled = [value for samples in rounds_ms for value in samples]
    statistics = latency_statistics(pooled)
    latency = statistics["latencyNs"]
    if len(rounds_ms) >= 2:
        low, high = rounds_median_interval(rounds_ms)
        latency["confidence95"] = [_ns(low), _ns(high)]
    else:
        latency.pop("confidence95")
    return statistics


def with_raw_samples(spec: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """The enrichment step: a BenchmarkRun spec plus one row's samples entry
    ({"artifact": {"uri", "digest"}, "samples": n, "latencyNs": {...}}, see latency_statistics).

    Returns a new spec; a spec without `timing` (a memory run) is returned unchanged.
    """
    if "timing" not in spec:
        return spec
    artifact = {"uri": entry["artifact"]["uri"], "digest": entry["artifact"]["digest"]}
    timing = dict(spec["timing"])
    timing["samples"] = entry["samples"]
    timing["latencyNs"] = {**timing["latencyNs"], **entry["latencyNs"]}
    timing["rawSamples"] = artifact
    evidence = {**spec.get("evidence", {}), "rawSamples": dict(artifact)}
    return {**spec, "timing": timing, "evidence": evidence}
