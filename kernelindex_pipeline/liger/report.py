"""What a Liger import reports: every input row's fate, counted by reason (docs/reference/record-contract.md §5).

Conservation: rowsRead == runs + every skip (including duplicates and rows left out by a filter)
+ every issue. `ImportReport.conserved()` checks it; tests assert it for every import.

Coverage: every row that was not filtered out (and whose cells could be read) is counted in one cell
of kernel x provider x mode x GPU x liger_version x metric with its fate (a run, a skip reason or an
issue); `imports.coverage.CoverageTable` reads those cells back (report.json's `coverage`).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kernelindex_pipeline.imports.coverage import CoverageTable
from kernelindex_pipeline.imports.result import Issue
from kernelindex_pipeline.records.schema import KINDS

KIND_ORDER = KINDS  # records.schema's dependency order of the seven kinds


class SkipReason(enum.Enum):
    """Why a row makes no run; the value is its key under `skipped` in report.json."""

    MEMORY_ROW = "memoryRows"  # reference profile: any metric but speed
    UNKNOWN_METRIC = "unknownMetric"  # full profile: neither speed nor memory
    UNCURATED_KERNEL = "uncuratedKernels"
    UNKNOWN_MODE = "unknownMode"  # full profile (the reference folds it into unknown config)
    UNKNOWN_PROVIDER = "unknownProvider"
    UNKNOWN_CONFIG = "unknownConfig"
    UNKNOWN_GPU = "unknownGpu"
    DUPLICATE = "duplicateRows"
    FILTERED = "filteredOut"


# report.json's `skipped`, in its order: each skip reason and the ImportReport field that counts it,
# an int or a Counter by detail. A new reason: its enum member, its field and one entry here;
# counting, the total and report.json follow from this table.
SKIP_COUNTERS: dict[SkipReason, str] = {
    SkipReason.MEMORY_ROW: "memory_rows",
    SkipReason.UNKNOWN_METRIC: "unknown_metric",
    SkipReason.UNCURATED_KERNEL: "uncurated_kernels",
    SkipReason.UNKNOWN_MODE: "unknown_mode",
    SkipReason.UNKNOWN_CONFIG: "unknown_config",
    SkipReason.UNKNOWN_PROVIDER: "unknown_provider",
    SkipReason.UNKNOWN_GPU: "unknown_gpu",
    SkipReason.DUPLICATE: "duplicate_rows",
    SkipReason.FILTERED: "filtered_out",
}
# Counted where they happen (the importer's filter and duplicate check), never through count_skip.
_COUNTED_WHERE_THEY_HAPPEN = frozenset({SkipReason.DUPLICATE, SkipReason.FILTERED})


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
    # (kernel, provider, mode, gpu, liger_version, metric, fate) -> rows; fate: RUN_FATE, ISSUE_FATE or a SkipReason
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

    def count_skip(self, reason: SkipReason, detail: str) -> None:
        """One row skipped for `reason`, counted under `detail`."""
        name = SKIP_COUNTERS.get(reason)
        if name is None or reason in _COUNTED_WHERE_THEY_HAPPEN:
            raise ValueError(f"skip reason {reason.value!r} is counted where it happens, not here")
        counted = getattr(self, name)
        if isinstance(counted, Counter):
            counted[detail] += 1
        else:
            setattr(self, name, counted + 1)

    def _skipped(self) -> dict[str, int | Counter]:
        """Each skip key's count, in report.json's order."""
        return {reason.value: getattr(self, name) for reason, name in SKIP_COUNTERS.items()}

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
