"""Exports of the whole catalogue as files.

- JSON Lines: one canonical (RFC 8785) manifest per line, in KINDS order, then name, then digest, plus a
  small manifest file beside it (file name, sha256, line count, generated-at). The JSON Lines bytes
  depend only on the catalogue's content, so two exports of the same content are byte-identical
  (whether it lives in SQLite or PostgreSQL).
- Submission bundle: multi-document YAML, one document per group in dependency order
  (projects, operations, workloads, implementations, protocols, environments, runs), each
  ``{<group>: [manifest, ...]}``; also byte-stable.

Files are written to a temporary name and renamed into place, so a failed export never leaves a
truncated file under the final name.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kernelindex_pipeline.records import yaml12
from kernelindex_pipeline.records.canonical import API_VERSION, canonical_json
from kernelindex_pipeline.records.io import BUNDLE_GROUPS as KIND_OF_BUNDLE_GROUP
from kernelindex_pipeline.records.schema import KINDS
from kernelindex_pipeline.records.yaml_block import BlockWriter

from .store import CatalogueStore

JSONL_NAME = "kernelindex-catalogue.jsonl"
JSONL_MANIFEST_NAME = "kernelindex-catalogue.jsonl.manifest.json"
BUNDLE_NAME = "kernelindex-catalogue.bundle.yaml"
ACKNOWLEDGEMENTS_NAME = "kernelindex-acknowledgements.jsonl"  # regressions marked known (reporting/acknowledgements)

# The submission bundle's group of each kind, in the dependency order of KINDS: the reader's table
# (records.io, the one home of the group names) read the other way, so what we write it parses back.
BUNDLE_GROUPS: dict[str, str] = {kind: group for group, kind in KIND_OF_BUNDLE_GROUP.items()}
assert tuple(BUNDLE_GROUPS) == tuple(KINDS), "bundle groups must follow records.schema.KINDS"

# libyaml's emitter when PyYAML has it (several times faster; the same bytes as the pure-Python one,
# tests/catalogue/test_export.py checks it), quoting every string a YAML 1.2 reader would read as a
# number, boolean or null (records/yaml12.py): KernelIndex reads YAML 1.2.
_DUMPER = yaml12.SafeDumper


@dataclass(frozen=True)
class ExportResult:
    """One exported file."""

    path: Path
    sha256: str  # hex digest of the file's bytes
    records: int
    records_by_kind: dict[str, int] = field(default_factory=dict)
    manifest_path: Path | None = None  # the JSON Lines export's small manifest file

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "sha256": self.sha256,
            "records": self.records,
            "recordsByKind": dict(self.records_by_kind),
            "manifestPath": None if self.manifest_path is None else str(self.manifest_path),
        }


def export_jsonl(
    store: CatalogueStore, out_dir: str | os.PathLike[str], *, generated_at: datetime | None = None
) -> ExportResult:
    """Write ``kernelindex-catalogue.jsonl`` (one canonical manifest per line) and its manifest file
    ``kernelindex-catalogue.jsonl.manifest.json`` into `out_dir` (created if missing). A damaged
    catalogue raises CatalogueError first (`CatalogueStore.check_integrity`)."""
    store.check_integrity()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts: Counter[str] = Counter()
    collisions = NameCollisions()

    def lines() -> Iterable[bytes]:
        for digest, manifest in store.records():
            counts[manifest["kind"]] += 1
            collisions.see(manifest["kind"], (manifest.get("metadata") or {}).get("name", ""), digest)
            yield canonical_json(manifest).encode("utf-8") + b"\n"

    path = out / JSONL_NAME
    sha256 = _write_atomically(path, lines())
    records = sum(counts.values())
    stamp = (generated_at or datetime.now(UTC)).astimezone(UTC)
    description = {
        "file": JSONL_NAME,
        "sha256": sha256,
        "lineCount": records,
        "generatedAt": stamp.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "apiVersion": API_VERSION,
        "recordsByKind": _by_kind(counts),
        "nameCollisions": collisions.to_dict(),
    }
    marks = sorted(store.acknowledgements(), key=lambda row: (row["at"], row["change_id"]))
    if marks:  # beside the records, not among them: they are the catalogue's own notes, not KernelIndex kinds
        _write_atomically(out / ACKNOWLEDGEMENTS_NAME, (json.dumps(m, sort_keys=True).encode() + b"\n" for m in marks))
        description["acknowledgements"] = {"file": ACKNOWLEDGEMENTS_NAME, "lineCount": len(marks)}
    manifest_path = out / JSONL_MANIFEST_NAME
    _write_atomically(manifest_path, [json.dumps(description, indent=2, ensure_ascii=False).encode("utf-8") + b"\n"])
    return ExportResult(path, sha256, records, _by_kind(counts), manifest_path)


class NameCollisions:
    """Records that share (kind, metadata.name) with another: KernelIndex cuts names at 100 characters, and we
    keep its names (reference parity), so the export's manifest file says how many collide; tables and joins key
    on digests. Counted while streaming: the catalogue's order (kind, name, digest) puts equal names next to each
    other, so only the current name's digests are held."""

    EXAMPLES = 10

    def __init__(self) -> None:
        self.by_kind: Counter[str] = Counter()
        self.names = 0
        self.examples: list[dict[str, Any]] = []
        self._current: tuple[str, str] | None = None
        self._digests: list[str] = []

    def see(self, kind: str, name: str, digest: str) -> None:
        if (kind, name) != self._current:
            self._close()
            self._current, self._digests = (kind, name), []
        self._digests.append(digest)

    def _close(self) -> None:
        if self._current is not None and len(self._digests) > 1:
            kind, name = self._current
            self.by_kind[kind] += len(self._digests)
            self.names += 1
            if len(self.examples) < self.EXAMPLES:
                self.examples.append(
                    {"kind": kind, "name": name, "records": len(self._digests), "digests": self._digests[:5]}
                )

    def to_dict(self) -> dict[str, Any]:
        self._close()
        self._current, self._digests = None, []
        return {
            "records": sum(self.by_kind.values()),
            "names": self.names,
            "byKind": dict(sorted(self.by_kind.items())),
            "examples": self.examples,
            "note": "metadata.name is KernelIndex's (cut at 100 characters), so names can repeat; "
            "key on digests (records.parquet, runs.parquet)",
        }


def export_bundle(store: CatalogueStore, out_dir: str | os.PathLike[str]) -> ExportResult:
    """Write ``kernelindex-catalogue.bundle.yaml``: the submission bundle, one YAML document per group
    (every group present, possibly empty), manifests in KINDS / name / digest order. A damaged
    catalogue raises CatalogueError first."""
    store.check_integrity()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts: Counter[str] = Counter()
    writer = BlockWriter(_DUMPER)  # PyYAML's bytes, each distinct scalar represented once (records/yaml_block.py)

    def documents() -> Iterable[bytes]:
        yield (
            f"# KernelIndex submission bundle: {API_VERSION} records, one YAML document per group in\n"
            f"# dependency order ({', '.join(BUNDLE_GROUPS.values())}).\n"
        ).encode()
        # Streamed, one manifest at a time: each as a one-item block sequence, which is the bytes the same
        # manifest has inside its group's sequence (`{group: [...]}` dumped whole, as before; the test
        # compares both), so memory stays flat however large the catalogue.
        for kind, group in BUNDLE_GROUPS.items():
            empty = True
            for manifest in store.manifests(kinds=[kind]):
                if empty:
                    yield f"---\n{group}:\n".encode()
                    empty = False
                counts[kind] += 1
                yield writer.dump([manifest]).encode("utf-8")
            if empty:
                yield ("---\n" + writer.dump({group: []})).encode("utf-8")

    path = out / BUNDLE_NAME
    sha256 = _write_atomically(path, documents())
    return ExportResult(path, sha256, sum(counts.values()), _by_kind(counts))


def _by_kind(counts: Counter[str]) -> dict[str, int]:
    return {kind: counts.get(kind, 0) for kind in KINDS}


def _write_atomically(path: Path, chunks: Iterable[bytes]) -> str:
    """Write `chunks` to `path` through a temporary file in the same directory; return the sha256 hex."""
    digest = hashlib.sha256()
    handle = tempfile.NamedTemporaryFile(
        "wb", dir=path.parent, prefix=f".{path.name}.", suffix=".partial", delete=False
    )
    try:
        with handle:
            for chunk in chunks:
                digest.update(chunk)
                handle.write(chunk)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    return digest.hexdigest()


# ------------------------------------------------------------------------------------------ KernelIndex

SUBMISSION_NAME = "kernelindex-submission.yaml"
IMPORT_BUNDLE_NAME = "kernelindex-import-bundle.json"
SWEEP_BUNDLE_NAME = "kernelindex-import-bundle.sweeps.json"
# shipped beside the bundles: KernelIndex's publishBundle takes the snapshots' dates as Dates (docs/reference/exports.md)
BUNDLE_LOADER_NAME = "kernelindex-load-bundle.mjs"
UPSTREAM_SCHEMES = ("https", "file")  # snapshots of Liger's files (history, CI); any other is a sweep's


class _NoAliasDumper(_DUMPER):  # type: ignore[misc, valid-type]
    """Repeated objects written out in full: KernelIndex's YAML reader allows 100 aliases per document,
    and a shared protocol or environment would be an alias per run."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


@dataclass(frozen=True)
class KernelIndexFiles:
    """The files of one KernelIndex export: the submission document and one importer bundle per origin."""

    submission: ExportResult
    bundles: list[ExportResult]  # kernelindex-import-bundle.json (Liger's rows), ...sweeps.json (ours)
    notes: list[str] = field(default_factory=list)  # what the export left out and why (also in the header)


def export_kernelindex(
    manifests: Iterable[dict[str, Any]],
    out_dir: str | os.PathLike[str],
    *,
    snapshots: Iterable[dict[str, Any]] = (),
    include_memory: bool = False,
    catalogue: Any = None,
    order: str = "given",
    source_commit: str | None = None,
) -> KernelIndexFiles:
    """Write `kernelindex-submission.yaml` (one document, `bundleFromSubmission`'s shape) and the
    `ImportBundle`s for records given in publication order (catalogue/kernelindex.py says what each
    holds): `kernelindex-import-bundle.json` for Liger's own rows (history, CI) under KernelIndex's Liger
    source, `kernelindex-import-bundle.sweeps.json` for runs we measured, under our source; a bundle
    without runs is not written, and beside them `kernelindex-load-bundle.mjs`, the loader that makes the
    snapshots' date strings Dates. Snapshots with an https or file:// locator (Liger's files) go to the first,
    others to the second.
    Memory runs only with `include_memory`. `order`: "given" keeps the runs' order (an import's rows),
    "time" publishes by observedAt, best first among equal instants (a catalogue's records, whose row
    order is lost)."""
    from urllib.parse import urlsplit

    from kernelindex_pipeline.liger.catalogue import default_catalogue

    from .kernelindex import (
        LIGER_SOURCE,
        PIPELINE_SOURCE,
        group_for_kernelindex,
        import_bundle,
        prepare_records,
        submission_document,
        unfetchable_evidence,
    )

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    snapshots = list(snapshots)
    options = {"include_memory": include_memory, "order": order, "source_commit": source_commit}
    catalogue = catalogue or default_catalogue()
    manifests = prepare_records(manifests, order=order)  # normal form and digests once, for the three groupings
    grouped = group_for_kernelindex(manifests, catalogue, **options)
    notes = []
    if grouped.memory_runs_left_out:
        notes.append(
            f"{grouped.memory_runs_left_out} peak-memory runs left out (include_memory: KernelIndex ranks latencies)"
        )
    if grouped.sentinel_runs_left_out:
        notes.append(
            f"{grouped.sentinel_runs_left_out} sentinel runs left out (calibration of a sweep, not kernels to rank)"
        )
    if grouped.runs_ranked_by_interval:
        notes.append(
            f"{grouped.runs_ranked_by_interval} runs we measured written without spec.sourceNative, so KernelIndex "
            "ranks them by their confidence95 (strict_exact); their KernelIndex digests are those of this form"
        )
    unfetchable = unfetchable_evidence(grouped)
    if unfetchable:
        notes.append(
            f"{unfetchable} evidence references of a local artifact store (ni:///) not registered as artifacts: "
            "KernelIndex cannot fetch them (set an https base URL or use object storage); the runs still name them"
        )
    local = sum(urlsplit(s.get("locator", "")).scheme == "file" for s in snapshots)
    if local:
        notes.append(
            f"{local} source snapshots of local files keep their file:// locator: KernelIndex keeps the digest of "
            "what was read, it cannot fetch them"
        )
    header = (
        f"# KernelIndex submission: one document in bundleFromSubmission's shape ({API_VERSION}); "
        f"{len(grouped.runs)} runs\n" + "".join(f"# {note}\n" for note in notes)
    ).encode()
    # PyYAML's bytes (sort_keys=False, allow_unicode, block style, width 1e6: one scalar, one line), laid out
    # by records/yaml_block.py with each distinct scalar represented once: the representer was ~80 % of the export
    text = BlockWriter(_NoAliasDumper, aliases=False).dump(submission_document(grouped)).encode("utf-8")
    submission_path = out / SUBMISSION_NAME
    submission = ExportResult(
        submission_path, _write_atomically(submission_path, [header, text]), *_kernelindex_counts(grouped)
    )
    bundles = []
    for origin, name, source in (
        ("upstream", IMPORT_BUNDLE_NAME, LIGER_SOURCE),
        ("measured", SWEEP_BUNDLE_NAME, PIPELINE_SOURCE),
    ):
        part = group_for_kernelindex(manifests, catalogue, runs_from=origin, **options)
        stale = out / name
        if not part.runs:
            stale.unlink(missing_ok=True)  # a bundle of an earlier export with runs this one has not
            continue
        https = [
            (urlsplit(s.get("locator", "")).scheme in UPSTREAM_SCHEMES) == (origin == "upstream") for s in snapshots
        ]
        own = [snapshot for snapshot, keep in zip(snapshots, https, strict=True) if keep]
        body = json.dumps(import_bundle(part, source=source, snapshots=own), ensure_ascii=False, separators=(",", ":"))
        bundles.append(
            ExportResult(stale, _write_atomically(stale, [body.encode("utf-8"), b"\n"]), *_kernelindex_counts(part))
        )
    loader = out / BUNDLE_LOADER_NAME
    if bundles:
        from importlib import resources

        text = resources.files("kernelindex_pipeline").joinpath("data", BUNDLE_LOADER_NAME).read_bytes()
        _write_atomically(loader, [text])
    else:
        loader.unlink(missing_ok=True)
    return KernelIndexFiles(submission, bundles, notes)


def remove_kernelindex_files(out_dir: str | os.PathLike[str]) -> list[Path]:
    """Remove the files `export_kernelindex` writes from `out_dir` (where they would describe an older catalogue);
    those it removed."""
    removed = []
    for name in (SUBMISSION_NAME, IMPORT_BUNDLE_NAME, SWEEP_BUNDLE_NAME, BUNDLE_LOADER_NAME):
        path = Path(out_dir) / name
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed


def _kernelindex_counts(grouped: Any) -> tuple[int, dict[str, int]]:
    counts = {
        "SoftwareProject": len(grouped.projects),
        "OperationSpec": len(grouped.operations),
        "WorkloadCase": len(grouped.workloads),
        "ImplementationRevision": len(grouped.implementations),
        "BenchmarkRun": len(grouped.runs),
    }
    return sum(counts.values()), counts
