"""The scripts' raw timing samples: the hook's environment, its spool read back, one content-addressed
artifact per do_bench call, and each CSV row paired with the call that measured it.

The hook (sample_hook/sitecustomize.py, on the scripts' PYTHONPATH) appends one JSON line per
`triton.testing.do_bench` call to `<logs>/<script>.samples.jsonl`. After the script, `collect_samples`
writes every call as `<logs>/samples/<sha256 hex>.json` (compact JSON with sorted keys, floats as
Python writes them, so a timing the hook saw as non-finite is kept too; the name is the digest of the bytes) and pairs the rows the script added with calls:

* a call made inside `utils.run_benchmarks` carries its row's key cells (kernel, provider, mode, metric,
  x, config): the row with those cells takes the last such call whose returned quantiles are the row's
  y_value_50/20/80 exactly as the CSV writes them;
* a call without a case (a script with its own loop) pairs with the one row whose values it returned,
  never when two rows or two calls share those values.

Rows left without samples are counted by reason (`memory` rows have none by design).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex_pipeline.liger.samples import latency_statistics, row_key

HOOK_DIR = Path(__file__).resolve().parent / "sample_hook"
SPOOL_VARIABLE = "KERNELINDEX_SAMPLES_SPOOL"  # sample_hook/sitecustomize.py reads the same names
MAX_BYTES_VARIABLE = "KERNELINDEX_SAMPLES_MAX_BYTES"
SPOOL_LIMIT_BYTES = 256 * 2**20
ARTIFACT_FORMAT = "kernelindex-do-bench-samples/v1"
CASE_CELLS = ("kernel_name", "kernel_provider", "kernel_operation_mode", "metric_name", "x_name", "x_value", "extra_benchmark_config_str")
QUANTILE_CELLS = ("y_value_50", "y_value_20", "y_value_80")


def spool_path(logs_dir: Path, script_stem: str) -> Path:
    return logs_dir / f"{script_stem}.samples.jsonl"


def hook_environment(spool: Path) -> dict[str, str]:
    """Variables that switch the hook on for one script (HOOK_DIR must be on its PYTHONPATH)."""
    return {SPOOL_VARIABLE: str(spool), MAX_BYTES_VARIABLE: str(SPOOL_LIMIT_BYTES)}


@dataclass
class Call:
    """One do_bench call as the hook saw it, and its artifact once written."""

    call: int
    case: dict[str, str] | None
    returned: Any
    samples: list[float] | None
    record: dict[str, Any]
    artifact: dict[str, str] | None = None  # {"uri": "file://...", "digest": "sha256:..."}


@dataclass
class ScriptSamples:
    """What one script's calls gave: counts, and the samples entry of every row they measured."""

    calls: int = 0
    calls_without_samples: int = 0
    unreadable_lines: int = 0
    by_row: dict[str, dict[str, Any]] = field(default_factory=dict)  # liger.samples.row_key -> entry
    rows_without_samples: dict[str, int] = field(default_factory=dict)  # reason -> rows

    def summary(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "calls_without_samples": self.calls_without_samples,
            "unreadable_lines": self.unreadable_lines,
            "rows_with_samples": len(self.by_row),
            "rows_without_samples": dict(sorted(self.rows_without_samples.items())),
        }


def read_spool(path: Path) -> tuple[list[Call], int]:
    """The calls of a spool (none when the script made none) and the count of unreadable lines (a line
    cut short by a kill, or anything else that is not one of the hook's records)."""
    calls: list[Call] = []
    bad = 0
    if not path.is_file():
        return calls, bad
    with path.open(encoding="utf-8", errors="replace") as handle:
        for line in handle:
            try:
                record = json.loads(line)
                samples = record.get("samples")
                if samples is not None and not (isinstance(samples, list) and samples and all(isinstance(v, (int, float)) for v in samples)):
                    raise ValueError("samples")
                calls.append(Call(int(record["call"]), record.get("case"), record.get("returned"), samples, record))
            except (ValueError, KeyError, TypeError, AttributeError):
                bad += 1
    return calls, bad


def write_artifact(call: Call, script: str, artifacts_dir: Path) -> dict[str, str]:
    """`<artifacts_dir>/<hex>.json` holding the call; returns its {"uri", "digest"}."""
    content = {
        "format": ARTIFACT_FORMAT,
        "script": script,
        "call": call.call,
        "case": call.case,
        "method": call.record.get("method"),
        "triton": call.record.get("triton"),
        "arguments": call.record.get("arguments"),
        "unit": "ms",
        "returned": call.returned,
        "samples": call.samples,
    }
    data = json.dumps(content, sort_keys=True, separators=(",", ":")).encode("utf-8")
    hexdigest = hashlib.sha256(data).hexdigest()
    artifacts_dir.mkdir(parents=True, exist_ok=True)
    path = artifacts_dir / f"{hexdigest}.json"
    if not path.exists():
        temporary = path.with_suffix(".tmp")
        temporary.write_bytes(data)
        temporary.replace(path)
    return {"uri": path.resolve().as_uri(), "digest": f"sha256:{hexdigest}"}


def _returned_cells(returned: Any) -> tuple[str, ...] | None:
    """The call's return value as the CSV writes the three quantile cells (csv writes floats by repr)."""
    if isinstance(returned, list) and len(returned) == 3 and all(isinstance(v, (int, float)) for v in returned):
        return tuple(str(float(v)) for v in returned)
    return None


def _cells(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row.get(c, "") for c in QUANTILE_CELLS)


def _key_of(row: dict[str, str]) -> str:
    return row_key(
        row["kernel_name"], row["kernel_provider"], row["kernel_operation_mode"], row["metric_name"],
        row["x_name"], row["x_value"], row["extra_benchmark_config_str"], row["gpu_name"],
    )


def pair_rows(rows: list[dict[str, str]], calls: list[Call]) -> tuple[dict[str, Call], dict[str, int]]:
    """(row key -> its call, reason -> rows without one) for the rows one script added."""
    paired: dict[str, Call] = {}
    missing: dict[str, int] = {}

    def miss(reason: str) -> None:
        missing[reason] = missing.get(reason, 0) + 1

    by_case: dict[tuple, list[Call]] = {}
    loose: dict[tuple[str, ...], list[Call]] = {}
    for call in calls:
        if call.case is not None:
            by_case.setdefault(tuple(call.case.get(c) for c in CASE_CELLS), []).append(call)
        else:
            cells = _returned_cells(call.returned)
            if cells is not None:
                loose.setdefault(cells, []).append(call)
    row_cells: dict[tuple[str, ...], int] = {}
    for row in rows:
        row_cells[_cells(row)] = row_cells.get(_cells(row), 0) + 1

    for row in rows:
        if row.get("metric_name") == "memory":
            miss("memory")
            continue
        cells = _cells(row)
        candidates = by_case.get(tuple(row.get(c) for c in CASE_CELLS))
        if candidates:
            matching = [c for c in candidates if _returned_cells(c.returned) == cells]
            if not matching:
                miss("values_differ_from_the_call")
                continue
            call = matching[-1]
        else:
            matching = loose.get(cells, [])
            if not matching:
                miss("no_do_bench_call")
                continue
            if len(matching) > 1 or row_cells[cells] > 1:
                miss("ambiguous")
                continue
            call = matching[0]
        if not call.samples:
            miss("samples_dropped")
            continue
        paired[_key_of(row)] = call
    return paired, missing


def collect_samples(spool: Path, artifacts_dir: Path, script: str, rows: list[dict[str, str]]) -> ScriptSamples:
    """Artifacts for every call of one script's spool, and the samples entry of each row it measured."""
    calls, bad = read_spool(spool)
    result = ScriptSamples(calls=len(calls), unreadable_lines=bad)
    for call in calls:
        if call.samples:
            call.artifact = write_artifact(call, script, artifacts_dir)
        else:
            result.calls_without_samples += 1
    paired, result.rows_without_samples = pair_rows(rows, calls)
    for key, call in paired.items():
        try:
            statistics = latency_statistics(call.samples)
        except ValueError:  # a negative or non-finite timing: the artifact stays, the run gets no statistics
            result.rows_without_samples["invalid_samples"] = result.rows_without_samples.get("invalid_samples", 0) + 1
            continue
        result.by_row[key] = {"artifact": call.artifact, **statistics}
    return result
