"""The run table: every BenchmarkRun of a catalogue as detection reads it, in columns, kept in a folder beside
the catalogue's other derived files and brought up to date from the publication log, so that a nightly
refresh parses only the manifests the night published (issue 33).

Objects are insert-only and each remembers the publication that first brought it
(`CatalogueStore.publications_with_records`), so the table is one Parquet file per such publication, never
rewritten: ``runs-<publication id>.parquet``, one row per run with what the run says by itself
(`detection.run_facts.own_facts_of`: its source and its RunFacts, or why it cannot be used), its name and
digest. ``table.json``, written last, lists the files with their publication's partition, rows and sha256.
`RunTable.update` writes the files of publications it lacks, checks the others against the list (a damaged,
missing or foreign file is read again from the catalogue, with a warning) and removes those of publications
the catalogue does not have; `RunTable.facts` gives detection the catalogue's runs in the catalogue's order
(`detection.run_facts.RunFactsTable`), the same facts as from the manifests.
"""

from __future__ import annotations

import hashlib
import heapq
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernelindex_pipeline.detection.run_facts import RunFacts, RunFactsTable, own_facts_of
from kernelindex_pipeline.home import dagster_home
from kernelindex_pipeline.imports.archive import sha256_file

from .export import _write_atomically

FORMAT = 1
LIST_NAME = "table.json"
RUN_KIND = "BenchmarkRun"
ROWS_IN_FLIGHT = 65_536  # rows read ahead over all the files at once (a batch per file)
# a new column, or another meaning of one, needs a new FORMAT: the files of an older one are read again
_FACTS = RunFacts._fields


@dataclass
class RunTableUpdate:
    """What an update did: publications whose files were written (new, or read again), kept and removed."""

    written: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)
    removed: list[int] = field(default_factory=list)
    rows_written: int = 0
    warnings: list[str] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"run table: {len(self.written)} publication files written ({self.rows_written} runs read from their "
            f"manifests), {len(self.kept)} kept, {len(self.removed)} removed"
        )


def _schema():
    import pyarrow as pa  # imported when the table is used: a CLI start never pays for it

    return pa.schema(
        [
            ("name", pa.string()),
            ("digest", pa.string()),
            ("source", pa.string()),
            ("reason", pa.string()),  # why the run cannot be used; null with facts or without an adapter
            ("adapter", pa.bool_()),  # an adapter class in SOURCE_ADAPTERS read its source
            *[(f, pa.float64() if f in ("value", "order") else pa.string()) for f in _FACTS],
        ]
    )


def run_table_beside(store: Any) -> Path:
    """Where a catalogue's run table lives: ``<file>.run-table/`` beside an SQLite file, else
    ``storage/run-table/`` under DAGSTER_HOME (a PostgreSQL catalogue's, kept by its refreshing instance)."""
    database = store.engine.url.database
    if store.dialect == "sqlite" and database not in (None, "", ":memory:"):
        return Path(database).with_name(Path(database).name + ".run-table")
    return dagster_home() / "storage" / "run-table"


class RunTable:
    """The run table in `path` (a folder, created when first updated)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._catalogue: str | None = None  # the (redacted) URL of the catalogue the list was made from

    def update(self, store: Any, *, rebuild: bool = False, made_before: bool = False) -> RunTableUpdate:
        """Bring the table to the catalogue `store` holds (a `CatalogueStore`, read only); `rebuild`: every
        publication's file written again (the same bytes). `made_before`: the caller made this table before (it
        kept a result of it), so a table that is gone is a warning, not a first table."""
        done = RunTableUpdate()
        listed, why = self._listed()
        if not why and not listed and made_before and not (self.path / LIST_NAME).exists():
            why = "gone (its caller made it before)"
        if not why and listed and self._catalogue != store.safe_url:
            listed, why = {}, f"made from another catalogue ({self._catalogue})"
        if why:
            done.warnings.append(f"run table {self.path}: {why}; every publication read again from the catalogue")
        if rebuild:
            listed, why = {}, "a rebuild was asked for"
        wanted = store.publications_with_records()
        entries: dict[str, Any] = {}
        for publication, partition in wanted.items():
            entry = listed.get(str(publication))
            problem = self._problem(entry, partition) if entry is not None else None
            if entry is not None and problem is None:
                entries[str(publication)] = entry
                done.kept.append(publication)
                continue
            if problem is not None:
                done.warnings.append(f"run table {self.path}: publication {publication}: {problem}; read again")
            entries[str(publication)] = self._write(store, publication, partition)
            done.written.append(publication)
            done.rows_written += entries[str(publication)]["rows"]
        for gone in sorted(set(listed) - set(entries), key=int):
            done.removed.append(int(gone))
        files = {entry["file"] for entry in entries.values()}
        for stray in self.path.glob("runs-*.parquet") if self.path.is_dir() else []:
            if stray.name not in files:  # of a publication gone, or of a list that was lost
                stray.unlink()
        if done.written or done.removed or why or self._catalogue != store.safe_url:
            listing = {"format": FORMAT, "catalogue": store.safe_url, "publications": entries}
            text = json.dumps(listing, indent=1, sort_keys=True).encode() + b"\n"
            _write_atomically(self.path / LIST_NAME, [text])  # the export's writer: a temporary name, renamed
        return done

    def facts(self, store: Any) -> RunFactsTable:
        """The catalogue's records that are not runs (from `store`) and its runs from the table, each in the
        catalogue's order (KINDS, then name, then digest: the runs sorted by name and digest here). Call
        `update` first: RunTableError for a table whose list cannot be read."""
        listed, why = self._listed()
        if why:
            raise RunTableError(f"run table {self.path}: {why} (update it first)")
        files = [self.path / entry["file"] for _, entry in sorted(listed.items(), key=lambda item: int(item[0]))]
        others = list(store.records(kinds=[kind for kind in store.counts_by_kind() if kind != RUN_KIND]))  # few
        # what detection is given: every publication's partition, rows and file digest, and the other records
        content = json.dumps([listed, [digest for digest, _ in others]], sort_keys=True)
        return RunFactsTable(
            records=[manifest for _, manifest in others],
            runs=_rows(files),
            fingerprint=hashlib.sha256(content.encode()).hexdigest(),
            columns=lambda: _Columns(files),
        )

    # ------------------------------------------------------------------ the files

    def _listed(self) -> tuple[dict[str, Any], str | None]:
        """(publication id -> its entry, why the list cannot be used or None)."""
        path = self.path / LIST_NAME
        if not path.exists():
            return {}, None if not self.path.exists() or not any(self.path.iterdir()) else "no table.json"
        try:
            listed = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError) as error:
            return {}, f"table.json unreadable ({error.__class__.__name__})"
        if not isinstance(listed, dict) or listed.get("format") != FORMAT:
            return {}, f"table.json of another format ({listed.get('format') if isinstance(listed, dict) else '?'})"
        self._catalogue = listed.get("catalogue")
        entries = listed.get("publications")
        types = {"file": str, "partition": str, "rows": int, "sha256": str}  # read back from disk: checked
        if not isinstance(entries, dict) or not all(
            isinstance(e, dict) and all(isinstance(e.get(k), t) for k, t in types.items()) for e in entries.values()
        ):
            return {}, "table.json damaged"
        return entries, None

    def _problem(self, entry: dict[str, Any], partition: str) -> str | None:
        if entry["partition"] != partition:
            return f"its file is of partition {entry['partition']!r}, the catalogue's is {partition!r}"
        path = self.path / str(entry["file"])
        if Path(entry["file"]).name != entry["file"] or not path.is_file():
            return "its file is missing"
        if sha256_file(path) != entry["sha256"]:
            return "its file is damaged (sha256 differs)"
        return None

    def _write(self, store: Any, publication: int, partition: str) -> dict[str, Any]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        columns: dict[str, list] = {name: [] for name in _schema().names}
        for digest, manifest in store.records(kinds=[RUN_KIND], publications=[publication]):
            source, own = own_facts_of(manifest)
            columns["name"].append((manifest.get("metadata") or {}).get("name"))
            columns["digest"].append(digest)
            columns["source"].append(source)
            columns["adapter"].append(own is not None)
            columns["reason"].append(own if isinstance(own, str) else None)
            facts = own if isinstance(own, RunFacts) else None
            for name in _FACTS:
                columns[name].append(None if facts is None else getattr(facts, name))
        self.path.mkdir(parents=True, exist_ok=True)
        name = f"runs-{publication:09d}.parquet"
        path = self.path / name
        handle = tempfile.NamedTemporaryFile(dir=self.path, prefix=f".{name}.", suffix=".partial", delete=False)
        handle.close()
        try:
            pq.write_table(pa.Table.from_pydict(columns, schema=_schema()), handle.name, compression="zstd")
            os.replace(handle.name, path)
        except BaseException:
            Path(handle.name).unlink(missing_ok=True)
            raise
        return {"file": name, "partition": partition, "rows": len(columns["digest"]), "sha256": sha256_file(path)}


class RunTableError(RuntimeError):
    """A run table that cannot be read as it is."""


class _Columns:
    """The files' rows as columns in the catalogue's order (`detection.run_facts.RunColumns`): read a column at
    a time from every file, dictionary-encoded before it is put in order, so no column becomes a Python object
    per run but the one asked for as strings (memory: one column of the table at a time, and the codes)."""

    def __init__(self, files: list[Path]) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        self._files = files
        keys = pa.table({name: self._read(name) for name in ("name", "digest")})
        # the catalogue's order (name, then digest: unique); byte order of UTF-8 is code-point order
        self._order = pc.sort_indices(keys, sort_keys=[("name", "ascending"), ("digest", "ascending")])
        self._positions = self._order.to_numpy()  # the same order, to index numpy arrays with
        self.rows = len(keys)

    def _read(self, name: str):
        import pyarrow as pa
        import pyarrow.parquet as pq

        field = _schema().field(name)
        chunks = [chunk for f in self._files for chunk in pq.read_table(f, columns=[name]).column(0).chunks]
        return pa.chunked_array(chunks, type=field.type).combine_chunks()

    def codes(self, name: str) -> tuple[Any, list[Any]]:
        import pyarrow.compute as pc

        encoded = pc.dictionary_encode(self._read(name))
        codes = pc.fill_null(encoded.indices, -1).to_numpy(zero_copy_only=False).astype("int64")
        return codes[self._positions], encoded.dictionary.to_pylist()

    def floats(self, name: str) -> Any:
        import pyarrow.compute as pc

        return pc.fill_null(self._read(name), float("nan")).to_numpy(zero_copy_only=False)[self._positions]

    def strings(self, name: str) -> list[str | None]:
        return self._read(name).take(self._order).to_pylist()


def _rows(files: list[Path]) -> Iterator[tuple[str | None, RunFacts | str | None]]:
    """(source, own facts | reason | None) per row of the files, in the catalogue's order: each file is in it
    (written from `records`, name then digest), so the files are merged, streamed a batch at a time, and memory
    holds a batch per file, never the table (Python compares strings by code point: the catalogue's order)."""
    import pyarrow.parquet as pq

    names = _schema().names
    at = {name: i for i, name in enumerate(names)}
    batch_size = max(64, ROWS_IN_FLIGHT // max(1, len(files)))

    def rows_of(path: Path) -> Iterator[tuple]:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=batch_size, columns=names):
            columns = [batch.column(i).to_pylist() for i in range(len(names))]
            yield from zip(*columns, strict=True)

    facts_from = at[_FACTS[0]]
    # rows start with (name, digest), unique, so tuples compare as the catalogue orders (no key function)
    for row in heapq.merge(*(rows_of(f) for f in files)):
        source = row[at["source"]]
        if not row[at["adapter"]]:
            yield source, None
        elif row[at["reason"]] is not None:
            yield source, row[at["reason"]]
        else:
            yield source, RunFacts(*row[facts_from:])
