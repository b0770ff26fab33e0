"""One (GPU, Liger version) partition through the stages: raw CSV -> parsed rows -> records.

History: slice Liger-Kernel's committed history CSV into partitions.

The slice is done on the raw CSV (stdlib `csv`), before parsing, so a partition's raw
CSV holds exactly the upstream rows of that partition, and its content digest changes
only when those rows change. Rows that name no usable GPU or version are kept aside
and counted: they can belong to no partition, and are never silently dropped.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import io
import re
from dataclasses import dataclass, field

from kernelindex_pipeline.imports.archive import CachedArchive
from kernelindex_pipeline.liger.catalogue import DEFAULT_PROFILE
from kernelindex_pipeline.liger.csv import Chunk, CsvHeader, CsvReader, bounded_text
from kernelindex_pipeline.liger.release import read_history_csv
from kernelindex_pipeline.records.names import kebab

# What a Dagster partition value may hold: a `|` or `,` in one silently breaks multi-partition keys.
PARTITION_VALUE = re.compile(r"^[a-z0-9._-]+$")


@dataclass(frozen=True)
class PartitionSlice:
    gpu: str
    liger_version: str
    csv_bytes: bytes
    rows: int

    @property
    def content_digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.csv_bytes).hexdigest()


@dataclass
class HistorySlices:
    partitions: dict[tuple[str, str], PartitionSlice]
    unattributable_rows: list[int] = field(default_factory=list)  # 1-based data row numbers
    rows_read: int = 0


def slice_history(data: bytes) -> HistorySlices:
    """Group the rows of a history CSV by (kebab(gpu_name), liger_version)."""
    text = bounded_text(data)  # a row over liger/csv.py's limits comes as one field: unattributable
    reader = csv.reader(text)
    header = next(reader, None)
    if not header:
        return HistorySlices(partitions={})
    header = [name.strip() for name in header]
    try:
        gpu_at, version_at = header.index("gpu_name"), header.index("liger_version")
    except ValueError as missing:
        raise ValueError(f"history CSV has no {missing.args[0].split()[0]} column; cannot partition it") from None

    grouped: dict[tuple[str, str], list[list[str]]] = {}
    unattributable: list[int] = []
    rows_read = 0
    for row in reader:
        if not row:
            continue  # a blank line is no row (pandas skips it too)
        rows_read += 1
        row_number = rows_read  # 1-based data row number, as liger/csv.py counts them
        if len(row) != len(header):
            unattributable.append(row_number)
            continue
        gpu, version = kebab(row[gpu_at]), row[version_at].strip()
        if not (PARTITION_VALUE.fullmatch(gpu) and PARTITION_VALUE.fullmatch(version)):
            unattributable.append(row_number)
            continue
        grouped.setdefault((gpu, version), []).append(row)

    partitions = {}
    for (gpu, version), rows in grouped.items():
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
        partitions[(gpu, version)] = PartitionSlice(
            gpu, version, out.getvalue().encode("utf-8", "surrogateescape"), len(rows)
        )
    return HistorySlices(
        partitions=dict(sorted(partitions.items())), unattributable_rows=unattributable, rows_read=rows_read
    )


@dataclass
class PartitionCsv:
    """One partition's raw benchmark CSV and where it came from.

    `mode` names the source (not a timed pass, as `mode` means elsewhere): `history` (rows Liger-Kernel
    committed), `ci` (a Liger CI results file) or `sweep` (rows our own GPU sweep measured); for a sweep,
    `measured` carries what the sweep knows that the CSV cannot say, and `sweep` the sweep's typed result.
    """

    gpu: str
    liger_version: str
    mode: str
    csv_bytes: bytes
    snapshot: dict
    measured: object | None = None  # liger.normalize.MeasuredContext of a sweep (mode `sweep`)
    sweep: object | None = None  # sweep.protocol.SweepResult of a sweep: outcomes, host, timings
    code_ref: str | None = None  # the commit the rows measured, where the source names it (a CI run directory)

    @property
    def content_digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.csv_bytes).hexdigest()


def parts_digest(parts: list[PartitionCsv]) -> str:
    """Content digest of a partition made of parts (one per input file): changes when any part does."""
    sha = hashlib.sha256()
    for part in parts:
        sha.update(part.csv_bytes)
        sha.update(b"\0")
    return "sha256:" + sha.hexdigest()


@functools.lru_cache(maxsize=4)
def _sliced_history(artifact: CachedArchive):
    # Keyed by the artifact (its sha256 included): a backfill in one process reads each sdist once.
    data, snapshot = read_history_csv(artifact)
    return slice_history(data), data, snapshot


def history_pairs(artifact: CachedArchive) -> list[tuple[str, str]]:
    """The (gpu, liger_version) partitions `artifact`'s committed history holds."""
    return sorted(_sliced_history(artifact)[0].partitions)


def history_partition_csv(artifact: CachedArchive, gpu: str, liger_version: str) -> PartitionCsv:
    """The rows of `artifact`'s committed history CSV for one partition (an empty CSV if it has none)."""
    slices, data, snapshot = _sliced_history(artifact)
    part = slices.partitions.get((gpu, liger_version))
    csv_bytes = part.csv_bytes if part else data.split(b"\n", 1)[0].lstrip(b"\xef\xbb\xbf") + b"\n"
    source = {
        **snapshot.to_dict(),
        "partition": {"gpu": gpu, "liger_version": liger_version},
        "rows": part.rows if part else 0,
        "partitionSha256": hashlib.sha256(csv_bytes).hexdigest(),
    }
    return PartitionCsv(gpu, liger_version, "history", csv_bytes, source)


@dataclass
class ParsedRows:
    """A partition's CSV read into chunks of string cells; bad rows stay in, marked with their problem."""

    header: CsvHeader | None
    chunks: list[Chunk]

    @property
    def rows_read(self) -> int:
        return sum(len(chunk) for chunk in self.chunks)

    @property
    def issues(self) -> list[tuple[int, str]]:
        return [
            (chunk.start + offset, problem) for chunk in self.chunks for offset, problem in sorted(chunk.bad.items())
        ]

    @property
    def drift_warnings(self) -> list[str]:
        return self.header.drift_warnings if self.header else ["the file is empty: no header and no rows"]


def parse_partition_csv(partition_csv: PartitionCsv) -> ParsedRows:
    reader = CsvReader(partition_csv.csv_bytes)
    return ParsedRows(reader.header, list(reader))


def build_records(parsed: ParsedRows, partition_csv: PartitionCsv, profile: str = DEFAULT_PROFILE):
    """The partition's ImportResult: every row of `parsed` normalized, every manifest validated."""
    from kernelindex_pipeline.imports.result import SourceSnapshot
    from kernelindex_pipeline.liger import import_chunks
    from kernelindex_pipeline.liger.release import PARSER_VERSION

    snapshot_fields = {
        k: partition_csv.snapshot.get(k) for k in ("locator", "resolvedVersion", "sha256", "sizeBytes", "fetchedAt")
    }
    return import_chunks(
        parsed.chunks,
        parsed.drift_warnings,
        SourceSnapshot(**snapshot_fields, parserVersion=PARSER_VERSION),
        gpu=partition_csv.gpu,
        liger_version=partition_csv.liger_version,
        measured=partition_csv.measured,
        profile=profile,
        code_ref=partition_csv.code_ref,
    )
