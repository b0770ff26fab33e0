"""The one import path of the Liger source: a CSV (a file, its bytes, or chunks already read) ->
its records and the report of every row's fate. The CLI, the Dagster layer and the sweep call it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from os import PathLike
from pathlib import Path

from kernelindex_pipeline.imports.result import ImportResult, SourceSnapshot
from kernelindex_pipeline.liger.catalogue import DEFAULT_PROFILE, Catalogue, default_catalogue
from kernelindex_pipeline.liger.csv import Chunk, CsvReader
from kernelindex_pipeline.liger.normalize import MeasuredContext, Normalizer, RunRecord, schema_validator
from kernelindex_pipeline.liger.release import snapshot_of_bytes, snapshot_of_file
from kernelindex_pipeline.liger.sentinel import sentinel_manifests
from kernelindex_pipeline.records.canonical import digest_of

# Below this size one process is faster than starting workers (about 20 000 rows).
PARALLEL_MIN_BYTES = 4 * 1024 * 1024


def _result_of(normalizer: Normalizer, snapshot: SourceSnapshot | None) -> ImportResult:
    """The result of a finished Normalizer: shared objects, then runs (unless they were streamed)."""
    manifests = dict(normalizer.objects)
    manifests.update(normalizer.runs)
    return ImportResult(manifests, normalizer.report, snapshot, normalizer.names_by_digest)


def _usable_cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def import_csv(
    source: str | PathLike | bytes,
    *,
    gpu: str | None = None,
    liger_version: str | None = None,
    measured: MeasuredContext | None = None,
    snapshot: SourceSnapshot | None = None,
    on_run: Callable[[RunRecord], None] | None = None,
    catalogue: Catalogue | None = None,
    profile: str = DEFAULT_PROFILE,
    validate: bool = True,
    workers: int | None = None,
    code_ref: str | None = None,
) -> ImportResult:
    """Read a Liger benchmark CSV (a path or its bytes) and build its records.

    gpu: keep only rows whose kebab(gpu_name) equals this slug; liger_version: only rows with exactly
    this liger_version. Rows left out count as `skipped.filteredOut`.
    measured: facts for rows the pipeline ran itself (see MeasuredContext).
    code_ref: the Liger commit (or tag) the rows measured, where the source names it (a CI run directory,
    `identity.code_ref_of_locator`): every run gets the metadata label `runs.CODE_REF_LABEL` (no digest changes).
    on_run: receive each BenchmarkRun as a RunRecord instead of keeping it in `manifests` (for
    millions of rows); shared objects are always kept.
    profile: the packaged catalogue's profile, `full` (default) or `reference` (KernelIndex parity);
    ignored when `catalogue` is given.
    workers: processes that build runs besides this one (needs on_run). None: 2 for inputs over
    PARALLEL_MIN_BYTES when two CPUs are usable, else 0 (everything in this process).
    Raises CsvFormatError (unreadable file, missing column) and InvalidRecord (a built manifest fails
    the schema; never expected).
    """
    reader = CsvReader(source)  # first: it names a missing file or a missing column
    if snapshot is None:
        snapshot = (
            snapshot_of_bytes(bytes(source))
            if isinstance(source, (bytes, bytearray))
            else snapshot_of_file(Path(source))
        )
    if workers is None:
        workers = 2 if on_run is not None and _usable_cpus() >= 2 and snapshot.sizeBytes >= PARALLEL_MIN_BYTES else 0
    drift = reader.header.drift_warnings if reader.header is not None else ["the file is empty: no header and no rows"]
    return import_chunks(
        reader,
        drift,
        snapshot,
        gpu=gpu,
        liger_version=liger_version,
        measured=measured,
        on_run=on_run,
        catalogue=catalogue,
        profile=profile,
        validate=validate,
        workers=workers,
        code_ref=code_ref,
    )


def import_chunks(
    chunks: Iterable[Chunk],
    drift_warnings: list[str],
    snapshot: SourceSnapshot | None,
    *,
    gpu: str | None = None,
    liger_version: str | None = None,
    measured: MeasuredContext | None = None,
    on_run: Callable[[RunRecord], None] | None = None,
    catalogue: Catalogue | None = None,
    profile: str = DEFAULT_PROFILE,
    validate: bool = True,
    workers: int = 0,
    code_ref: str | None = None,
) -> ImportResult:
    """Normalize rows already read into chunks (see `import_csv` for the arguments)."""
    if workers and on_run is None:
        raise ValueError("workers need on_run: runs built in worker processes are streamed, not collected")
    builder = None
    if workers:
        from kernelindex_pipeline.liger.parallel import ParallelRunBuilder

        builder = ParallelRunBuilder(workers, on_run, validate=validate)
    try:
        normalizer = Normalizer(
            catalogue or default_catalogue(profile),
            gpu=gpu,
            liger_version=liger_version,
            measured=measured,
            on_run=on_run,
            validate=schema_validator() if validate else None,
            builder=builder,
            code_ref=code_ref,
        )
        normalizer.report.drift_warnings.extend(drift_warnings)
        for chunk in chunks:
            normalizer.add_chunk(chunk)
        if builder is not None:
            builder.finish()
    finally:
        if builder is not None:
            builder.close()
    normalizer.finish()
    result = _result_of(normalizer, snapshot)
    if measured is not None and measured.sentinel:
        manifests, problems = sentinel_manifests(measured, normalizer.catalogue)
        check = schema_validator() if validate else None
        for manifest in manifests:
            if check is not None:
                check(manifest)
            digest = digest_of(manifest)
            if digest not in result.manifests:
                result.manifests[digest] = manifest
                records = result.report.records
                records[manifest["kind"]] = records.get(manifest["kind"], 0) + 1
        result.report.sentinel_runs = sum(1 for m in manifests if m["kind"] == "BenchmarkRun")
        result.report.sentinel_problems = problems
    return result
