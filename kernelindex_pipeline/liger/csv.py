"""Reading Liger's `all_benchmark_data.csv`: every cell a string, every row accounted for.

Row numbers: an issue's `row` is the 1-based **data row number**: the first record after the header is
row 1, a quoted field that spans lines is still one row, and blank lines are not rows (pandas skips
them, and so does the exact reader below). It is not the physical file line.

Two readers, one contract:

* the fast path is pandas' C parser in chunks (all columns `str`, no NA conversion);
* pandas cannot report ragged rows faithfully -- it pads a short row with empty strings and raises (or,
  with `index_col=False`, silently drops fields) on a long one -- so when a chunk may hold a ragged
  row (a ParserError, a ParserWarning, or an empty last cell, which is what padding looks like) the
  rest of the file is read with the standard library's `csv` module, which reports each record's
  true field count. Well-formed files never leave the fast path.

Bytes that are not UTF-8 are decoded with `surrogateescape`, so one bad cell makes its row an issue
("not valid UTF-8") instead of failing the whole file.

Bounds (a CSV is untrusted input): the header is read first, by the standard library, from at most
MAX_HEADER_BYTES, and a header of more than MAX_COLUMNS fields is refused before pandas allocates a
column for each (pandas' cost grows faster than linearly with the width). A data row wider than the
header is a ragged row (an issue), never a new column. The exact reader streams the file (it never
holds it whole) and accepts fields as long as pandas does, so a long field and a ragged row in the
same file are each handled as they are alone.

Every data row is bounded too, before pandas or the csv module sees it: at most MAX_ROW_FIELDS fields
and MAX_ROW_BYTES bytes (pandas makes a column for every field of a row of empty cells: three rows of
400k commas took it 48 s and 600 MB). `_records` splits the bytes into records exactly where the csv
module does, as pandas' C tokenizer does too (a quote opens a quoted field only at the start of a field; anywhere
else it is an ordinary character, as in `cross"entropy`), counting each record's bytes and delimiters
without keeping more than the limit of it. A file with a record over the limits, or one that ends inside
a quoted field, is read through `bounded_records`, which puts a one-field marker in place of such a
record; the exact reader makes the marker an issue naming the row ("row too wide: ...", "quote never
closed: ..."), so row numbers and conservation stay as they are.
"""

from __future__ import annotations

import codecs
import csv as stdlib_csv
import io
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path

UPSTREAM_COLUMNS: tuple[str, ...] = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "metric_unit",
    "x_name",
    "x_label",
    "x_value",
    "y_value_50",
    "y_value_20",
    "y_value_80",
    "extra_benchmark_config_str",
    "gpu_name",
    "timestamp",
    "liger_version",
)

# A measured case within one GPU's rows, and a row's identity in the data CSV (the columns Liger's
# utils.update_benchmark_data_csv replaces a row by): our sweep keys its samples and its row ledger by them.
CASE_COLUMNS: tuple[str, ...] = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "x_name",
    "x_value",
    "extra_benchmark_config_str",
)
ROW_KEY_COLUMNS: tuple[str, ...] = (*CASE_COLUMNS, "gpu_name")

DEFAULT_CHUNK_ROWS = 50_000
MAX_COLUMNS = 256  # the upstream header has 15; room for drift, not for a width bomb
MAX_HEADER_BYTES = 64 * 1024
MAX_ROW_FIELDS = 4 * MAX_COLUMNS  # a ragged row up to this width is an ordinary ragged row
MAX_ROW_BYTES = 2**20  # Liger's rows are under 1 KB; a long config string of 200 KB still fits
# The marker records (one field each) bounded_records puts in place of a row.
_WIDE_ROW = "\x1ekernelindex: row too wide"
_UNCLOSED = "\x1ekernelindex: quote never closed"
_PIECE_BYTES = 1 << 20  # what the splitter reads at a time (a line, or this much of a longer one)

# The standard csv module refuses fields over 128 KiB and then cannot resume, which would turn one
# long field into "the whole file is unreadable" as soon as the exact reader runs; pandas has no such
# limit. The limit is process-wide, so it is only ever raised here (the file size bounds the field).
stdlib_csv.field_size_limit(max(stdlib_csv.field_size_limit(), 2**31 - 1))
_SURROGATE = re.compile("[\udc80-\udcff]")

CsvSource = str | PathLike | bytes


class CsvFormatError(ValueError):
    """The file cannot be read as an upstream benchmark CSV at all (e.g. a required column is missing)."""


@dataclass
class Chunk:
    """Consecutive data rows: `columns[i][j]` is upstream column i of row `start + j`."""

    start: int
    columns: tuple[list[str], ...]
    bad: dict[int, str] = field(default_factory=dict)  # offset in chunk -> problem; its cells are ""

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0


@dataclass
class CsvHeader:
    columns: list[str]  # as read (pandas names a repeated column "name.1")
    drift_warnings: list[str]


def _open_for_pandas(source: CsvSource):
    return io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else source


def _is_utf8(source: CsvSource) -> bool:
    if isinstance(source, (bytes, bytearray)):
        try:
            bytes(source).decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(source, "rb") as f:
            while block := f.read(1 << 22):
                decoder.decode(block)
            decoder.decode(b"", final=True)
        return True
    except UnicodeDecodeError:
        return False


def _text_stream(source: CsvSource, bounded: bool = False) -> io.TextIOBase:
    """The source as text for the csv module: UTF-8 (a leading BOM dropped), undecodable bytes kept
    as surrogates for `_mark_undecodable`, newlines untranslated (csv handles them); `bounded`: through
    `bounded_records` (rows over the limits replaced by their marker)."""
    binary = io.BufferedReader(_RecordStream(source)) if bounded else _binary(source)
    return io.TextIOWrapper(binary, encoding="utf-8-sig", errors="surrogateescape", newline="")


def _binary(source: CsvSource) -> io.BufferedIOBase:
    return io.BytesIO(source) if isinstance(source, (bytes, bytearray)) else open(source, "rb")  # noqa: SIM115 - the caller closes it


# The splitter's states. The csv module (non-strict, the default dialect) reads what the splitter passes on,
# and pandas' C tokenizer splits files the same way (bar how it skips a blank line ended by a lone CR); for
# where a record ends their automaton has three classes of state: OUT (at the start of a field, or
# just after a quote that closed a quoted part: the next quote opens one again, which is how "" inside a
# quoted field reads), UNQUOTED (inside an unquoted field: a quote is an ordinary character) and QUOTED
# (inside a quoted field: a delimiter or line break is an ordinary character).
_OUT, _UNQUOTED, _QUOTED = 0, 1, 2
_QUOTE = ord('"')
_QUOTED_PARTS = re.compile(rb'(?:"[^"]*+")++')  # from OUT at a quote: every closed quoted part, at C speed
# Outside quotes: a quote right after a delimiter opens a field; a line break ends the record.
_UNQUOTED_STOP = re.compile(rb',"|[\r\n]')
_BOM = codecs.BOM_UTF8  # the text stream drops it (utf-8-sig), so the automaton starts after it


def _scan(piece: bytes, p: int, state: int) -> tuple[int, int, int, bool]:
    """From `p` in `state` to where the record ends (just past its line break; CR LF is one) or the
    piece does: (that position, the state there, the delimiters passed, whether the record ended)."""
    n = len(piece)
    delimiters = 0
    while p < n:
        if state == _QUOTED:
            closing = piece.find(b'"', p)
            if closing < 0:
                return n, _QUOTED, delimiters, False
            p, state = closing + 1, _OUT
            continue
        if state == _OUT and piece[p] == _QUOTE:
            parts = _QUOTED_PARTS.match(piece, p)
            if parts is None:  # a quote opened and not closed in this piece
                p, state = p + 1, _QUOTED
            else:
                p = parts.end()
            continue
        # Outside quotes: every comma up to the next quote that opens a field (one right after a comma)
        # or the next line break is a delimiter; any other quote on the way is part of its field.
        stop = _UNQUOTED_STOP.search(piece, p)
        if stop is None:
            delimiters += piece.count(b",", p, n)
            return n, (_OUT if piece[n - 1] == ord(",") else _UNQUOTED), delimiters, False
        at = stop.start()
        delimiters += piece.count(b",", p, at)
        if piece[at] == ord(","):
            p, state = at + 1, _OUT
            delimiters += 1
            continue
        end = at + 2 if piece.startswith(b"\r\n", at) else at + 1
        return end, _OUT, delimiters, True
    return n, state, delimiters, False


@dataclass(frozen=True)
class _Split:
    """One record as `_records` found it."""

    data: bytes | None  # None when over the limits, or not kept
    size: int
    fields: int
    closed: bool  # False: the file ended inside a quoted field of this record

    @property
    def wide(self) -> bool:
        return self.size > MAX_ROW_BYTES or self.fields > MAX_ROW_FIELDS


def _records(handle: io.BufferedIOBase, keep: bool = True) -> Iterator[_Split]:
    """The input's records, split exactly where the csv module splits them (`_scan`), each with its
    size and field count; `keep`: with its bytes unless it is over the limits. Holds at most
    MAX_ROW_BYTES of a record, and reads at most _PIECE_BYTES at a time."""
    record = bytearray()
    size = delimiters = 0
    state = _OUT

    def record_is_wide() -> bool:
        return size > MAX_ROW_BYTES or delimiters + 1 > MAX_ROW_FIELDS

    def split(closed: bool) -> _Split:
        return _Split(None if record_is_wide() or not keep else bytes(record), size, delimiters + 1, closed)

    first = True
    after_cr = False  # the last record ended at a \r that ended a piece: a \n next is still its line break
    while piece := handle.readline(_PIECE_BYTES):
        p = 0
        if first:
            first = False
            if piece.startswith(_BOM):  # part of the first record's bytes, but none of its characters
                p = size = len(_BOM)
                record += _BOM if keep else b""
        if after_cr:
            after_cr = False
            if piece.startswith(b"\n"):
                p, size = 1, size + 1
                record += b"\n" if keep and not record_is_wide() else b""
            yield split(closed=True)
            record.clear()
            size = delimiters = 0
        while p < len(piece):
            end, state, passed, ended = _scan(piece, p, state)
            delimiters += passed
            size += end - p
            if record_is_wide():
                record.clear()  # what was kept of it: never more than the limit
            elif keep:
                record += piece[p:end]
            p = end
            if ended and end == len(piece) and piece.endswith(b"\r"):
                after_cr = True  # a \r\n across two pieces is one line break: the next piece decides
            elif ended:
                yield split(closed=True)
                record.clear()
                size = delimiters = 0
    if size:  # the csv module ends the last record at the end of the file, inside a quote or not
        yield split(closed=after_cr or state != _QUOTED)


def may_hold_wide_rows(source: CsvSource) -> bool:
    """Whether a record is over MAX_ROW_FIELDS fields or MAX_ROW_BYTES bytes, or the file ends inside a
    quoted field (then `bounded_records` names the row the quote opened in). Splits as the csv module
    does (`_records`), without keeping the records."""
    with _binary(source) as handle:
        return any(split.wide or not split.closed for split in _records(handle, keep=False))


def bounded_records(handle: io.BufferedIOBase) -> Iterator[bytes]:
    """The bytes of the input, record by record as the csv module splits them, each record over
    MAX_ROW_FIELDS fields or MAX_ROW_BYTES bytes, or left inside a quote at the end of the file, replaced
    by a one-field marker line saying so. Holds at most MAX_ROW_BYTES of a record. (The csv module holds a
    record whole, and pandas too: neither can stop reading one part way, so `_scan` follows their
    automaton rather than calling it.)"""
    for split in _records(handle):
        if split.wide:
            yield _marker(split.fields, split.size)
        elif not split.closed:
            yield f"{_UNCLOSED}: a quoted field of this row runs to the end of the file ({split.size} bytes)\n".encode()
        else:
            yield split.data


def _marker(fields: int, size: int) -> bytes:
    # One field: no comma, no quote, no newline in it.
    return f"{_WIDE_ROW}: {fields} fields in {size} bytes (at most {MAX_ROW_FIELDS} fields and {MAX_ROW_BYTES} bytes are read)\n".encode()


class _RecordStream(io.RawIOBase):
    """A binary stream over `bounded_records` of a source (for the csv module and pandas alike)."""

    def __init__(self, source: CsvSource):
        self._handle = _binary(source)
        self._records = bounded_records(self._handle)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self._pending:
            self._pending = next(self._records, b"")
            if not self._pending:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def close(self) -> None:
        self._handle.close()
        super().close()


def bounded_text(source: CsvSource) -> io.TextIOBase:
    """The source as text for the csv module with every row bounded (a row over the limits comes as
    its one-field marker, so a reader of fixed width sees it as ragged); for readers other than
    CsvReader (liger/partition.py slices a history by GPU and version with it)."""
    return _text_stream(source, bounded=may_hold_wide_rows(source))


def wide_row_problem(record: list[str]) -> str | None:
    """The issue of a marker record that `bounded_records` put in place of a row, else None."""
    if len(record) == 1:
        for marker, problem in ((_WIDE_ROW, "row too wide"), (_UNCLOSED, "quote never closed")):
            if record[0].startswith(marker):
                return problem + record[0][len(marker) :]
    return None


def read_header(source: CsvSource) -> list[str] | None:
    """The header record as the standard library reads it (None for a file with nothing but blank
    lines or nothing at all), reading at most MAX_HEADER_BYTES; CsvFormatError for a header wider
    than MAX_COLUMNS or longer than MAX_HEADER_BYTES."""
    if isinstance(source, (bytes, bytearray)):
        prefix = bytes(source[:MAX_HEADER_BYTES])
        whole = len(source) <= MAX_HEADER_BYTES
    else:
        path = Path(source)
        if path.is_dir():
            raise CsvFormatError(f"{path}: is a directory, not a CSV file")
        if not path.is_file():
            raise CsvFormatError(f"{path}: no such file")
        with open(path, "rb") as f:
            prefix = f.read(MAX_HEADER_BYTES + 1)
        whole = len(prefix) <= MAX_HEADER_BYTES
        prefix = prefix[:MAX_HEADER_BYTES]
    reader = stdlib_csv.reader(_text_stream(prefix))
    try:
        header = next((r for r in reader if r and not (len(r) == 1 and not r[0].strip())), None)
        complete = whole or next(reader, None) is not None
    except stdlib_csv.Error:
        return []  # the readers report it
    if header is not None and len(header) > MAX_COLUMNS:
        raise CsvFormatError(
            f"the header has {len(header)}{'' if complete else '+'} columns; at most {MAX_COLUMNS} are read "
            f"(the upstream header has {len(UPSTREAM_COLUMNS)})"
        )
    if header is not None and not complete:
        raise CsvFormatError(f"the header line is longer than {MAX_HEADER_BYTES // 1024} KiB; is this a benchmark CSV?")
    return header


def _check_header(columns: list[str]) -> CsvHeader:
    missing = [c for c in UPSTREAM_COLUMNS if c not in columns]
    if missing:
        raise CsvFormatError(
            f"missing column{'s' if len(missing) > 1 else ''} {', '.join(repr(c) for c in missing)} "
            f"(the header must name all {len(UPSTREAM_COLUMNS)} upstream columns: {', '.join(UPSTREAM_COLUMNS)})"
        )
    drift = [f"unexpected column {c!r} (ignored)" for c in columns if c not in UPSTREAM_COLUMNS]
    return CsvHeader(list(columns), drift)


class CsvReader:
    """Iterate a benchmark CSV as chunks. `header` is known after construction (None for an empty file).
    Every CsvFormatError about a file given by path starts with its path."""

    def __init__(self, source: CsvSource, chunk_rows: int = DEFAULT_CHUNK_ROWS):
        self.label = None if isinstance(source, (bytes, bytearray)) else str(source)
        try:
            self._open(source, chunk_rows)
        except CsvFormatError as exc:
            raise self._labelled(exc) from None

    def _labelled(self, exc: CsvFormatError) -> CsvFormatError:
        if self.label is None or str(exc).startswith(f"{self.label}: "):
            return exc
        return CsvFormatError(f"{self.label}: {exc}")

    def _open(self, source: CsvSource, chunk_rows: int) -> None:
        import pandas as pd  # here: a Dagster code location loads this module without reading a CSV

        read_header(source)  # first: it names a missing file or a directory, and bounds the header
        self.source = source
        self.chunk_rows = chunk_rows
        self.valid_utf8 = _is_utf8(source)
        self.header: CsvHeader | None = None
        self._pandas = None
        self.bounded = may_hold_wide_rows(source)
        # A row over the limits may be there, or bytes that are not UTF-8 (their surrogate escapes cannot enter
        # pandas' Arrow-backed strings, not even as column names): pandas never sees such a file.
        if self.bounded or not self.valid_utf8:
            header = self._read_exact_header()
            self.header = _check_header(header) if header is not None else None
            return
        # dtype=object, not str: pandas >= 3 maps `str` to its Arrow-backed string dtype whenever pyarrow is
        # installed (the export's Parquet needs it); plain Python strings are what the normalizer reads.
        options = dict(
            dtype=object,
            keep_default_na=False,
            na_filter=False,
            index_col=False,
            encoding="utf-8",
            encoding_errors="surrogateescape",
            on_bad_lines="error",
            engine="c",
        )
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                columns = list(pd.read_csv(_open_for_pandas(source), nrows=0, **options).columns)
        except pd.errors.EmptyDataError:
            return  # an empty file: no header, no rows
        except pd.errors.ParserError:  # pandas cannot even read the header: the exact reader decides
            header = self._read_exact_header()
            self.header = _check_header(header) if header is not None else None
            return
        self.header = _check_header([str(c) for c in columns])
        self._pandas = pd.read_csv(_open_for_pandas(source), chunksize=chunk_rows, **options)

    def _read_exact_header(self) -> list[str] | None:
        for record in _exact_records(self.source, self.bounded):
            return record
        return None

    def __iter__(self) -> Iterator[Chunk]:
        try:
            yield from self._chunks()
        except CsvFormatError as exc:
            raise self._labelled(exc) from None

    def _chunks(self) -> Iterator[Chunk]:
        import pandas as pd  # here: a Dagster code location loads this module without reading a CSV

        if self.header is None:
            return
        index = [self.header.columns.index(c) for c in UPSTREAM_COLUMNS]
        last = len(self.header.columns) - 1
        done = 0
        if self._pandas is not None:
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    for frame in self._pandas:
                        if caught or frame.shape[1] != len(self.header.columns):
                            break
                        cols = [frame.iloc[:, i].tolist() for i in range(frame.shape[1])]
                        if "" in cols[last]:  # maybe a short row padded by pandas: re-read exactly
                            break
                        chunk = self._marked(Chunk(done + 1, tuple(cols[i] for i in index)))
                        yield chunk
                        done += len(chunk)
                    else:
                        return
            except pd.errors.ParserError:
                pass
            finally:
                self._pandas.close()
        yield from self._exact_chunks(skip=done, index=index)

    def _exact_chunks(self, skip: int, index: list[int]) -> Iterator[Chunk]:
        width = len(self.header.columns)
        records = _exact_records(self.source, self.bounded)
        next(records, None)  # header
        number = 0
        cols: list[list[str]] = [[] for _ in UPSTREAM_COLUMNS]
        bad: dict[int, str] = {}
        start = skip + 1
        for record in records:
            number += 1
            if number <= skip:
                continue
            if len(record) != width:
                bad[len(cols[0])] = (
                    wide_row_problem(record) or f"ragged row: {len(record)} fields, the header has {width}"
                )
                for col in cols:
                    col.append("")
            else:
                for col, i in zip(cols, index, strict=False):
                    col.append(record[i])
            if len(cols[0]) >= self.chunk_rows:
                yield self._marked(Chunk(start, tuple(cols), bad))
                start += len(cols[0])
                cols, bad = [[] for _ in UPSTREAM_COLUMNS], {}
        if cols[0]:
            yield self._marked(Chunk(start, tuple(cols), bad))

    def _marked(self, chunk: Chunk) -> Chunk:
        """The chunk with its rows that are not valid UTF-8 made issues (only a file that is not can have them)."""
        if not self.valid_utf8:
            _mark_undecodable(chunk)
        return chunk


def _exact_records(source: CsvSource, bounded: bool = False) -> Iterator[list[str]]:
    """Records by the standard csv module, streamed (blank lines skipped, as pandas skips them);
    `bounded`: rows over the limits come as their one-field marker (`wide_row_problem`)."""
    number = 0
    with _text_stream(source, bounded) as text:
        reader = stdlib_csv.reader(text)
        try:
            for record in reader:
                if not record or (len(record) == 1 and not record[0].strip()):
                    continue
                yield record
                number += 1
        except stdlib_csv.Error as exc:  # e.g. an unterminated quote at the end of the file
            where = "in the header" if number == 0 else f"at data row {number} (line {reader.line_num})"
            raise CsvFormatError(f"unreadable CSV {where}: {exc}") from None


def _mark_undecodable(chunk: Chunk) -> None:
    for j, values in enumerate(zip(*chunk.columns, strict=False)):
        if j not in chunk.bad and _SURROGATE.search("\x1f".join(values)):
            chunk.bad[j] = "row is not valid UTF-8"
            for col in chunk.columns:
                col[j] = ""


def read_rows(source: CsvSource) -> tuple[CsvHeader | None, list[tuple[int, tuple[str, ...] | None, str | None]]]:
    """Convenience for small files and tests: (header, [(row number, values or None, problem or None)])."""
    reader = CsvReader(source)
    rows = []
    for chunk in reader:
        for j, values in enumerate(zip(*chunk.columns, strict=False)):
            problem = chunk.bad.get(j)
            rows.append((chunk.start + j, None if problem else values, problem))
    return reader.header, rows
