"""The publication store: KernelIndex records keyed by digest, in SQLite (embedded) or PostgreSQL.

One code path for both databases, on SQLAlchemy Core. What is kept:

- ``objects``: one row per digest (kind, name, the canonical JSON manifest, the publication that first
  brought it). The digest is the identity; a name is only a label.
- ``runs``: BenchmarkRun source identity, unique on (source, externalId). A different digest for an
  externalId that is already published is a conflict: the first one stays, the newcomer is reported.
- ``source_snapshots`` and ``import_reports``: content-addressed (keyed by the digest of their canonical
  JSON), so re-publishing the same partition adds nothing there either.
- ``publications``: the log, one row per ``publish()`` call (partition, started/finished, counts).

Every ``publish()`` is one transaction. Publications are serialised per catalogue (SQLite: ``BEGIN
IMMEDIATE``; PostgreSQL: a transaction-scoped advisory lock) so that "new" and "already present" are
exact even when several processes publish at once, and a process killed halfway leaves nothing behind.
An SQLite file is switched to WAL by its first opening; processes that open a fresh catalogue at the
same moment wait for one another there too (``_enter_wal_mode``), within the same busy timeout.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import (
    Column,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    case,
    create_engine,
    event,
    func,
    inspect,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql as postgresql_dialect
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import URL, Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from kernelindex_pipeline.home import default_catalogue_path
from kernelindex_pipeline.records.canonical import canonical_json, digest_of
from kernelindex_pipeline.records.schema import KINDS
from kernelindex_pipeline.redaction import (
    CATALOGUE_URL_FORMS,
    MalformedUrl,
    is_secret_parameter,
    parse_url,
    redact_url,
    scrub,
    url_secrets,
)

log = logging.getLogger(__name__)
STREAM_BATCH = 2000  # rows per fetch when streaming manifests
T = TypeVar("T")

RUN_KIND = "BenchmarkRun"

# How many rows go into one INSERT/SELECT round trip: large enough that a ~10k-record partition is a
# handful of statements, small enough to stay under SQLite's bound-parameter limit.
BATCH_SIZE = 500
RANGES_PER_QUERY = 500  # externalId ranges OR'd in one statement (SQLite's expression depth is 1000)

# Any fixed 64-bit number; all publishers of one PostgreSQL database take this lock, so publications
# are serialised there just as BEGIN IMMEDIATE serialises them in SQLite.
_PG_PUBLISH_LOCK = 0x4B49_4341_5441_4C47  # "KICATALG"

_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")

metadata = MetaData()

publications = Table(
    "publications",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("partition", String(255), nullable=False, index=True),
    Column("started_at", String(32), nullable=False),
    Column("finished_at", String(32)),  # set in the same transaction; NULL is never visible outside it
    Column("new_count", Integer, nullable=False, default=0),
    Column("already_present_count", Integer, nullable=False, default=0),
    Column("conflict_count", Integer, nullable=False, default=0),
    Column("new_by_kind", Text, nullable=False, default="{}"),
    Column("conflicts", Text, nullable=False, default="[]"),
    Column("snapshot_digest", String(71), ForeignKey("source_snapshots.digest")),
    Column("report_digest", String(71), ForeignKey("import_reports.digest")),
)

source_snapshots = Table(
    "source_snapshots",
    metadata,
    Column("digest", String(71), primary_key=True),  # sha256 of the canonical JSON below
    Column("locator", Text),
    Column("sha256", String(64)),  # of the source bytes, when the snapshot says
    Column("snapshot", Text, nullable=False),
)

import_reports = Table(
    "import_reports",
    metadata,
    Column("digest", String(71), primary_key=True),  # sha256 of the canonical JSON below
    Column("report", Text, nullable=False),
)

objects = Table(
    "objects",
    metadata,
    Column("digest", String(71), primary_key=True),
    Column("kind", String(64), nullable=False, index=True),
    Column("name", Text, nullable=False),
    Column("manifest", Text, nullable=False),  # canonical JSON (RFC 8785) of the whole manifest
    # indexed: the refreshes read what each publication brought (`records(publications=...)`, issue 33)
    Column("first_publication_id", Integer, ForeignKey("publications.id"), nullable=False, index=True),
)

# Regressions marked as known (detection/acknowledgements.py): one row per change, the latest mark wins.
# Added to an existing catalogue by create_all like any new table (no column of an old table changes).
acknowledgements = Table(
    "acknowledgements",
    metadata,
    Column("change_id", String(64), primary_key=True),
    Column("status", String(16), nullable=False),
    Column("fixed_in", String(64), nullable=False, default=""),
    Column("note", Text, nullable=False, default=""),
    Column("by", String(255), nullable=False),
    Column("at", String(32), nullable=False),
)

runs = Table(
    "runs",
    metadata,
    Column("digest", String(71), ForeignKey("objects.digest"), primary_key=True),
    Column("source", String(255), nullable=False),
    Column("external_id", Text, nullable=False),
    UniqueConstraint("source", "external_id", name="uq_runs_source_external_id"),
)


class CatalogueError(RuntimeError):
    """A catalogue could not be opened or written. The message never contains a password."""


@dataclass(frozen=True)
class Conflict:
    """A run whose (source, externalId) is already taken by a different digest; the first one is kept."""

    source: str
    external_id: str
    kept_digest: str
    rejected_digest: str

    def to_dict(self) -> dict[str, str]:
        return {
            "source": self.source,
            "externalId": self.external_id,
            "keptDigest": self.kept_digest,
            "rejectedDigest": self.rejected_digest,
        }


@dataclass(frozen=True)
class PublishResult:
    """What one publication changed. Every distinct digest given is counted once: as new, as
    already present, or (a BenchmarkRun whose externalId another digest holds) as a conflict."""

    new: int
    already_present: int
    new_by_kind: dict[str, int] = field(default_factory=dict)
    conflicts: list[Conflict] = field(default_factory=list)
    publication_id: int | None = None
    partition: str = ""

    def summary(self) -> str:
        """One line, e.g. ``0 new, 1 649 already present`` (and the conflicts, if any)."""
        text = f"{_grouped(self.new)} new, {_grouped(self.already_present)} already present"
        if self.conflicts:
            noun = "conflict" if len(self.conflicts) == 1 else "conflicts"
            text += f", {_grouped(len(self.conflicts))} {noun} (externalId already published with another digest)"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "publicationId": self.publication_id,
            "new": self.new,
            "alreadyPresent": self.already_present,
            "newByKind": dict(self.new_by_kind),
            "conflicts": [c.to_dict() for c in self.conflicts],
            "summary": self.summary(),
        }


def _grouped(number: int) -> str:
    """Thousands separated by a space: 1649 -> '1 649'."""
    return f"{number:,}".replace(",", " ")


# --------------------------------------------------------------------------------------------- URLs


def _normalise_url(url: str | URL) -> URL:
    """Parse the URL and pick the installed driver for PostgreSQL (psycopg 3)."""
    try:
        parsed = parse_url(url)
    except MalformedUrl as exc:
        raise CatalogueError(f"catalogue URL {exc}; use {CATALOGUE_URL_FORMS}") from None
    backend = parsed.get_backend_name()
    if backend in ("postgresql", "postgres"):
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        return parsed
    raise CatalogueError(
        f"catalogue URL {redact_url(parsed)!r} uses {backend!r}; supported are sqlite:///path and "
        "postgresql+psycopg://user:password@host:port/database"
    )


# ------------------------------------------------------------------------------------------- store


@dataclass(frozen=True)
class _Row:
    digest: str
    kind: str
    name: str
    manifest: Mapping[str, Any]
    run_key: tuple[str, str] | None  # (source, externalId) of a BenchmarkRun


class CatalogueStore:
    """A catalogue of KernelIndex records. Open with :meth:`open`; use as a context manager or call close()."""

    def __init__(self, engine: Engine, url: URL) -> None:
        self._engine = engine
        self._url = url
        self.safe_url = redact_url(url)
        self.dialect = engine.dialect.name
        self._integrity_checked = False

    # ---------------------------------------------------------------- opening

    @classmethod
    def open(
        cls,
        url: str | URL | None = None,
        home: str | os.PathLike[str] | None = None,
        *,
        busy_timeout_s: float = 120.0,
        read_only: bool = False,
    ) -> CatalogueStore:
        """Open (and create if needed) the catalogue at `url`; None means the embedded SQLite file under
        `home` / $DAGSTER_HOME / ./.dagster_home. `busy_timeout_s` is how long an SQLite writer waits for
        another process's publication to finish.

        `read_only`: for readers (export, report). Nothing is created or written: an SQLite file is
        opened with `mode=ro` (and `immutable=1` when its directory is not writable, as on a read-only
        filesystem, where no writer can exist and SQLite could not create the WAL index), a PostgreSQL
        session is read-only. A missing catalogue is an error instead of a new empty one."""
        if url is None or str(url) == "":
            path = default_catalogue_path(home)
            parsed = URL.create("sqlite", database=str(path))
        else:
            parsed = _normalise_url(url)
        safe = redact_url(parsed)
        sqlite_file = parsed.get_backend_name() == "sqlite" and parsed.database not in (None, "", ":memory:")
        if sqlite_file and read_only and not Path(parsed.database).is_file():
            raise CatalogueError(f"no catalogue at {safe}: {parsed.database} does not exist")
        if sqlite_file and not read_only:
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)

        def connect() -> CatalogueStore:
            engine = _create_engine(parsed, busy_timeout_s, read_only=read_only)
            try:
                store = cls(engine, parsed)
                if read_only:
                    store._check_schema()
                else:
                    store._create_schema()
            except BaseException:
                engine.dispose()
                raise
            return store

        store = _guarded(parsed, f"cannot open the catalogue at {safe}", connect)
        log.info("catalogue opened: %s", safe)
        return store

    def _check_schema(self) -> None:
        with self._engine.connect() as conn:
            missing = set(metadata.tables) - set(inspect(conn).get_table_names())
        if missing:
            raise CatalogueError(
                f"{self.safe_url} is not a KernelIndex catalogue (no table {', '.join(sorted(missing))})"
            )

    def check_integrity(self) -> None:
        """Raise CatalogueError unless the database is intact (SQLite: `PRAGMA integrity_check`, which
        reads every page; PostgreSQL guards its own pages). Exports call it first, so a damaged
        catalogue is never exported as if it were whole."""
        if self.dialect != "sqlite" or self._integrity_checked:
            return
        problems = self._read(lambda conn: [row[0] for row in conn.exec_driver_sql("PRAGMA integrity_check(5)")])
        if problems != ["ok"]:
            problems = [p for p in problems if not p.startswith("*** in database")] or problems
            raise CatalogueError(
                f"the catalogue {self.safe_url} is damaged (SQLite integrity check: {'; '.join(problems)}); "
                "restore it from a backup or re-import it"
            )
        self._integrity_checked = True

    def _create_schema(self) -> None:
        with self._engine.connect() as conn:
            existing = set(inspect(conn).get_table_names())
        if existing >= set(metadata.tables):
            self._create_missing_indexes()
            return  # the usual case: no write lock needed just to open a catalogue
        # Under the publication lock, so two processes opening a fresh catalogue at once do not both
        # try to create the tables.
        with self._write_engine.begin() as conn:
            self._take_publication_lock(conn)
            metadata.create_all(conn, checkfirst=True)

    def _create_missing_indexes(self) -> None:
        """Indexes added after a catalogue was made (create_all adds tables, not an index of an existing one)."""
        with self._engine.connect() as conn:
            have = {index["name"] for index in inspect(conn).get_indexes(objects.name)}
        missing = [index for index in objects.indexes if index.name not in have]
        if missing:
            with self._write_engine.begin() as conn:
                self._take_publication_lock(conn)
                for index in missing:
                    index.create(conn, checkfirst=True)

    @property
    def _write_engine(self) -> Engine:
        return self._engine.execution_options(catalogue_write=True)

    def close(self) -> None:
        self._engine.dispose()

    def __enter__(self) -> CatalogueStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"CatalogueStore({self.safe_url!r})"

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (its repr hides the password too)."""
        return self._engine

    # ---------------------------------------------------------------- publishing

    def publish(
        self,
        manifests: Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]],
        *,
        partition: str,
        source: Any = None,
        report: Any = None,
    ) -> PublishResult:
        """Publish records in ONE transaction: insert each digest not yet present, keep the snapshot
        (`source`: a SourceSnapshot or its dict) and the import `report` (an ImportReport or its dict).

        `manifests` is a dict digest -> manifest (digests trusted, as the blocking checks recompute
        them) or an iterable of manifests (digests computed here). Nothing is written if anything fails.
        """
        rows = _prepare_rows(manifests)
        snapshot_doc = _as_document(source, "source")
        report_doc = _as_document(report, "report")
        started_at = _now()

        def transaction() -> PublishResult:
            with self._write_engine.begin() as conn:
                self._take_publication_lock(conn)
                return self._publish_in_transaction(conn, rows, partition, started_at, snapshot_doc, report_doc)

        result = _guarded(self._url, f"publishing partition {partition!r} into {self.safe_url} failed", transaction)
        log.info("published partition %s into %s: %s", partition, self.safe_url, result.summary())
        return result

    def _publish_in_transaction(
        self,
        conn: Connection,
        rows: list[_Row],
        partition: str,
        started_at: str,
        snapshot_doc: dict | None,
        report_doc: dict | None,
    ) -> PublishResult:
        snapshot_digest = report_digest = None
        if snapshot_doc is not None:
            snapshot_digest = self._keep_document(
                conn,
                source_snapshots,
                "snapshot",
                snapshot_doc,
                locator=_text_or_none(snapshot_doc.get("locator")),
                sha256=_text_or_none(snapshot_doc.get("sha256")),
            )
        if report_doc is not None:
            report_digest = self._keep_document(conn, import_reports, "report", report_doc)
        publication_id = conn.execute(
            publications.insert()
            .values(
                partition=partition,
                started_at=started_at,
                snapshot_digest=snapshot_digest,
                report_digest=report_digest,
            )
            .returning(publications.c.id)
        ).scalar_one()

        present = self._present(conn, [row.digest for row in rows])
        absent = [row for row in rows if row.digest not in present]
        accepted, conflicts = self._reconcile_run_identities(conn, absent)
        self._insert_records(conn, accepted, publication_id)

        new_by_kind = _ordered_counts(Counter(row.kind for row in accepted))
        result = PublishResult(
            new=len(accepted),
            already_present=len(present),
            new_by_kind=new_by_kind,
            conflicts=conflicts,
            publication_id=publication_id,
            partition=partition,
        )
        self._finish_publication(conn, result)
        return result

    def _keep_document(self, conn: Connection, table: Table, column: str, doc: dict, **columns: Any) -> str:
        """Store a document (a source snapshot, an import report) as canonical JSON under its digest,
        once per digest (`columns`: the table's other columns); returns the digest."""
        text = canonical_json(doc)
        digest = _sha256_digest(text)
        self._insert_absent(conn, table, [{"digest": digest, **columns, column: text}])
        return digest

    def _insert_records(self, conn: Connection, accepted: list[_Row], publication_id: int) -> None:
        """Insert the new records, first published by this publication, and the run identities of its runs."""
        self._insert_absent(
            conn,
            objects,
            [
                {
                    "digest": row.digest,
                    "kind": row.kind,
                    "name": row.name,
                    # canonical JSON only for what is new: a re-publication costs no serialisation
                    "manifest": canonical_json(row.manifest),
                    "first_publication_id": publication_id,
                }
                for row in accepted
            ],
        )
        self._insert_absent(
            conn,
            runs,
            [
                {"digest": row.digest, "source": row.run_key[0], "external_id": row.run_key[1]}
                for row in accepted
                if row.run_key is not None
            ],
        )

    def _finish_publication(self, conn: Connection, result: PublishResult) -> None:
        """Record the publication's end and what it brought (its counts and conflicts)."""
        conn.execute(
            update(publications)
            .where(publications.c.id == result.publication_id)
            .values(
                finished_at=_now(),
                new_count=result.new,
                already_present_count=result.already_present,
                conflict_count=len(result.conflicts),
                new_by_kind=canonical_json(result.new_by_kind),
                conflicts=canonical_json([c.to_dict() for c in result.conflicts]),
            )
        )

    def _reconcile_run_identities(self, conn: Connection, rows: list[_Row]) -> tuple[list[_Row], list[Conflict]]:
        """Drop runs whose (source, externalId) already belongs to another digest, in the catalogue or
        earlier in this same batch (first one wins)."""
        external_ids_by_source: dict[str, list[str]] = {}
        for row in rows:
            if row.run_key is not None:
                external_ids_by_source.setdefault(row.run_key[0], []).append(row.run_key[1])
        taken: dict[tuple[str, str], str] = {}
        # One source at a time, so that both databases look the keys up in the (source, external_id) index.
        for source, external_ids in external_ids_by_source.items():
            for chunk in _chunks(external_ids, BATCH_SIZE):
                statement = select(runs.c.external_id, runs.c.digest).where(
                    runs.c.source == source, runs.c.external_id.in_(chunk)
                )
                for external_id, digest in conn.execute(statement):
                    taken[(source, external_id)] = digest
        accepted: list[_Row] = []
        conflicts: list[Conflict] = []
        for row in rows:
            if row.run_key is not None:
                kept = taken.get(row.run_key)
                if kept is not None and kept != row.digest:
                    conflicts.append(Conflict(row.run_key[0], row.run_key[1], kept, row.digest))
                    continue
                taken[row.run_key] = row.digest
            accepted.append(row)
        return accepted, conflicts

    def _insert_absent(self, conn: Connection, table: Table, values: list[dict[str, Any]]) -> None:
        """INSERT … ON CONFLICT DO NOTHING, in batches (executemany)."""
        dialect_insert = postgresql_dialect.insert if self.dialect == "postgresql" else sqlite_dialect.insert
        statement = dialect_insert(table).on_conflict_do_nothing()
        for chunk in _chunks(values, BATCH_SIZE):
            conn.execute(statement, chunk)

    def _present(self, conn: Connection, digests: Iterable[str]) -> set[str]:
        found: set[str] = set()
        for chunk in _chunks(list(dict.fromkeys(digests)), BATCH_SIZE):
            found.update(conn.execute(select(objects.c.digest).where(objects.c.digest.in_(chunk))).scalars())
        return found

    def _take_publication_lock(self, conn: Connection) -> None:
        # SQLite already holds its write lock (BEGIN IMMEDIATE, see _create_engine).
        if self.dialect == "postgresql":
            conn.execute(select(func.pg_advisory_xact_lock(_PG_PUBLISH_LOCK)))

    # ---------------------------------------------------------------- reading

    def _read(self, query: Callable[[Connection], T]) -> T:
        def run() -> T:
            with self._engine.connect() as conn:
                return query(conn)

        return _guarded(self._url, f"reading {self.safe_url} failed", run)

    def present_digests(self, digests: Iterable[str]) -> set[str]:
        """The subset of `digests` that the catalogue holds."""
        return self._read(lambda conn: self._present(conn, digests))

    def manifests(self, kinds: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """Every manifest (or those of `kinds`), in KINDS order, then name, then digest (code-point
        order, the same on every database: byte order of UTF-8, SQLite's BINARY and PostgreSQL's "C").

        Streamed: the database sorts, rows arrive `STREAM_BATCH` at a time, so memory stays flat however
        large the catalogue (an export of a million runs holds a batch, never the catalogue)."""
        for _, manifest in self.records(kinds):
            yield manifest

    def records(
        self, kinds: Iterable[str] | None = None, *, publications: Iterable[int] | None = None
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """(digest, manifest) of every record, in the order and streamed as `manifests` (the stored digest:
        no recomputation). `publications`: only the records these publications first brought (ids of
        `publications()`; an incremental refresh reads what the publications since its last one added)."""
        by_bytes = (lambda column: column.collate("C")) if self.dialect == "postgresql" else (lambda column: column)
        rank = case({kind: i for i, kind in enumerate(KINDS)}, value=objects.c.kind, else_=len(KINDS))
        statement = select(objects.c.digest, objects.c.manifest).order_by(
            rank, by_bytes(objects.c.kind), by_bytes(objects.c.name), objects.c.digest
        )
        if kinds is not None:
            statement = statement.where(objects.c.kind.in_(list(kinds)))
        if publications is not None:
            statement = statement.where(objects.c.first_publication_id.in_(sorted(set(publications))))
        for digest, text in self._stream(statement):
            yield digest, json.loads(text)

    def runs_by_external_id(self, prefixes: Iterable[str]) -> Iterator[tuple[str, dict[str, Any], int]]:
        """(digest, manifest, first publication id) of every BenchmarkRun whose sourceNative.externalId starts
        with one of `prefixes`, in the order of `records` (name, then digest), streamed. Read through the
        ``runs`` table's (source, external_id) index, one range per source and prefix (`RANGES_PER_QUERY` to a
        statement: SQLite parses an OR of many as one deep expression), so a refresh reads the runs of a few
        run templates without parsing the catalogue's other manifests: their names and digests first, then
        their manifests `BATCH_SIZE` at a time in that order. Runs without a string source and externalId are
        not in that table, hence never here."""
        wanted = sorted({p for p in prefixes if p})
        if not wanted:
            return
        by_bytes = (lambda column: column.collate("C")) if self.dialect == "postgresql" else (lambda column: column)
        sources = self._read(lambda conn: [row[0] for row in conn.execute(select(runs.c.source).distinct())])
        ranges = []
        for source in sources:
            for prefix in wanted:
                within = by_bytes(runs.c.external_id) >= prefix
                if (upper := _prefix_upper_bound(prefix)) is not None:
                    within = within & (by_bytes(runs.c.external_id) < upper)
                ranges.append((runs.c.source == source) & within)
        if len(ranges) <= RANGES_PER_QUERY:  # one statement, streamed in the order it sorts
            statement = (
                select(objects.c.digest, objects.c.manifest, objects.c.first_publication_id)
                .join(runs, runs.c.digest == objects.c.digest)
                .where(or_(*ranges))
                .order_by(by_bytes(objects.c.name), objects.c.digest)
            )
            for digest, text, publication in self._stream(statement):
                yield digest, json.loads(text), publication
            return
        keys: set[tuple[str, str]] = set()
        for batch in _chunks(ranges, RANGES_PER_QUERY):
            statement = (
                select(objects.c.name, objects.c.digest)
                .join(runs, runs.c.digest == objects.c.digest)
                .where(or_(*batch))
            )
            keys.update(self._read(lambda conn, statement=statement: [tuple(row) for row in conn.execute(statement)]))
        # code-point order of (name, digest): the databases' byte order of `records` (SQLite BINARY, PostgreSQL "C")
        for chunk in _chunks(sorted(keys), BATCH_SIZE):
            statement = select(objects.c.digest, objects.c.manifest, objects.c.first_publication_id).where(
                objects.c.digest.in_([digest for _, digest in chunk])
            )
            found = self._read(
                lambda conn, statement=statement: {row[0]: (row[1], row[2]) for row in conn.execute(statement)}
            )
            for _, digest in chunk:
                text, publication = found[digest]
                yield digest, json.loads(text), publication

    def _stream(self, statement: Any) -> Iterator[Any]:
        """The rows of `statement`, fetched in batches over one connection (a server-side
        cursor on PostgreSQL); database errors become CatalogueError as in `_read`."""
        action = f"reading {self.safe_url} failed"
        conn = _guarded(self._url, action, self._engine.connect)
        try:
            result = _guarded(
                self._url,
                action,
                lambda: conn.execution_options(stream_results=True, yield_per=STREAM_BATCH).execute(statement),
            )
            while rows := _guarded(self._url, action, lambda: result.fetchmany(STREAM_BATCH)):
                yield from rows
        finally:
            conn.close()

    def acknowledge(self, marks: Iterable[Any]) -> int:
        """Keep each `detection.acknowledgements.Acknowledgement` (replacing an earlier mark of its
        change) in one transaction; how many."""
        rows = [
            {"change_id": m.change, "status": m.status, "fixed_in": m.fixed_in, "note": m.note, "by": m.by, "at": m.at}
            for m in marks
        ]

        def run() -> int:
            with self._write_engine.begin() as conn:
                if rows:
                    ids = [r["change_id"] for r in rows]
                    conn.execute(acknowledgements.delete().where(acknowledgements.c.change_id.in_(ids)))
                    conn.execute(acknowledgements.insert(), rows)
            return len(rows)

        return _guarded(self._url, f"writing acknowledgements to {self.safe_url} failed", run)

    def acknowledgements(self) -> list[dict[str, str]]:
        """Every acknowledgement kept, as rows (`detection.acknowledgements.from_rows` reads them)."""
        rows = self._read(lambda conn: conn.execute(select(acknowledgements)).mappings().all())
        return [dict(r) for r in rows]

    def content_fingerprint(self) -> str:
        """A fingerprint of the catalogue's content, cheap at any size: objects are insert-only and each
        remembers the publication that first brought it, so (how many, the newest such publication) changes
        exactly when a publication inserts something. Two catalogues with the same records but another
        publication history differ: it identifies a catalogue's state over time, not content across stores."""
        statement = select(func.count(), func.max(objects.c.first_publication_id))
        count, newest = self._read(lambda conn: conn.execute(statement).one())
        return "sha256:" + hashlib.sha256(f"objects={count};newest={newest}".encode()).hexdigest()

    def publications_with_records(self, after: int = 0) -> dict[int, str]:
        """Publication id -> partition of every publication after id `after` that brought new records, oldest
        first: what an incremental refresh has to read (`records(publications=...)`); {} when nothing new."""
        statement = (
            select(publications.c.id, publications.c.partition)
            .where(publications.c.id > after, publications.c.new_count > 0)
            .order_by(publications.c.id)
        )
        return self._read(lambda conn: {row[0]: row[1] for row in conn.execute(statement)})

    def newest_publication(self) -> int:
        """The id of the newest publication (0 for an empty catalogue): where an incremental refresh stands."""
        statement = select(func.coalesce(func.max(publications.c.id), 0))
        return int(self._read(lambda conn: conn.execute(statement).scalar_one()))

    def get(self, digest: str) -> dict[str, Any] | None:
        """The manifest with this digest, or None."""
        statement = select(objects.c.manifest).where(objects.c.digest == digest)
        text = self._read(lambda conn: conn.execute(statement).scalar_one_or_none())
        return None if text is None else json.loads(text)

    def counts_by_kind(self) -> dict[str, int]:
        """Objects per kind, every kind of KINDS listed (0 when absent), in KINDS order."""
        statement = select(objects.c.kind, func.count()).group_by(objects.c.kind)
        counts = self._read(lambda conn: {kind: count for kind, count in conn.execute(statement)})
        return {kind: counts.get(kind, 0) for kind in KINDS} | _ordered_counts(
            {kind: n for kind, n in counts.items() if kind not in KINDS}
        )

    def run_publications(self) -> dict[str, int]:
        """Each BenchmarkRun's digest -> the id of the publication that first published it (where it came from:
        that publication's source snapshot names the file)."""
        statement = select(objects.c.digest, objects.c.first_publication_id).where(objects.c.kind == "BenchmarkRun")
        return self._read(lambda conn: {row[0]: row[1] for row in conn.execute(statement)})

    def publications(self, partition: str | None = None) -> list[dict[str, Any]]:
        """The publication log (oldest first), optionally for one partition, each with its source
        snapshot and import report (None when the publication had none)."""
        statement = (
            select(publications, source_snapshots.c.snapshot, import_reports.c.report)
            .outerjoin(source_snapshots, publications.c.snapshot_digest == source_snapshots.c.digest)
            .outerjoin(import_reports, publications.c.report_digest == import_reports.c.digest)
            .order_by(publications.c.id)
        )
        if partition is not None:
            statement = statement.where(publications.c.partition == partition)
        rows = self._read(lambda conn: conn.execute(statement).mappings().all())
        return [
            {
                "id": row["id"],
                "partition": row["partition"],
                "startedAt": row["started_at"],
                "finishedAt": row["finished_at"],
                "new": row["new_count"],
                "alreadyPresent": row["already_present_count"],
                "newByKind": json.loads(row["new_by_kind"]),
                "conflicts": json.loads(row["conflicts"]),
                "snapshotDigest": row["snapshot_digest"],
                "snapshot": None if row["snapshot"] is None else json.loads(row["snapshot"]),
                "reportDigest": row["report_digest"],
                "report": None if row["report"] is None else json.loads(row["report"]),
            }
            for row in rows
        ]


# ------------------------------------------------------------------------------------------ helpers


def _create_engine(url: URL, busy_timeout_s: float, *, read_only: bool = False) -> Engine:
    if url.get_backend_name() == "postgresql":
        # Secrets in the query string (libpq accepts `?password=`, `?sslpassword=`) leave the URL the
        # engine keeps, whose repr SQLAlchemy shows with only the password hidden: the password becomes
        # the URL's password (libpq lets the query one win), the others go to the driver as arguments.
        secret_keys = [key for key in url.query if is_secret_parameter(key)]
        connect_args: dict[str, Any] = {key: url.query[key] for key in secret_keys if key != "password"}
        if isinstance(url.query.get("password"), str):
            url = url.set(password=url.query["password"])
        url = url.difference_update_query(secret_keys)
        # No server-side prepared statements: a generic plan for "digest IN (500 parameters)" is a
        # sequential scan, hundreds of times slower than the index lookups of a custom plan.
        connect_args["prepare_threshold"] = None
        engine = create_engine(url, pool_pre_ping=True, hide_parameters=True, connect_args=connect_args)
        return engine.execution_options(postgresql_readonly=True) if read_only else engine

    if read_only and url.database not in (None, "", ":memory:"):
        path = Path(url.database).resolve()
        # A read-only filesystem (or directory) cannot hold the -shm file a WAL reader needs; nobody
        # can be writing there either, so the file is opened as immutable.
        flag = "mode=ro" if os.access(path.parent, os.W_OK) else "immutable=1"
        uri = f"{path.as_uri()}?{flag}"
        engine = create_engine(
            "sqlite://", creator=lambda: sqlite3.connect(uri, uri=True, timeout=busy_timeout_s), hide_parameters=True
        )
    else:
        engine = create_engine(url, connect_args={"timeout": busy_timeout_s}, hide_parameters=True)

    @event.listens_for(engine, "connect")
    def _configure_sqlite(dbapi_connection, _record):  # noqa: ANN001 - DBAPI objects
        # Let SQLAlchemy (not the sqlite3 module) decide where transactions begin, so that a
        # publication can start with BEGIN IMMEDIATE: it takes the write lock up front and waits
        # (busy timeout) for another writer instead of failing when upgrading a read lock.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        if not read_only:  # setting the journal mode is a write
            _enter_wal_mode(cursor, url, busy_timeout_s)  # readers never block the writer, and vice versa
            cursor.execute("PRAGMA synchronous = FULL")  # a committed publication survives power loss
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        if conn.get_execution_options().get("catalogue_write"):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")

    return engine


def _enter_wal_mode(cursor: sqlite3.Cursor, url: URL, busy_timeout_s: float) -> None:
    """Switch the SQLite file to WAL (a persistent property of the file, so this is a no-op once any
    connection has done it). SQLite does not call its busy handler for the switch: it upgrades a read
    lock to a write lock, and to avoid a deadlock it answers SQLITE_BUSY at once while another
    connection holds any lock. Processes opening a fresh catalogue together hit exactly that (a CI run
    failed on it), so the switch is retried, within the same busy timeout, until it succeeds or
    another connection has made it. By hand because it is one statement's retry on one error code,
    bounded by a deadline the caller already chose."""
    deadline = time.monotonic() + busy_timeout_s
    pause_s = 0.005
    told = False
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            busy = (getattr(exc, "sqlite_errorcode", 0) & 0xFF) == sqlite3.SQLITE_BUSY  # extended codes too
            if not busy or time.monotonic() >= deadline:
                raise
            if not told:
                log.info("catalogue %s is locked by another connection; waiting to switch it to WAL", redact_url(url))
                told = True
        time.sleep(pause_s)
        pause_s = min(pause_s * 2, 0.1)


def _guarded(url: URL, action: str, operation: Callable[[], T]) -> T:
    """Run `operation`; turn a database error into CatalogueError whose message has the password
    replaced. It is raised outside the `except` block so that the original error, whose driver
    message may echo connection details, is neither its cause nor its context."""
    try:
        return operation()
    except (SQLAlchemyError, OSError) as exc:
        detail = scrub(" ".join(str(exc).split()), url_secrets(url))
        error = CatalogueError(f"{action}: {type(exc).__name__}: {detail}")
    raise error


def _prepare_rows(manifests: Mapping[str, Mapping[str, Any]] | Iterable[Mapping[str, Any]]) -> list[_Row]:
    if isinstance(manifests, Mapping):
        pairs = list(manifests.items())
    else:
        pairs = [(None, manifest) for manifest in manifests]
    rows: dict[str, _Row] = {}
    for position, (digest, manifest) in enumerate(pairs):
        where = f"manifest #{position}" + (f" ({digest})" if digest else "")
        if not isinstance(manifest, Mapping):
            raise CatalogueError(f"{where} is a {type(manifest).__name__}, not a manifest object")
        kind = manifest.get("kind")
        name = (manifest.get("metadata") or {}).get("name")
        if not isinstance(kind, str) or not isinstance(name, str) or not isinstance(manifest.get("spec"), Mapping):
            raise CatalogueError(
                f"{where} lacks kind, metadata.name or spec; publish only validated records (records.schema.ensure_valid)"
            )
        if kind not in KINDS:
            raise CatalogueError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
        if digest is None:
            digest = digest_of(manifest)
        elif not _DIGEST_RE.match(digest):
            raise CatalogueError(f"{where} of {kind}/{name}: the key must be 'sha256:<64 hex>', got {digest!r}")
        if digest in rows:
            continue  # same content twice in one batch: keep the first
        rows[digest] = _Row(
            digest=digest,
            kind=kind,
            name=name,
            manifest=manifest,
            run_key=_run_key(manifest) if kind == RUN_KIND else None,
        )
    return list(rows.values())


def _run_key(manifest: Mapping[str, Any]) -> tuple[str, str] | None:
    native = manifest["spec"].get("sourceNative") or {}
    source, external_id = native.get("source"), native.get("externalId")
    if isinstance(source, str) and isinstance(external_id, str):
        return source, external_id
    return None


def _as_document(value: Any, what: str) -> dict | None:
    if value is None:
        return None
    if hasattr(value, "to_dict"):
        value = value.to_dict()
    if not isinstance(value, Mapping):
        raise CatalogueError(
            f"publish(..., {what}=...) takes an object with .to_dict() or a dict, not {type(value).__name__}"
        )
    return dict(value)


def _sha256_digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def _text_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _kind_rank(kind: str) -> int:
    return KINDS.index(kind) if kind in KINDS else len(KINDS)


def _ordered_counts(counts: Mapping[str, int]) -> dict[str, int]:
    return {kind: counts[kind] for kind in sorted(counts, key=lambda k: (_kind_rank(k), k))}


def _prefix_upper_bound(prefix: str) -> str | None:
    """The least string above every string that starts with `prefix` (code-point order), None where there is
    none (a prefix of only the highest code point)."""
    stripped = prefix.rstrip(chr(0x10FFFF))
    if not stripped:
        return None
    return stripped[:-1] + chr(ord(stripped[-1]) + 1)


def _chunks(items: list, size: int) -> Iterator[list]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
