"""Writing an import as `records.jsonl` + `report.json`, without holding a million runs in memory.

records.jsonl: one RFC 8785 canonical manifest per line, sorted by kind (records.schema.KINDS order),
then name, then digest. Shared objects are few and kept in memory; BenchmarkRuns (always the last
kind) stream in through `add_run` and are sorted by (name, digest) in bounded memory: runs are
buffered, each full buffer is sorted and spilled to a temporary file, and the spills are merged.
Files are written under a temporary name and renamed into place, so a failed import never leaves a
half-written records.jsonl over a good one.
"""

from __future__ import annotations

import heapq
import json
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator

from kernelindex_pipeline.liger.normalize import RunRecord
from kernelindex_pipeline.records.canonical import canonical_bytes

DEFAULT_BUFFER_RUNS = 100_000  # about 150 MiB of run lines in memory before a spill


class SortedRunSpool:
    """Collect (name, digest, line) for runs; iterate them back sorted by (name, digest)."""

    def __init__(self, tmp_dir: Path | str | None = None, buffer_runs: int = DEFAULT_BUFFER_RUNS):
        self.tmp_dir = tmp_dir
        self.buffer_runs = buffer_runs
        self._buffer: list[tuple[str, str, bytes]] = []
        self._spills: list[Path] = []
        self.count = 0

    def add(self, run: RunRecord) -> None:
        self._buffer.append((run.name, run.digest, run.line))
        self.count += 1
        if len(self._buffer) >= self.buffer_runs:
            self._spill()

    def _spill(self) -> None:
        self._buffer.sort()
        fd, name = tempfile.mkstemp(prefix="runs-", suffix=".spill", dir=self.tmp_dir)
        with os.fdopen(fd, "wb") as f:
            for run_name, digest, line in self._buffer:
                # Names are [a-z0-9-] and digests hex, so a tab separates them and sorts before both.
                f.write(run_name.encode() + b"\t" + digest.encode() + b"\t" + line + b"\n")
        self._spills.append(Path(name))
        self._buffer = []

    def lines(self) -> Iterator[bytes]:
        """Canonical run lines (without newline) in (name, digest) order."""
        if not self._spills:
            self._buffer.sort()
            for _, _, line in self._buffer:
                yield line
            return
        if self._buffer:
            self._spill()
        files = [open(p, "rb") for p in self._spills]
        try:
            def entries(f):
                for raw in f:
                    name, digest, line = raw.rstrip(b"\n").split(b"\t", 2)
                    yield name, digest, line

            for _, _, line in heapq.merge(*(entries(f) for f in files)):
                yield line
        finally:
            for f in files:
                f.close()
            self.cleanup()

    def cleanup(self) -> None:
        for p in self._spills:
            try:
                p.unlink()
            except OSError:
                pass
        self._spills = []


def write_records_jsonl(path: Path, shared: Iterable[tuple[str, dict[str, Any]]], runs: SortedRunSpool | Iterable[bytes] | None = None) -> int:
    """Write `shared` (digest, manifest) sorted, then the run lines; returns the number of lines."""
    from kernelindex_pipeline.liger import sort_key

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    count = 0
    with open(tmp, "wb") as f:
        for digest, manifest in sorted(shared, key=lambda item: sort_key(item[1], item[0])):
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
