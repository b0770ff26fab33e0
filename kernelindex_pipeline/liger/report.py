"""What an import reports: every input row's fate, counted by reason (RECORDS.md section 5).

Conservation: rowsRead == runs + every skip (including duplicates and rows left out by a filter)
+ every issue. `ImportReport.conserved()` checks it; tests assert it for every import.
"""

from __future__ import annotations

from collections import Counter
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


@dataclass
class ImportReport:
    rows_read: int = 0
    speed_rows: int = 0
    runs: int = 0
    memory_rows: int = 0
    filtered_out: int = 0
    duplicate_rows: int = 0
    uncurated_kernels: Counter = field(default_factory=Counter)
    unknown_config: Counter = field(default_factory=Counter)
    unknown_provider: Counter = field(default_factory=Counter)
    unknown_gpu: Counter = field(default_factory=Counter)
    issues: list[Issue] = field(default_factory=list)
    drift_warnings: list[str] = field(default_factory=list)
    records: dict[str, int] = field(default_factory=dict)  # distinct digests by kind
    objects_by_name: dict[str, int] = field(default_factory=dict)  # objects the importer created, by kind
    operations_by_family: dict[str, int] = field(default_factory=dict)
    shared_digests: dict[str, list[str]] = field(default_factory=dict)

    @property
    def skipped_total(self) -> int:
        return (
            self.memory_rows + self.filtered_out + self.duplicate_rows
            + sum(self.uncurated_kernels.values()) + sum(self.unknown_config.values())
            + sum(self.unknown_provider.values()) + sum(self.unknown_gpu.values())
        )

    def conserved(self) -> bool:
        return self.rows_read == self.runs + self.skipped_total + len(self.issues)

    def to_dict(self) -> dict[str, Any]:
        return {
            "rowsRead": self.rows_read,
            "speedRows": self.speed_rows,
            "records": {k: self.records.get(k, 0) for k in KIND_ORDER},
            "objectsByName": {k: self.objects_by_name.get(k, 0) for k in KIND_ORDER},
            "runs": self.runs,
            "skipped": {
                "memoryRows": self.memory_rows,
                "uncuratedKernels": dict(sorted(self.uncurated_kernels.items())),
                "unknownConfig": dict(sorted(self.unknown_config.items())),
                "unknownProvider": dict(sorted(self.unknown_provider.items())),
                "unknownGpu": dict(sorted(self.unknown_gpu.items())),
                "duplicateRows": self.duplicate_rows,
                "filteredOut": self.filtered_out,
            },
            "issues": [i.to_dict() for i in self.issues],
            "driftWarnings": list(self.drift_warnings),
            "operationsByFamily": dict(sorted(self.operations_by_family.items())),
            "sharedDigests": {d: list(names) for d, names in sorted(self.shared_digests.items())},
            "conserved": self.conserved(),
        }

    def summary(self) -> str:
        return (
            f"{self.rows_read} rows read: {self.runs} runs, {self.skipped_total} skipped, "
            f"{len(self.issues)} issues; records by kind: "
            + ", ".join(f"{k} {self.records.get(k, 0)}" for k in KIND_ORDER)
        )
