"""Reading benchmark CSVs: header checks, row numbers, ragged and undecodable rows, encodings."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.liger.csv import UPSTREAM_COLUMNS, CsvFormatError, CsvReader, read_rows
from tests.support import FIXTURES
from tests.support.liger_rows import BASE_ROW, csv_bytes, row

HEADER = ",".join(UPSTREAM_COLUMNS)
LINE = csv_bytes([BASE_ROW]).decode().splitlines()[1]


def fates(data: bytes):
    header, rows = read_rows(data)
    return header, [(n, None if values is None else values[0], problem) for n, values, problem in rows]


def test_plain_file_reads_every_column_as_text():
    header, rows = read_rows(csv_bytes([row(x_value=" 64 ", y_value_50="1e3")]))
    assert header.drift_warnings == []
    ((number, values, problem),) = rows
    assert number == 1 and problem is None
    assert dict(zip(UPSTREAM_COLUMNS, values, strict=False)) == row(x_value=" 64 ", y_value_50="1e3")


def test_quoted_json_with_doubled_quotes_survives():
    _, rows = read_rows(csv_bytes([BASE_ROW]))
    assert rows[0][1][UPSTREAM_COLUMNS.index("extra_benchmark_config_str")] == BASE_ROW["extra_benchmark_config_str"]
    assert b'""M""' in csv_bytes([BASE_ROW])


def test_bom_and_crlf():
    data = csv_bytes([BASE_ROW, row(kernel_name="softmax")], newline="\r\n", bom=True)
    header, rows = fates(data)
    assert header.columns == list(UPSTREAM_COLUMNS)
    assert rows == [(1, "rms_norm", None), (2, "softmax", None)]
    assert read_rows(data)[1][0][1][-1] == "0.5.0"  # no stray \r in the last column


def test_empty_and_header_only():
    assert fates(b"") == (None, [])
    header, rows = fates((HEADER + "\n").encode())
    assert header.columns == list(UPSTREAM_COLUMNS) and rows == []


def test_missing_column_is_fatal_and_named():
    with pytest.raises(CsvFormatError, match="'x_value'"):
        CsvReader(HEADER.replace(",x_value", "").encode())


def test_unexpected_column_is_drift():
    data = csv_bytes([row(notes="hello")], columns=UPSTREAM_COLUMNS + ("notes",))
    header, rows = fates(data)
    assert header.drift_warnings == ["unexpected column 'notes' (ignored)"]
    assert rows == [(1, "rms_norm", None)]


@pytest.mark.parametrize(
    "bad_line, fields",
    [("a,b,c", 3), (LINE + ",extra", 16), (LINE + ",", 16), ('"unterminated', 1)],
)
def test_ragged_rows_are_issues_with_data_row_numbers(bad_line, fields):
    data = (HEADER + "\n" + LINE + "\n" + bad_line + "\n" + LINE + "\n").encode()
    if bad_line.startswith('"'):  # the open quote runs on to the next quote (row 3's config's): one ragged row
        _, rows = fates(data)
        assert rows == [(1, "rms_norm", None), (2, None, "ragged row: 6 fields, the header has 15")]
        _, rows = fates((HEADER + "\n" + LINE + "\n" + bad_line + "\na,b\n").encode())  # no quote after it
        assert rows == [
            (1, "rms_norm", None),
            (2, None, "quote never closed: a quoted field of this row runs to the end of the file (18 bytes)"),
        ]
        return
    _, rows = fates(data)
    assert rows == [
        (1, "rms_norm", None),
        (2, None, f"ragged row: {fields} fields, the header has 15"),
        (3, "rms_norm", None),
    ]


def test_first_row_too_long_is_not_taken_as_an_index():
    data = (HEADER + "\n" + LINE + ",extra\n" + LINE + "\n").encode()
    _, rows = fates(data)
    assert rows == [(1, None, "ragged row: 16 fields, the header has 15"), (2, "rms_norm", None)]


def test_empty_last_cell_is_not_ragged():
    _, rows = fates(csv_bytes([row(liger_version=""), BASE_ROW]))
    assert rows == [(1, "rms_norm", None), (2, "rms_norm", None)]


def test_row_numbers_count_records_not_lines():
    multi = row(x_label="two\nlines")
    data = csv_bytes([multi, BASE_ROW]) + b"a,b\n"
    _, rows = fates(data)
    assert rows[:2] == [(1, "rms_norm", None), (2, "rms_norm", None)]
    assert rows[2] == (3, None, "ragged row: 2 fields, the header has 15")


def test_blank_lines_are_not_rows():
    data = (HEADER + "\n\n" + LINE + "\n\n   \n" + LINE + "\n").encode()
    assert fates(data)[1] == [(1, "rms_norm", None), (2, "rms_norm", None)]


def test_undecodable_row_is_an_issue_not_a_failure():
    data = csv_bytes([BASE_ROW, BASE_ROW, BASE_ROW])
    data = data.replace(b"0.5.0", b"0.5.\xff", 2).replace(b"0.5.\xff", b"0.5.0", 1)  # only the 2nd row is bad
    _, rows = fates(data)
    assert rows == [(1, "rms_norm", None), (2, None, "row is not valid UTF-8"), (3, "rms_norm", None)]


def test_chunks_keep_row_numbers_across_the_exact_fallback():
    lines = [LINE] * 7 + ["x,y"] + [LINE] * 5
    data = (HEADER + "\n" + "\n".join(lines) + "\n").encode()
    reader = CsvReader(data, chunk_rows=3)
    numbered = []
    for chunk in reader:
        for j in range(len(chunk)):
            numbered.append((chunk.start + j, chunk.bad.get(j)))
    assert [n for n, _ in numbered] == list(range(1, 14))
    assert [n for n, p in numbered if p] == [8]


def test_missing_file():
    with pytest.raises(CsvFormatError, match="no such file"):
        CsvReader("/nonexistent/all_benchmark_data.csv")


# ---------------------------------------------------------------- issue 11: unbounded inputs (items 7, 9)


def _no_pandas(monkeypatch):
    import pandas as pd  # liger/csv.py imports pandas where it reads; the patch is on the module it imports

    def refuse(*_args, **_kwargs):
        raise AssertionError("pandas was asked to read a header wider than the limit")

    monkeypatch.setattr(pd, "read_csv", refuse)


@pytest.mark.parametrize("extra", [242, 5_000])  # 15 + 242 = 257 columns: one over the limit
def test_a_header_wider_than_the_limit_is_refused_before_pandas(monkeypatch, tmp_path, extra):
    _no_pandas(monkeypatch)
    header = HEADER + "," + ",".join(f"c{i}" for i in range(extra))
    path = tmp_path / "wide.csv"
    path.write_text(header + "\n" + LINE + "\n")
    with pytest.raises(CsvFormatError, match=r"the header has \d+\+? columns; at most 256"):
        CsvReader(path)
    with pytest.raises(CsvFormatError, match="at most 256"):
        CsvReader(path.read_bytes())


def test_a_header_of_empty_fields_is_refused_before_pandas(monkeypatch):
    _no_pandas(monkeypatch)
    with pytest.raises(CsvFormatError, match="at most 256"):
        CsvReader(b"\n".join([b"," * 100_000] * 3) + b"\n")


def test_a_header_line_longer_than_the_limit_is_refused(monkeypatch):
    _no_pandas(monkeypatch)
    with pytest.raises(CsvFormatError, match="header line is longer than 64 KiB"):
        CsvReader(b"x" * 200_000 + b"\n" + LINE.encode() + b"\n")


def test_wide_data_rows_are_ragged_rows_not_columns():
    data = csv_bytes([BASE_ROW]) + b"," * 1000 + b"\n" + LINE.encode() + b"\n"
    _, rows = fates(data)
    assert rows == [
        (1, "rms_norm", None),
        (2, None, "ragged row: 1001 fields, the header has 15"),
        (3, "rms_norm", None),
    ]


# --- issue 22 item 2: every data row bounded before pandas sees it ---------------------------------------
def test_rows_over_the_field_limit_are_issues_naming_them_and_pandas_never_sees_them(monkeypatch):
    _no_pandas(monkeypatch)
    data = csv_bytes([BASE_ROW]) + b"\n".join([b"," * 400_000] * 3) + b"\n" + LINE.encode() + b"\n"
    _, rows = fates(data)
    too_wide = "row too wide: 400001 fields in 400001 bytes (at most 1024 fields and 1048576 bytes are read)"
    assert rows == [
        (1, "rms_norm", None),
        (2, None, too_wide),
        (3, None, too_wide),
        (4, None, too_wide),
        (5, "rms_norm", None),
    ]


def test_a_row_over_the_byte_limit_is_an_issue_even_inside_quotes_spanning_lines():
    huge = row(extra_benchmark_config_str='{"pad": "' + "x,\n" * 400_000 + '"}')  # 1.2 MB in one quoted field
    _, rows = fates(csv_bytes([BASE_ROW, huge, BASE_ROW]))
    assert [(n, problem) for n, _, problem in rows][1] == (
        2,
        "row too wide: 15 fields in 1200133 bytes (at most 1024 fields and 1048576 bytes are read)",
    )
    assert [(n, first) for n, first, _ in rows] == [(1, "rms_norm"), (2, None), (3, "rms_norm")]


def test_a_row_is_never_held_past_the_limit(monkeypatch):
    import io

    import kernelindex_pipeline.liger.csv as liger_csv

    monkeypatch.setattr(liger_csv, "MAX_ROW_BYTES", 1000)
    held = []
    real = liger_csv.bounded_records

    def watched(handle):
        for record in real(handle):
            held.append(len(record))
            yield record

    monkeypatch.setattr(liger_csv, "bounded_records", watched)
    data = csv_bytes([BASE_ROW]) + b"x" * 50_000 + b"\n" + LINE.encode() + b"\n"  # one 50 kB field
    _, rows = fates(data)
    assert [problem for _, _, problem in rows] == [
        None,
        "row too wide: 1 fields in 50001 bytes (at most 1024 fields and 1000 bytes are read)",
        None,
    ]
    assert max(held) < 1000
    assert list(real(io.BytesIO(b'a,"b\nc",d\n\ne,f'))) == [b'a,"b\nc",d\n', b"\n", b"e,f"]


def test_files_within_the_limits_read_the_same_either_way(monkeypatch):
    import kernelindex_pipeline.liger.csv as liger_csv

    data = csv_bytes([BASE_ROW, row(x_label="two\nlines"), row(kernel_name="softmax")])
    # A quoted field spanning lines is within the limits: the row reader splits as pandas does, so pandas reads it.
    assert not liger_csv.may_hold_wide_rows(data)
    assert not liger_csv.may_hold_wide_rows(csv_bytes([BASE_ROW] * 3))
    fast = read_rows(data)
    monkeypatch.setattr(liger_csv, "may_hold_wide_rows", lambda source: True)
    assert read_rows(data) == fast
    assert [values[0] for _, values, _ in fast[1]] == ["rms_norm", "rms_norm", "softmax"]
    assert fast[1][1][1][UPSTREAM_COLUMNS.index("x_label")] == "two\nlines"


def test_a_long_field_and_a_ragged_row_are_each_handled_in_one_file():
    long_field = row(extra_benchmark_config_str='{"M": 1, "pad": "' + "x" * 200_000 + '"}')
    data = csv_bytes([long_field, BASE_ROW]) + b"a,b,c\n" + LINE.encode() + b"\n"
    header, rows = read_rows(data)
    assert [(n, problem) for n, _, problem in rows] == [
        (1, None),
        (2, None),
        (3, "ragged row: 3 fields, the header has 15"),
        (4, None),
    ]
    assert len(rows[0][1][UPSTREAM_COLUMNS.index("extra_benchmark_config_str")]) > 200_000


def test_an_unreadable_record_names_its_data_row():
    import csv

    # Python's csv module reports little as errors; a lowered field limit stands in for any of them.
    data = csv_bytes([BASE_ROW, BASE_ROW]) + b"a,b\n" + csv_bytes([row(x_label="y" * 500)]).split(b"\n", 1)[1]
    previous = csv.field_size_limit(300)
    try:
        with pytest.raises(CsvFormatError, match=r"at data row 4 \(line 5\)"):
            read_rows(data)
    finally:
        csv.field_size_limit(previous)


def test_a_directory_is_not_no_such_file(tmp_path):
    with pytest.raises(CsvFormatError, match="is a directory"):
        CsvReader(tmp_path)


def test_the_bounded_reader_gives_the_fast_paths_rows_on_real_ci_rows(monkeypatch):

    import kernelindex_pipeline.liger.csv as liger_csv

    real = FIXTURES / "liger-ci-slice.csv"
    assert not liger_csv.may_hold_wide_rows(real)
    fast = read_rows(real)
    monkeypatch.setattr(liger_csv, "may_hold_wide_rows", lambda source: True)
    bounded = read_rows(real)
    assert bounded[0].columns == fast[0].columns and bounded[1] == fast[1] and len(fast[1]) == 940


# --- issue 31 item 11: the row reader splits records where the csv module (and pandas) do -----------------
HOSTILE = FIXTURES / "liger-hostile-csv"


def _parser_records(data: bytes, encoding: str = "utf-8-sig") -> list[list[str]]:
    """The stdlib csv module over the whole input, as the exact reader opens it (no bound, no row reader)."""
    import csv
    import io

    return list(csv.reader(io.TextIOWrapper(io.BytesIO(data), encoding=encoding, errors="surrogateescape", newline="")))


def _expected_fates(data: bytes) -> list[tuple[int, tuple[str, ...] | None]]:
    """Each data row as the csv module splits the whole file: its values when it is a valid row (15 fields,
    valid UTF-8), else None; numbered as liger/csv.py numbers rows (blank lines are not rows)."""
    records = [r for r in _parser_records(data) if r and not (len(r) == 1 and not r[0].strip())]
    assert records[0] == list(UPSTREAM_COLUMNS)
    fates = []
    for number, record in enumerate(records[1:], 1):
        valid = len(record) == len(UPSTREAM_COLUMNS) and not any("\udc80" <= c <= "\udcff" for c in "".join(record))
        fates.append((number, tuple(record) if valid else None))
    return fates


def _pandas_records(data: bytes) -> list[list[str]]:
    """pandas' C tokenizer over the whole input, ragged rows kept (64 named columns, short rows padded)."""
    import io

    import pandas as pd

    frame = pd.read_csv(
        io.BytesIO(data),
        header=None,
        names=list(range(64)),
        dtype=object,
        keep_default_na=False,
        na_filter=False,
        encoding="utf-8",
        encoding_errors="surrogateescape",
        engine="c",
    )
    return frame.values.tolist()


# file -> (valid rows, {row: the start of its issue}) as the csv module splits it
HOSTILE_FATES = {
    "quote-inside-a-field.csv": (100, {}),
    "quote-opened-at-row-5.csv": (99, {5: "ragged row: 6 fields"}),
    "ff-bytes.csv": (96, {7: "ragged row: 16 fields", 11: "ragged row: 16 fields", 19: "row is not valid UTF-8"}),
    "quote-never-closed.csv": (97, {98: "quote never closed: a quoted field of this row runs to the end of the file"}),
}


@pytest.mark.parametrize("size", ["fixture-at-low-limits", "history-sized"])
@pytest.mark.parametrize("name", sorted(HOSTILE_FATES))
def test_hostile_csvs_are_read_as_the_csv_module_and_pandas_split_them(name, size, monkeypatch, tmp_path):
    import kernelindex_pipeline.liger.csv as liger_csv

    data, offset = (HOSTILE / name).read_bytes(), 0
    if size == "fixture-at-low-limits":  # what each bad row swallows is over them, whatever the file's size
        monkeypatch.setattr(liger_csv, "MAX_ROW_FIELDS", 64)
        monkeypatch.setattr(liger_csv, "MAX_ROW_BYTES", 4096)
    else:  # about the 0.8.5 history's 3,018 rows, at the real limits: the rows after a bad one are over them
        header, rows = data.split(b"\n", 1)
        clean = (HOSTILE / "quote-inside-a-field.csv").read_bytes().split(b"\n", 2)[2] * 30  # its rows 2-100
        if name == "quote-never-closed.csv":  # it must stay at the end
            data, offset = header + b"\n" + clean + rows, 30 * 99
        else:
            data = header + b"\n" + rows + clean
    path = tmp_path / name
    path.write_bytes(data)
    expected = _expected_fates(data)
    padded = [list(values) + [""] * (64 - len(values)) for values in _parser_records(data) if values]
    if name == "quote-never-closed.csv":  # pandas refuses the file, naming the row the quote opened in
        import pandas as pd

        with pytest.raises(pd.errors.ParserError, match=f"EOF inside string starting at row {98 + offset}"):
            _pandas_records(data)
    else:
        assert _pandas_records(data) == padded  # both parsers split the file the same way

    _, rows = read_rows(path)
    assert [n for n, _, _ in rows] == [n for n, _ in expected]
    for (number, values, problem), (_, want) in zip(rows, expected, strict=True):
        assert values == want, number  # every valid row read, with its values as the parser reads them
        assert (problem is None) == (want is not None), (number, problem)
    valid, problems = HOSTILE_FATES[name]
    assert sum(values is not None for _, values, _ in rows) == valid + (30 * 99 if size == "history-sized" else 0)
    issues = {n - offset: problem for n, _, problem in rows if problem}
    assert sorted(issues) == sorted(problems)
    assert all(issues[n].startswith(start) for n, start in problems.items()), issues


def test_a_10_mb_field_never_closed_is_one_row_too_wide_and_every_other_row_is_read(tmp_path):
    import tracemalloc

    import pandas  # noqa: F401 - imported before the measurement: its first import alone allocates ~35 MB

    lines = (HOSTILE / "quote-inside-a-field.csv").read_bytes().split(b"\n")
    # A quote opening row 3's GPU name and 10 MB with no quote: the csv module reads on to row 4's first
    # quote (its config's), so rows 3 and 4 are one record of more than a MiB.
    lines[3] = lines[3].replace(b",NVIDIA", b',"' + b"x" * 10_000_000 + b"NVIDIA", 1)
    path = tmp_path / "long-field.csv"
    path.write_bytes(b"\n".join(lines))
    expected = _expected_fates(path.read_bytes())
    fields, size = len(_parser_records(path.read_bytes())[3]), len(lines[3]) + len(lines[4]) + 2
    tracemalloc.start()
    try:
        _, rows = read_rows(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [(n, p) for n, _, p in rows if p] == [
        (3, f"row too wide: {fields} fields in {size} bytes (at most 1024 fields and 1048576 bytes are read)")
    ]
    assert size > 10_000_000
    assert [(n, v) for n, v, _ in rows if v is not None] == [(n, v) for n, v in expected if v is not None]
    assert len(rows) == 99 and sum(v is not None for _, v, _ in rows) == 98
    # The record is held at most a MiB at a time (about 8 MiB in all, most of it the UTF-8 check's 4 MiB
    # block and its text); the csv module alone on this file peaks at 73 MiB.
    assert peak < 16 * 2**20, peak


_CSV_BYTES = [b"a", b"x", b",", b'"', b'""', b',"', b"\n", b"\r", b"\r\n", b"\xff", b"\xe2\x82", b" "]


@given(
    pieces=st.lists(st.sampled_from(_CSV_BYTES), max_size=40),
    bom=st.booleans(),
    piece_bytes=st.integers(3, 12),
    max_bytes=st.integers(4, 40),
    max_fields=st.integers(2, 8),
)
@settings(max_examples=400, deadline=None, derandomize=True)
def test_the_row_reader_splits_records_where_the_csv_module_does(pieces, bom, piece_bytes, max_bytes, max_fields):
    """Any bytes, read in pieces of any size, under any limits: each record the row reader passes on is the
    csv module's record at that place; each it replaces is over the limits or ends the file inside a quote."""
    import io
    from unittest import mock

    import kernelindex_pipeline.liger.csv as liger_csv

    data = (b"\xef\xbb\xbf" if bom else b"") + b"".join(pieces)
    whole = _parser_records(data)  # a blank line is a record too ([]): the exact reader skips it
    limits = dict(_PIECE_BYTES=piece_bytes, MAX_ROW_BYTES=max_bytes, MAX_ROW_FIELDS=max_fields)
    with mock.patch.multiple(liger_csv, **limits):
        splits = list(liger_csv._records(io.BytesIO(data)))
        passed = list(liger_csv.bounded_records(io.BytesIO(data)))
    assert sum(split.size for split in splits) == len(data)
    if data == b"\xef\xbb\xbf":  # a byte-order mark alone: bytes, but no record
        assert whole == [] and passed == [data]
        return
    assert len(splits) == len(whole) == len(passed)  # one record each: none split, none joined
    for i, (split, record, out) in enumerate(zip(splits, whole, passed, strict=True)):
        encoding = "utf-8-sig" if i == 0 else "utf-8"  # the text stream drops the mark at the start only
        assert split.fields == max(len(record), 1)  # a blank line has one (empty) field to pandas
        if split.data is not None:
            assert _parser_records(split.data, encoding) == [record]
        if split.size > max_bytes or split.fields > max_fields:
            assert split.data is None and out.startswith(b"\x1ekernelindex: row too wide") and len(out) < 200
        elif not split.closed:
            assert i == len(splits) - 1 and out.startswith(b"\x1ekernelindex: quote never closed")
        else:
            assert out == split.data
    if all(split.data is not None for split in splits):
        assert b"".join(split.data for split in splits) == data
