"""The sweep's sentinel: fixed reference operations timed at the start and at the end of every sweep.

A bf16 matrix product of fixed size and a fixed-size device memory copy, timed with the scripts' own
harness (`triton.testing.do_bench` with Liger's quantiles, in the scripts' interpreter, with the sample
hook). They tell how fast this host was during the sweep ("this H200 ran 12 % slow tonight") and let the
regression detector tell a slow host from a slow kernel. liger/sentinel.py makes them BenchmarkRuns of
their own OperationSpecs; its PLAN, the one place the operations, their sizes and the do_bench
arguments are written, is what this module runs (the records describe what was run, so the plan lives
with them, and the sweep imports it: liger/ imports nothing from sweep/).
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

from kernelindex_pipeline.liger.sentinel import PLAN

from .samples import Call

PROGRAM = Path(__file__).resolve().parent / "sentinel_program.py"
POSITIONS = ("start", "end")
TIMEOUT_S = 300.0


def result_path(logs_dir: Path, position: str) -> Path:
    return logs_dir / f"sentinel-{position}.json"


def collect_sentinel(
    position: str, calls: list[Call], results: dict[str, Any], gpu_name: str | None, error: str | None
) -> list[dict[str, Any]]:
    """One measurement per planned operation: its samples' artifact and statistics when it ran (the
    calls of its spool, as samples.collect_calls wrote them out), else status `failed` with the
    program's error line or why its samples are unusable (never silently absent)."""
    by_operation = {}
    for call in calls:
        name = (call.case or {}).get("sentinel")
        if name and call.sample_count:
            by_operation[name] = call
    measurements = []
    for operation in PLAN["operations"]:
        name = operation["name"]
        call, result = by_operation.get(name), results.get(name)
        entry: dict[str, Any] = {"position": position, "operation": name, "gpu_name": gpu_name}
        if call is None or result is None:
            entry.update(status="failed", error=error or "the sentinel program measured nothing")
        elif call.statistics is None or call.artifact is None:
            entry.update(
                status="failed",
                error=f"its samples are unusable: {call.invalid or 'their artifact could not be written'}",
            )
        else:
            entry.update(
                status="ok",
                returned=result["returned"],
                observed_at=result["observed_at"],
                artifact=call.artifact,
                **call.statistics,
            )
        measurements.append(entry)
    return measurements


def summary_lines(measurements: list[dict[str, Any]]) -> list[str]:
    """ "sentinel matmul_bf16: start 0.1800 ms, end 0.1830 ms (+1.7 %)", one line per operation."""
    lines = []
    for planned in PLAN["operations"]:
        name = planned["name"]
        by_position = {m["position"]: m for m in measurements if m["operation"] == name}
        if not by_position:
            continue
        parts = []
        for position in POSITIONS:
            m = by_position.get(position)
            if m is not None:
                parts.append(
                    f"{position} {m['returned'][0]:.4f} ms" if m["status"] == "ok" else f"{position} {m['error']}"
                )
        line = f"sentinel {name}: " + ", ".join(parts)
        start, end = by_position.get("start"), by_position.get("end")
        if start and end and start["status"] == end["status"] == "ok":
            line += f" ({100.0 * (end['returned'][0] / start['returned'][0] - 1.0):+.1f} %)"
        lines.append(line)
    return lines


# --- the sentinel band ------------------------------------------------------------------------------------
# KernelIndex's verification plan (ADR 0003; ENGINEERING_DESIGN.md 17.9): a pinned reference kernel is
# run at every boot, and a boot whose calibration falls outside its historical band is discarded. Here:
# the history is this GPU's own (history_path: a file per GPU UUID in the sweep cache, appended after
# each sweep, plus SweepRequest.sentinel_history), and the band of each sentinel operation is the
# median of its earlier measurements +- BAND_WIDTH_MADS
# scaled MADs (1.4826 * MAD, a robust standard deviation), at least BAND_FLOOR of the median (so a host
# whose history is unusually steady is not flagged for noise), from at least BAND_MIN_HISTORY sweeps.
BAND_MIN_HISTORY = 5  # earlier measurements per operation (start and end of each sweep count)
BAND_WIDTH_MADS = 4.0
BAND_FLOOR = 0.03
BAND_LABEL = "sentinel_band"


HISTORY_LINES = 400  # the newest sentinel measurements kept per GPU (about 100 sweeps of 2 operations x 2 positions)
HISTORY_MAX_BYTES = 1 << 20


def history_path(cache_dir: Path, device_uuid: str | None, device_name: str | None) -> Path:
    """`<cache>/sentinel-history/<gpu>.jsonl`: this GPU's earlier sweeps (by its UUID, so the history is
    the host's own, also on a cache volume that pods on other nodes share; the name without one)."""
    key = re.sub(r"[^a-z0-9]+", "-", (device_uuid or device_name or "unknown-gpu").lower()).strip("-")[:100]
    return Path(cache_dir) / "sentinel-history" / f"{key}.jsonl"


def read_history(path: Path) -> list[dict[str, Any]]:
    """The earlier measurements in `path` (bounded; a line that is not one is skipped)."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, 2) - HISTORY_MAX_BYTES))
            lines = handle.read(HISTORY_MAX_BYTES).decode("utf-8", errors="replace").splitlines()
    except OSError:
        return []
    history = []
    for line in lines[-HISTORY_LINES:]:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("operation"), str) and _positive(entry.get("median_ms")):
            history.append(entry)
    return history


def append_history(path: Path, measurements: list[dict[str, Any]], liger_version: str) -> None:
    """This sweep's sentinel medians, one line each, for the bands of later sweeps."""
    lines = [
        json.dumps(
            {
                "operation": m["operation"],
                "position": m["position"],
                "median_ms": m["returned"][0],
                "observed_at": m.get("observed_at"),
                "liger_version": liger_version,
            },
            sort_keys=True,
        )  # fmt: skip
        for m in measurements
        if m.get("status") == "ok"
    ]
    if lines:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


def sentinel_band(history: list[dict[str, Any]], measurements: list[dict[str, Any]]) -> dict[str, Any]:
    """{"status": "inside" | "outside" | "insufficient_history" | "not_measured", "operations": [...]}.

    history: earlier sweeps of this host, {"operation", "median_ms"} each (one entry per sweep and
    operation); measurements: this sweep's (collect_sentinel). This sweep's value per operation is the
    mean of its start and end medians."""
    operations, statuses = [], []
    for planned in PLAN["operations"]:
        name = planned["name"]
        earlier = [
            float(h["median_ms"]) for h in history if h.get("operation") == name and _positive(h.get("median_ms"))
        ]
        now = [m["returned"][0] for m in measurements if m["operation"] == name and m.get("status") == "ok"]
        entry: dict[str, Any] = {"operation": name, "history": len(earlier)}
        if not now:
            entry["status"] = "not_measured"
        elif len(earlier) < BAND_MIN_HISTORY:
            entry.update(status="insufficient_history", value_ms=sum(now) / len(now))
        else:
            centre = statistics.median(earlier)
            spread = 1.4826 * statistics.median(abs(v - centre) for v in earlier)
            half = max(BAND_WIDTH_MADS * spread, BAND_FLOOR * centre)
            value = sum(now) / len(now)
            entry.update(value_ms=value, band_ms=[centre - half, centre + half],
                         status="inside" if abs(value - centre) <= half else "outside")  # fmt: skip
        operations.append(entry)
        statuses.append(entry["status"])
    if "outside" in statuses:
        status = "outside"
    elif "inside" in statuses:
        status = "inside"
    elif "insufficient_history" in statuses:
        status = "insufficient_history"
    else:
        status = "not_measured"
    return {
        "status": status,
        "operations": operations,
        "method": f"median +- max({BAND_WIDTH_MADS} scaled MAD, {BAND_FLOOR:.0%}) of >= {BAND_MIN_HISTORY} earlier sweeps",
    }


def _positive(value: Any) -> bool:
    return isinstance(value, (int, float)) and value > 0 and value == value and value != float("inf")


def band_labels(band: dict[str, Any]) -> dict[str, str]:
    """Labels every run of a sweep carries: `sentinel_band: outside` for an outlier sweep."""
    return {BAND_LABEL: "outside"} if band.get("status") == "outside" else {}


def band_summary(band: dict[str, Any]) -> str:
    parts = []
    for op in band.get("operations", []):
        if "band_ms" in op:
            low, high = op["band_ms"]
            parts.append(f"{op['operation']} {op['value_ms']:.4f} ms in [{low:.4f}, {high:.4f}]: {op['status']}")
        else:
            parts.append(f"{op['operation']}: {op['status'].replace('_', ' ')} ({op['history']} earlier sweeps)")
    mark = " - OUTLIER SWEEP: its runs carry sentinel_band=outside" if band.get("status") == "outside" else ""
    return "sentinel band: " + "; ".join(parts) + mark
