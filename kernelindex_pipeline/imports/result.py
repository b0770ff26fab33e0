"""What an import gives back, whatever its source: the records (one object per digest) and the report
of every input row's fate, with the snapshot of the bytes read. The history, CI and sweep chains, the
CLI's `transform` and the tests all hold an import as an `ImportResult`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from kernelindex_pipeline.imports.output import sort_key


class SourceReport(Protocol):
    """What every source's report of an import is (Liger's: `liger.report.ImportReport`, which has more):
    report.json's document, which the chains and the store keep without reading it."""

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class SourceSnapshot:
    """Where an input came from and exactly which bytes were read: `sha256` and `sizeBytes` are those of the
    bytes the locator names (for a member of an archive, `<archive>#<member>`, the member's), the archive's
    own in `archiveSha256` and `archiveSizeBytes`."""

    locator: str
    resolvedVersion: str | None
    sha256: str
    sizeBytes: int
    fetchedAt: str
    parserVersion: str  # the parser that read them (Liger's: liger.release.PARSER_VERSION)
    archiveSha256: str | None = None
    archiveSizeBytes: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None or not k.startswith("archive")}


@dataclass
class Issue:
    """An input row that is not a measurement (report.json `issues`, `droppedBands`)."""

    row: int  # 1-based data row number (see liger/csv.py)
    problem: str

    def to_dict(self) -> dict[str, Any]:
        return {"row": self.row, "problem": self.problem}


@dataclass
class ImportResult:
    """`manifests`: digest -> manifest, one object per digest (runs too, unless they were streamed)."""

    manifests: dict[str, dict[str, Any]]
    report: SourceReport
    snapshot: SourceSnapshot | None = None
    names_by_digest: dict[str, list[str]] = field(default_factory=dict)

    def sorted_manifests(self) -> list[dict[str, Any]]:
        return [m for d, m in self.sorted_items()]

    def sorted_items(self) -> list[tuple[str, dict[str, Any]]]:
        return sorted(self.manifests.items(), key=lambda item: sort_key(item[1], item[0]))

    def runs(self) -> list[dict[str, Any]]:
        return [m for m in self.manifests.values() if m["kind"] == "BenchmarkRun"]

    def iter_kind(self, kind: str) -> Iterator[dict[str, Any]]:
        return (m for m in self.manifests.values() if m["kind"] == kind)
