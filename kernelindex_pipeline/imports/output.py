"""Writing an import as `records.jsonl` + `report.json`, without holding a million runs in memory, and
reading them back (`read_records_jsonl`, `read_json`).

records.jsonl: one RFC 8785 canonical manifest per line, sorted by kind (records.schema.KINDS order),
then name, then digest. Shared objects are few and kept in memory; BenchmarkRuns (always the last
kind) stream in and are sorted by (name, digest) without holding their text in memory: lines go to
a temporary file as they come, only the sort keys and file offsets stay in memory.
Files are written under a temporary name and renamed into place, so a failed import never leaves a
half-written records.jsonl over a good one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol

from kernelindex_pipeline.records.canonical import canonical_bytes, digest_of
from kernelindex_pipeline.records.schema import KINDS

_KIND_RANK = {kind: i for i, kind in enumerate(KINDS)}


def sort_key(manifest: dict[str, Any], digest: str) -> tuple[int, str, str]:
    """KINDS order, then name, then digest: the order of records.jsonl."""
    return (_KIND_RANK.get(manifest["kind"], len(KINDS)), manifest["metadata"]["name"], digest)


class RunLine(Protocol):
    """A BenchmarkRun as its canonical line (liger.runs.RunRecord is one)."""

    name: str
    digest: str
    line: bytes


class SortedRunSpool:
    """Collect runs as they stream in; give their lines back sorted by (name, digest).

    Each line goes straight to one unnamed temporary file, in arrival order; memory keeps only
    (name, digest, offset, length) per run (about 400 bytes, against ~1.6 KB for a line). `lines()`
    sorts those keys and reads each line back by its offset.
    """

    def __init__(self, tmp_dir: Path | str | None = None):
        self._file = tempfile.TemporaryFile(prefix="runs-", dir=tmp_dir)
        self._keys: list[tuple[str, str, int, int]] = []
        self._offset = 0
        self.count = 0

    def add(self, run: RunLine) -> None:
        size = len(run.line)
        self._keys.append((run.name, run.digest, self._offset, size))
        self._file.write(run.line)
        self._offset += size
        self.count += 1

    def lines(self) -> Iterator[bytes]:
        """Canonical run lines (without newline) in (name, digest) order; the spool is spent afterwards."""
        self._file.flush()
        fd = self._file.fileno()
        self._keys.sort()
        try:
            for _, _, offset, size in self._keys:
                yield os.pread(fd, size, offset)
        finally:
            self.cleanup()

    def cleanup(self) -> None:
        self._keys = []
        self._file.close()


def write_records_jsonl(
    path: Path, shared: Iterable[tuple[str, dict[str, Any]]], runs: SortedRunSpool | Iterable[bytes] | None = None
) -> int:
    """Write `shared` (digest, manifest) sorted, then the run lines; returns the number of lines."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    count = 0
    with open(tmp, "wb") as f:
        for _digest, manifest in sorted(shared, key=lambda item: sort_key(item[1], item[0])):
            f.write(canonical_bytes(manifest) + b"\n")
            count += 1
        run_lines = runs.lines() if isinstance(runs, SortedRunSpool) else (runs or ())
        for line in run_lines:
            f.write(line + b"\n")
            count += 1
    tmp.replace(path)
    return count


def write_json(path: Path, value: Any) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", "utf-8")
    tmp.replace(path)


def read_records_jsonl(path: Path) -> dict[str, dict[str, Any]]:
    """digest -> manifest of a records.jsonl that `write_records_jsonl` wrote (our own file: every line a
    canonical manifest; the digest is recomputed, never trusted from elsewhere)."""
    manifests: dict[str, dict[str, Any]] = {}
    with open(path, "rb") as f:
        for line in f:
            manifest = json.loads(line)
            manifests.setdefault(digest_of(manifest), manifest)
    return manifests


def read_json(path: Path) -> Any:
    """The value `write_json` wrote."""
    return json.loads(Path(path).read_text("utf-8"))
