"""What an import reports: every input row's fate, counted by reason (RECORDS.md section 5).

Conservation: rowsRead == runs + every skip (including duplicates and rows left out by a filter)
+ every issue. `ImportReport.conserved()` checks it; tests assert it for every import.

Coverage: every row that was not filtered out (and whose cells could be read) is counted in one cell
of kernel x provider x mode x GPU x liger_version x metric with its fate (a run, a skip reason or an
issue). `CoverageTable` reads those cells back from one report or many (e.g. every partition's
report.json), for the report, the `benchmark_coverage` asset and sweep coverage.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kernelindex_pipeline.records.schema import KINDS

KIND_ORDER = KINDS  # records.schema's dependency order of the seven kinds


@dataclass
class Issue:
    row: int  # 1-based data row number (see liger/csv.py)
    problem: str

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "problem": self.problem}


# The fates of a coverage cell besides the skip reasons (liger.normalize.SkipReason).
RUN_FATE = "run"
ISSUE_FATE = "issue"

# report.json's `skipped`, in its order: each skip key (a liger.normalize.SkipReason value) and the
# ImportReport field that counts it, an int or a Counter by detail. A new reason: its enum member,
# its field and one entry here; counting, the total and report.json follow from this table.
SKIP_COUNTERS: dict[str, str] = {
    "memoryRows": "memory_rows",
    "unknownMetric": "unknown_metric",
    "uncuratedKernels": "uncurated_kernels",
    "unknownMode": "unknown_mode",
    "unknownConfig": "unknown_config",
    "unknownProvider": "unknown_provider",
    "unknownGpu": "unknown_gpu",
    "duplicateRows": "duplicate_rows",
    "filteredOut": "filtered_out",
}
# Counted where they happen (the importer's filter and duplicate check), never through count_skip.
_COUNTED_WHERE_THEY_HAPPEN = frozenset({"duplicateRows", "filteredOut"})


@dataclass
class ImportReport:
    rows_read: int = 0
    speed_rows: int = 0
    runs: int = 0
    memory_rows: int = 0  # skipped as memory rows (reference profile: exactly Liger's `memory` metric)
    filtered_out: int = 0
    duplicate_rows: int = 0
    uncurated_kernels: Counter = field(default_factory=Counter)
    unknown_config: Counter = field(default_factory=Counter)
    unknown_provider: Counter = field(default_factory=Counter)
    unknown_gpu: Counter = field(default_factory=Counter)
    unknown_metric: Counter = field(default_factory=Counter)
    unknown_mode: Counter = field(default_factory=Counter)
    profile: str = "reference"
    memory_rows_seen: int = 0  # rows of the catalogue's memory metric (full profile)
    memory_runs: int = 0
    # (kernel, provider, mode, gpu, liger_version, metric, fate) -> rows; fate: "run", "issue" or a SkipReason
    coverage: dict[tuple[Any, ...], int] = field(default_factory=dict)
    issues: list[Issue] = field(default_factory=list)
    dropped_bands: list[Issue] = field(default_factory=list)  # runs published without their p20/p80 band
    drift_warnings: list[str] = field(default_factory=list)
    records: dict[str, int] = field(default_factory=dict)  # distinct digests by kind
    objects_by_name: dict[str, int] = field(default_factory=dict)  # objects the importer created, by kind
    operations_by_family: dict[str, int] = field(default_factory=dict)
    shared_digests: dict[str, list[str]] = field(default_factory=dict)
    # A measured import: the sweep sentinel's runs (not rows) and the measurements that made none.
    sentinel_runs: int = 0
    sentinel_problems: list[str] = field(default_factory=list)

    def count_skip(self, reason: Any, detail: str) -> None:
        """One row skipped for `reason` (a liger.normalize.SkipReason), counted under `detail`."""
        key = reason.value
        name = SKIP_COUNTERS.get(key)
        if name is None or key in _COUNTED_WHERE_THEY_HAPPEN:
            raise ValueError(f"skip reason {key!r} is counted where it happens, not here")
        counted = getattr(self, name)
        if isinstance(counted, Counter):
            counted[detail] += 1
        else:
            setattr(self, name, counted + 1)

    def _skipped(self) -> dict[str, int | Counter]:
        """Each skip key's count, in report.json's order."""
        return {key: getattr(self, name) for key, name in SKIP_COUNTERS.items()}

    @property
    def skipped_total(self) -> int:
        return sum(sum(n.values()) if isinstance(n, Counter) else n for n in self._skipped().values())

    def conserved(self) -> bool:
        return self.rows_read == self.runs + self.skipped_total + len(self.issues)

    def to_dict(self) -> dict[str, Any]:
        table = CoverageTable.of([self])
        return {
            "profile": self.profile,
            "rowsRead": self.rows_read,
            "speedRows": self.speed_rows,
            "memoryRowsSeen": self.memory_rows_seen,
            "records": {k: self.records.get(k, 0) for k in KIND_ORDER},
            "objectsByName": {k: self.objects_by_name.get(k, 0) for k in KIND_ORDER},
            "runs": self.runs,
            "memoryRuns": self.memory_runs,
            "skipped": {
                key: dict(sorted(n.items())) if isinstance(n, Counter) else n for key, n in self._skipped().items()
            },
            "coverage": {"byMetric": table.by_metric(), "cells": [c.to_dict() for c in table.cells]},
            "issues": [i.to_dict() for i in self.issues],
            "droppedBands": [i.to_dict() for i in self.dropped_bands],
            "driftWarnings": list(self.drift_warnings),
            "operationsByFamily": dict(sorted(self.operations_by_family.items())),
            "sharedDigests": {d: list(names) for d, names in sorted(self.shared_digests.items())},
            "sentinel": {"runs": self.sentinel_runs, "problems": list(self.sentinel_problems)},
            "conserved": self.conserved(),
        }

    def summary(self) -> str:
        return (
            f"{self.rows_read} rows read ({self.profile} profile): {self.runs} runs, {self.skipped_total} skipped, "
            f"{len(self.issues)} issues; records by kind: "
            + ", ".join(f"{k} {self.records.get(k, 0)}" for k in KIND_ORDER)
        )


def skip_totals(report: Mapping[str, Any]) -> dict[str, int]:
    """Skipped rows by reason in a report.json (`ImportReport.to_dict()`), each reason one number
    (per-name breakdowns summed): read back here, by the module that writes it."""
    return {
        reason: (value if isinstance(value, int) else sum(value.values()))
        for reason, value in report["skipped"].items()
    }


@dataclass(frozen=True)
class CoverageCell:
    """One kernel x provider x mode x GPU x liger_version x metric: rows seen and what became of them."""

    kernel: str
    provider: str
    mode: str
    gpu: str
    version: str
    metric: str
    rows: int
    runs: int
    skipped: dict[str, int]  # report skip key -> rows
    issues: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "provider": self.provider,
            "mode": self.mode,
            "gpu": self.gpu,
            "version": self.version,
            "metric": self.metric,
            "rows": self.rows,
            "runs": self.runs,
            "skipped": dict(sorted(self.skipped.items())),
            "issues": self.issues,
        }


_CELL_FIELDS = ("kernel", "provider", "mode", "gpu", "version", "metric")


@dataclass(frozen=True)
class CoverageTable:
    """Coverage cells of one or more imports, merged (cells with the same six names add up)."""

    cells: tuple[CoverageCell, ...]

    @classmethod
    def of(cls, reports: Iterable[ImportReport | dict[str, Any]]) -> CoverageTable:
        """From ImportReports or their `to_dict()` (report.json) form, e.g. one per partition."""
        merged: dict[tuple[str, ...], dict[str, Any]] = {}

        def cell(names: tuple[str, ...]) -> dict[str, Any]:
            return merged.setdefault(names, {"rows": 0, "runs": 0, "issues": 0, "skipped": Counter()})

        for report in reports:
            if isinstance(report, ImportReport):
                for (*names, fate), rows in report.coverage.items():
                    c = cell(tuple(names))
                    c["rows"] += rows
                    if fate == RUN_FATE:
                        c["runs"] += rows
                    elif fate == ISSUE_FATE:
                        c["issues"] += rows
                    else:
                        c["skipped"][fate.value] += rows
            else:
                for raw in (report.get("coverage") or {}).get("cells") or []:
                    c = cell(tuple(str(raw[f]) for f in _CELL_FIELDS))
                    c["rows"] += raw["rows"]
                    c["runs"] += raw["runs"]
                    c["issues"] += raw["issues"]
                    c["skipped"].update(raw["skipped"])
        return cls(
            tuple(
                CoverageCell(*names, rows=c["rows"], runs=c["runs"], skipped=dict(c["skipped"]), issues=c["issues"])
                for names, c in sorted(merged.items())
            )
        )

    def by_metric(self) -> dict[str, dict[str, Any]]:
        """metric -> rows, runs, percent of rows that became runs, skipped rows by reason."""
        out: dict[str, dict[str, Any]] = {}
        for c in self.cells:
            m = out.setdefault(c.metric, {"rows": 0, "runs": 0, "issues": 0, "skipped": Counter()})
            m["rows"] += c.rows
            m["runs"] += c.runs
            m["issues"] += c.issues
            m["skipped"].update(c.skipped)
        for m in out.values():
            m["percent"] = round(100 * m["runs"] / m["rows"], 2) if m["rows"] else 0.0
            m["skipped"] = dict(sorted(m["skipped"].items()))
        return dict(sorted(out.items()))

    def rows(self) -> list[dict[str, Any]]:
        """Table rows (one dict per cell), for a report table or asset metadata."""
        return [c.to_dict() for c in self.cells]

    def text(self, limit: int | None = None) -> str:
        """A plain-text table: the cells that lost rows first (most rows lost first), then the rest."""
        cells = sorted(self.cells, key=lambda c: (c.runs == c.rows, -(c.rows - c.runs), _sort_names(c)))
        lines = ["kernel | provider | mode | GPU | version | metric | rows | runs | skipped / issues"]
        for c in cells[:limit]:
            lost = ", ".join(f"{k} {v}" for k, v in sorted(c.skipped.items()))
            if c.issues:
                lost = (lost + ", " if lost else "") + f"issues {c.issues}"
            lines.append(" | ".join([*_sort_names(c), str(c.rows), str(c.runs), lost or "-"]))
        return "\n".join(lines)


def _sort_names(c: CoverageCell) -> tuple[str, ...]:
    return (c.kernel, c.provider, c.mode, c.gpu, c.version, c.metric)
