"""Coverage cells: what became of the rows of each kernel x provider x mode x GPU x version x metric.

Every import's report.json carries its cells (`coverage.cells`); `CoverageTable` reads them back from
one report or many (e.g. every partition's report.json) and merges them, for the report and the site,
the `benchmark_coverage` asset and sweep coverage. A live report (liger.report.ImportReport) counts a
cell's rows by fate: RUN_FATE, ISSUE_FATE or the source's skip reason (an enum, counted by its value).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

# The fates of a coverage cell besides the skip reasons.
RUN_FATE = "run"
ISSUE_FATE = "issue"


class CountsCoverage(Protocol):
    """A live import report: (kernel, provider, mode, gpu, version, metric, fate) -> rows."""

    coverage: dict[tuple[Any, ...], int]


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
    def of(cls, reports: Iterable[CountsCoverage | Mapping[str, Any]]) -> CoverageTable:
        """From live import reports or their `to_dict()` (report.json) form, e.g. one per partition."""
        merged: dict[tuple[str, ...], dict[str, Any]] = {}

        def cell(names: tuple[str, ...]) -> dict[str, Any]:
            return merged.setdefault(names, {"rows": 0, "runs": 0, "issues": 0, "skipped": Counter()})

        for report in reports:
            if not isinstance(report, Mapping):
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
