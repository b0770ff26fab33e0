"""The catalogue export written per publication (issue 33): a refresh writes what the night added, not the catalogue.

The unit is a *part*: the records one publication first brought (`CatalogueStore.records(publications=[id])`).
Objects are insert-only, so a part's records never change, and nor do its files; a publication that brought
nothing (a republication) has no part. Under the export folder:

- ``jsonl/part-<id>.jsonl``: the part's records, one canonical (RFC 8785) manifest per line, in the catalogue's
  order (KINDS, name, digest) within the part (the line format of ``kernelindex-catalogue.jsonl``);
- ``tables/records/part-<id>.parquet``, ``tables/workloads/...``, ``tables/environments/...``: the part's rows of
  catalogue/tables.py's small tables (``records`` adds ``publication``: the part, and ``line``: the 1-based line in
  that part's JSON Lines file); a part without workloads (environments) writes no such file;
- ``tables/runs/source=<s>/gpu=<g>/liger_version=<v>/part-<id>.parquet``: its BenchmarkRuns, a hive-partitioned
  Parquet dataset (``pyarrow.dataset.dataset("tables/runs", partitioning="hive")``, or pandas' ``read_parquet``
  of the folder); the three partition columns live in the paths, not in the files (a missing value is
  ``__HIVE_DEFAULT_PARTITION__``, read back as null);
- ``kernelindex-acknowledgements.jsonl``: the regressions marked known, whole (a small table that changes without a
  publication);
- ``kernelindex-catalogue.parts.json`` (`MANIFEST_NAME`): every part (publication id, partition, records by kind)
  and every file (path, bytes, sha256, lines or rows), the totals, the name collisions, apiVersion, generatedAt.

`export_parts` is incremental: it writes the parts of publications the manifest does not list, checks the ones it
lists (each file present with its size; every sha256 with ``verify="sha256"``), rewrites a part that is missing or
damaged (a warning), drops parts the catalogue no longer has, and writes the manifest last, atomically, before it
removes anything: a killed export leaves the previous manifest, whose files are all still there. Every file's bytes
depend only on the catalogue's content, so an incremental export and a rebuild into a fresh folder (or
``rebuild=True``) give the same files, the manifest's generatedAt aside. A night that added nothing reads the
publication log and stats the files, and rewrites nothing.

The name collisions (records sharing kind and metadata.name: KernelIndex cuts names at 100 characters) are counted
over the whole catalogue from the parts' ``records`` tables (two columns of Parquet, read again only when a part was
written or removed). One file for consumers who want one: `export_jsonl` / `export_bundle` (``kernelindex-pipeline
export --out DIR``), the catalogue's order over all parts.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from kernelindex_pipeline.imports.archive import sha256_file
from kernelindex_pipeline.records.canonical import API_VERSION, canonical_json
from kernelindex_pipeline.records.schema import KINDS

from . import tables
from .export import (
    ACKNOWLEDGEMENTS_NAME,
    BUNDLE_NAME,
    JSONL_MANIFEST_NAME,
    JSONL_NAME,
    NameCollisions,
    _by_kind,
    _write_atomically,
)
from .store import CatalogueStore

MANIFEST_NAME = "kernelindex-catalogue.parts.json"
LAYOUT = "kernelindex-pipeline/parts-v1"  # the manifest's `layout`: another value is rebuilt, never read as this one
JSONL_DIR = "jsonl"
TABLES_DIR = "tables"
RECORDS, WORKLOADS, ENVIRONMENTS, RUNS = "records", "workloads", "environments", "runs"
RUNS_DATASET = f"{TABLES_DIR}/{RUNS}"  # the runs' hive-partitioned dataset, a folder
RUN_PARTITIONING = ("source", "gpu", "liger_version")
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"  # pyarrow's (and Hive's) name of a missing partition value
# the whole-catalogue files of the layout before parts: stale in a parts folder, so removed from it
SINGLE_FILES = (
    JSONL_NAME,
    JSONL_MANIFEST_NAME,
    BUNDLE_NAME,
    tables.RECORDS_TABLE,
    tables.RUNS_TABLE,
    tables.WORKLOADS_TABLE,
    tables.ENVIRONMENTS_TABLE,
)
VERIFY = ("size", "sha256")


def part_name(publication: int) -> str:
    """``part-00000042``: zero-padded, so the files sort in publication order."""
    return f"part-{publication:08d}"


@dataclass
class PartsResult:
    """What one `export_parts` did: the parts written (new, or rewritten and why), kept and removed."""

    manifest_path: Path
    records: int
    records_by_kind: dict[str, int]
    parts: list[int]  # every part the manifest lists, oldest first
    written: list[int] = field(default_factory=list)  # parts written: publications the manifest did not list
    repaired: dict[int, str] = field(default_factory=dict)  # listed parts rewritten -> why (missing, damaged, ...)
    removed: list[int] = field(default_factory=list)  # parts of publications the catalogue no longer has
    kept: list[int] = field(default_factory=list)
    manifest_written: bool = False
    rebuild: str | None = None  # why every part was written (no manifest, rebuild asked, another layout)
    warnings: list[str] = field(default_factory=list)
    removed_files: int = 0  # files no part lists any more (removed parts, earlier layouts, killed exports' leftovers)
    table_rows: dict[str, int] = field(default_factory=dict)  # table -> rows over every part
    manifest_reason: str = ""  # why the manifest changed when no part did (acknowledgements, a republication)

    def recomputed(self) -> str:
        """One honest line: how many parts written vs kept, and why (the asset's `recomputed` metadata)."""
        total = len(self.parts)
        fresh = len(self.written) + len(self.repaired)  # written and repaired are disjoint
        if self.rebuild:
            head = (
                f"all {total} parts written ({self.rebuild})" if total != 1 else f"the 1 part written ({self.rebuild})"
            )
        else:
            reasons = []
            if self.written:
                reasons.append(f"new publications {_ids(self.written)}")
            if self.repaired:
                reasons.append(f"repaired {_ids(sorted(self.repaired))}")
            head = f"{fresh} of {total} parts written" + (f" ({'; '.join(reasons)})" if reasons else "")
            head += f", {len(self.kept)} kept"
        if self.removed:
            head += f", {len(self.removed)} removed (publications {_ids(self.removed)} no longer in the catalogue)"
        if not self.manifest_written:
            return head + "; manifest unchanged (nothing new)"
        return head + "; manifest rewritten" + (f" ({self.manifest_reason})" if self.manifest_reason else "")


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids)) if len(ids) <= 6 else f"{ids[0]}..{ids[-1]} ({len(ids)})"


def export_parts(
    store: CatalogueStore,
    out_dir: str | os.PathLike[str],
    *,
    rebuild: bool = False,
    verify: str = "size",
    generated_at: datetime | None = None,
    log: Callable[[str], None] | None = None,
) -> PartsResult:
    """Bring the per-publication export in `out_dir` (created if missing) up to the catalogue: see the module's
    docstring. `rebuild`: write every part afresh (the files are the same bytes). `verify`: how a listed part's
    files are checked, "size" (stat only) or "sha256" (read every file). `log`: where warnings go, also kept in
    the result. A catalogue is integrity-checked (`CatalogueStore.check_integrity`) when every part is written;
    an incremental export reads only the new publications' rows (SQLite reports a damaged page it reads)."""
    if verify not in VERIFY:
        raise ValueError(f"verify must be one of {VERIFY}, not {verify!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / MANIFEST_NAME
    warnings: list[str] = []

    def warn(message: str) -> None:
        warnings.append(message)
        if log is not None:
            log(message)

    previous, why_rebuild = _previous(manifest_path, rebuild, warn)
    if why_rebuild:
        store.check_integrity()
    wanted = store.publications_with_records()  # publication id -> partition, oldest first
    listed = {part["publication"]: part for part in previous.get("parts", [])}
    result = PartsResult(manifest_path, 0, {}, list(wanted), rebuild=why_rebuild, warnings=warnings)
    lookups: tuple[_Rows, _Rows] | None = None
    parts = []
    for publication, partition in wanted.items():
        old = listed.get(publication)
        problem = None
        if old is not None:
            problem = _check(out, old, partition, verify)
            if problem is None:
                parts.append(old)
                result.kept.append(publication)
                continue
            result.repaired[publication] = problem
            warn(f"part {publication} ({partition}): {problem}; rewritten")
        else:
            result.written.append(publication)
        lookups = lookups or _references(store)
        parts.append(_write_part(store, out, publication, partition, lookups))
    result.removed = sorted(set(listed) - set(wanted))

    marks = sorted(store.acknowledgements(), key=lambda row: (row["at"], row["change_id"]))
    acknowledgements = _acknowledgements(out, marks)
    changed = bool(why_rebuild or result.written or result.repaired or result.removed)
    collisions = _collisions(out, parts) if changed or "nameCollisions" not in previous else previous["nameCollisions"]
    counts: Counter[str] = Counter()
    for part in parts:
        counts.update(part["recordsByKind"])
    result.records, result.records_by_kind = sum(counts.values()), _by_kind(counts)
    description = {
        "layout": LAYOUT,
        "apiVersion": API_VERSION,
        "generatedAt": None,
        "records": result.records,
        "recordsByKind": result.records_by_kind,
        "newestPublication": store.newest_publication(),
        "tables": {
            name: {
                "path": f"{TABLES_DIR}/{name}",
                "rows": sum(f.get("rows", 0) for part in parts for f in part["files"] if f["table"] == name),
                **({"partitioning": list(RUN_PARTITIONING), "flavor": "hive"} if name == RUNS else {}),
            }
            for name in (RECORDS, WORKLOADS, ENVIRONMENTS, RUNS)
        },
        "nameCollisions": collisions,
        "acknowledgements": acknowledgements,
        "parts": parts,
    }
    result.table_rows = {name: table["rows"] for name, table in description["tables"].items()}
    if previous and not changed:
        result.manifest_reason = ", ".join(
            what
            for what, key in (
                ("acknowledgements changed", "acknowledgements"),
                ("newer publications", "newestPublication"),
            )
            if previous.get(key) != description[key]
        )
    if {**previous, "generatedAt": None} != description:
        stamp = (generated_at or datetime.now(UTC)).astimezone(UTC)
        description["generatedAt"] = stamp.isoformat(timespec="seconds").replace("+00:00", "Z")
        text = json.dumps(description, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"
        _write_atomically(manifest_path, [text])  # last: the files it lists are all in place
        result.manifest_written = True
    # after the manifest: until it is replaced, the previous one may still list what goes now
    result.removed_files = _remove_unlisted(out, parts, acknowledgements)
    return result


def _previous(path: Path, rebuild: bool, warn: Callable[[str], None]) -> tuple[dict[str, Any], str | None]:
    """(the manifest of the previous export, or {}; why every part is written, or None)."""
    if rebuild:
        return {}, "rebuild asked"
    if not path.is_file():
        return {}, "no manifest: a first export"
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        warn(f"{path.name} unreadable ({error}): every part rewritten")
        return {}, "the manifest was unreadable"
    if not isinstance(previous, dict) or previous.get("layout") != LAYOUT or previous.get("apiVersion") != API_VERSION:
        found = previous.get("layout") if isinstance(previous, dict) else None
        return {}, f"the manifest is of another layout ({found})"
    return previous, None


def _check(out: Path, part: dict[str, Any], partition: str, verify: str) -> str | None:
    """Why a listed part must be rewritten (None: it stands)."""
    if part.get("partition") != partition:
        return f"its publication is now of partition {partition}, not {part.get('partition')}"
    for entry in part["files"]:
        path = out / entry["path"]
        try:
            size = path.stat().st_size
        except OSError:
            return f"{entry['path']} missing"
        if size != entry["bytes"]:
            return f"{entry['path']} damaged ({size} bytes, {entry['bytes']} listed)"
        if verify == "sha256" and sha256_file(path) != entry["sha256"]:
            return f"{entry['path']} damaged (sha256 differs from the manifest's)"
    return None


class _Rows:
    """Rows of the workloads (or environments) that runs refer to, as of a part: those the part itself brought or an
    earlier publication did (a reference to a record published later stays unresolved, so a part's rows never
    depend on what came after it, and an incremental export equals a rebuild)."""

    def __init__(self, found: dict[str, tuple[int, dict]]) -> None:
        self.found = found  # digest -> (the publication that first brought it, its row)
        self.publication = 0  # the part being written

    def add(self, digest: str, row: dict) -> None:
        self.found[digest] = (self.publication, row)

    def get(self, digest: str, default: Any = None) -> Any:
        publication, row = self.found.get(digest or "", (0, None))
        return row if row and publication <= self.publication else default


def _references(store: CatalogueStore) -> tuple[_Rows, _Rows]:
    """Every workload's and environment's row with its first publication, read once (through the kind index: a few
    thousand records however many runs) before any part is streamed: a read inside a part's stream would nest."""
    from sqlalchemy import select

    from .store import objects

    made = {"WorkloadCase": tables.workload_row, "ExecutionEnvironment": tables.environment_row}
    found: dict[str, dict[str, tuple[int, dict]]] = {kind: {} for kind in made}
    statement = select(objects.c.kind, objects.c.digest, objects.c.first_publication_id, objects.c.manifest).where(
        objects.c.kind.in_(list(made))
    )
    with store.engine.connect() as conn:
        for kind, digest, publication, text in conn.execute(statement):
            found[kind][digest] = (publication, made[kind](digest, json.loads(text)))
    return _Rows(found["WorkloadCase"]), _Rows(found["ExecutionEnvironment"])


def _write_part(
    store: CatalogueStore, out: Path, publication: int, partition: str, lookups: tuple[_Rows, _Rows]
) -> dict[str, Any]:
    """Write one part's files (each through a temporary name); its manifest entry."""
    name = part_name(publication)
    schemas = tables._schemas()
    run_schema = schemas[tables.RUNS_TABLE]
    for column in RUN_PARTITIONING:
        run_schema = run_schema.remove(run_schema.get_field_index(column))
    record_schema = schemas[tables.RECORDS_TABLE]
    record_schema = record_schema.insert(record_schema.get_field_index("line"), _int_field("publication"))
    opened: dict[str, tables._Table] = {}

    def table(relative: str, schema: Any) -> tables._Table:
        if relative not in opened:
            path = out / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            opened[relative] = tables._Table(path, schema)
        return opened[relative]

    workloads, environments = lookups
    workloads.publication = environments.publication = publication
    counts: Counter[str] = Counter()
    records_path = f"{TABLES_DIR}/{RECORDS}/{name}.parquet"

    def lines() -> Iterator[bytes]:
        for line, (digest, manifest) in enumerate(store.records(publications=[publication]), start=1):
            kind = manifest.get("kind")
            counts[kind] += 1
            row = {"digest": digest, "kind": kind, "name": (manifest.get("metadata") or {}).get("name")}
            table(records_path, record_schema).add({**row, "publication": publication, "line": line})
            if kind == "WorkloadCase":
                workloads.add(digest, row := tables.workload_row(digest, manifest))
                table(f"{TABLES_DIR}/{WORKLOADS}/{name}.parquet", schemas[tables.WORKLOADS_TABLE]).add(row)
            elif kind == "ExecutionEnvironment":
                environments.add(digest, row := tables.environment_row(digest, manifest))
                table(f"{TABLES_DIR}/{ENVIRONMENTS}/{name}.parquet", schemas[tables.ENVIRONMENTS_TABLE]).add(row)
            elif kind == "BenchmarkRun":
                row = tables.run_row(digest, manifest, workloads, environments)
                where = "/".join(f"{column}={_segment(row.pop(column))}" for column in RUN_PARTITIONING)
                table(f"{TABLES_DIR}/{RUNS}/{where}/{name}.parquet", run_schema).add(row)
            yield canonical_json(manifest).encode("utf-8") + b"\n"

    jsonl_path = f"{JSONL_DIR}/{name}.jsonl"
    (out / JSONL_DIR).mkdir(parents=True, exist_ok=True)
    try:
        jsonl_sha256 = _write_atomically(out / jsonl_path, lines())
        for written in opened.values():
            written.close()
    except BaseException:
        for written in opened.values():
            written.abandon()
        raise
    files = [
        {
            "path": jsonl_path,
            "table": None,
            "bytes": (out / jsonl_path).stat().st_size,
            "sha256": jsonl_sha256,
            "lines": sum(counts.values()),
        }
    ]
    for relative in sorted(opened):
        path = out / relative
        files.append(
            {
                "path": relative,
                "table": relative.split("/")[1],
                "bytes": path.stat().st_size,
                "sha256": sha256_file(path),
                "rows": opened[relative].rows,
            }
        )
    return {
        "publication": publication,
        "partition": partition,
        "records": sum(counts.values()),
        "recordsByKind": {kind: counts[kind] for kind in KINDS if counts[kind]}
        | {kind: n for kind, n in sorted(counts.items()) if kind not in KINDS},
        "files": files,
    }


def _int_field(name: str) -> Any:
    import pyarrow as pa

    return pa.field(name, pa.int64())


def _segment(value: Any) -> str:
    """A hive path segment's value: percent-encoded as pyarrow's `segment_encoding="uri"` reads it back."""
    return HIVE_NULL if value is None or value == "" else quote(str(value), safe="")


def _acknowledgements(out: Path, marks: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Write the acknowledgements file when its bytes change (removed when there are none); its manifest entry."""
    path = out / ACKNOWLEDGEMENTS_NAME
    if not marks:
        return None
    data = b"".join(json.dumps(m, sort_keys=True).encode() + b"\n" for m in marks)
    if not (path.is_file() and path.read_bytes() == data):
        _write_atomically(path, [data])
    return {"file": ACKNOWLEDGEMENTS_NAME, "lineCount": len(marks), "sha256": hashlib.sha256(data).hexdigest()}


def _collisions(out: Path, parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The whole catalogue's name collisions, from the parts' records tables: the counts and examples that
    `NameCollisions` gives streaming the catalogue in its order (`export_jsonl`'s manifest file), computed from two
    Parquet columns (and the digests of the examples' names only)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as ds

    paths = [str(out / f["path"]) for part in parts for f in part["files"] if f["table"] == RECORDS]
    found: list[tuple[str, str, int]] = []
    digests: dict[tuple[str, str], list[str]] = {}
    if paths:
        dataset = ds.dataset(paths, format="parquet")
        grouped = dataset.to_table(columns=["kind", "name"]).group_by(["kind", "name"]).aggregate([("name", "count")])
        shared = grouped.filter(pc.greater(grouped["name_count"], 1))
        rank = {kind: i for i, kind in enumerate(KINDS)}
        found = sorted(
            zip(shared["kind"].to_pylist(), shared["name"].to_pylist(), shared["name_count"].to_pylist(), strict=True),
            key=lambda t: (rank.get(t[0], len(KINDS)), t[0], t[1]),  # the catalogue's order: str order is UTF-8's
        )
        examples = {(kind, name) for kind, name, _ in found[: NameCollisions.EXAMPLES]}
        if examples:
            rows = dataset.to_table(
                columns=["kind", "name", "digest"], filter=pc.field("name").isin(sorted({n for _, n in examples}))
            )
            for kind, name, digest in zip(*(rows[c].to_pylist() for c in ("kind", "name", "digest")), strict=True):
                if (kind, name) in examples:
                    digests.setdefault((kind, name), []).append(digest)
    by_kind: Counter[str] = Counter()
    for kind, _, count in found:
        by_kind[kind] += count
    return {
        "records": sum(by_kind.values()),
        "names": len(found),
        "byKind": dict(sorted(by_kind.items())),
        "examples": [
            {"kind": kind, "name": name, "records": count, "digests": sorted(digests[(kind, name)])[:5]}
            for kind, name, count in found[: NameCollisions.EXAMPLES]
        ],
        "note": "metadata.name is KernelIndex's (cut at 100 characters), so names can repeat; "
        f"key on digests ({TABLES_DIR}/{RECORDS}, {TABLES_DIR}/{RUNS})",
    }


def _remove_unlisted(out: Path, parts: list[dict[str, Any]], acknowledgements: dict[str, Any] | None) -> int:
    """Remove what the manifest no longer lists under jsonl/ and tables/ (parts gone, leftovers of a killed export,
    empty hive folders), the acknowledgements file when there are none, and the single files of the layout before
    parts; how many files."""
    listed = {f["path"] for part in parts for f in part["files"]}
    removed = 0
    for root in (JSONL_DIR, TABLES_DIR):
        base = out / root
        if not base.is_dir():
            continue
        for folder, _subfolders, names in os.walk(base, topdown=False):
            for name in names:
                path = Path(folder, name)
                if path.relative_to(out).as_posix() not in listed:
                    path.unlink()
                    removed += 1
            if folder != str(base) and not os.listdir(folder):
                os.rmdir(folder)
    stale = list(SINGLE_FILES) + ([] if acknowledgements else [ACKNOWLEDGEMENTS_NAME])
    for name in stale:
        path = out / name
        if path.is_file():
            path.unlink()
            removed += 1
    return removed
