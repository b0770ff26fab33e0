"""Reading benchmark CSVs: header checks, row numbers, ragged and undecodable rows, encodings."""

from __future__ import annotations

import pytest

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
    if bad_line.startswith('"'):  # an open quote swallows the rest of the file: one ragged record
        _, rows = fates(data)
        assert rows[0] == (1, "rms_norm", None) and rows[1][1] is None and len(rows) == 2
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


def test_files_within_the_limits_read_the_same_either_way():
    from kernelindex_pipeline.liger.csv import may_hold_wide_rows

    data = csv_bytes([BASE_ROW, row(x_label="two\nlines"), row(kernel_name="softmax")])
    assert may_hold_wide_rows(data)  # a quoted field spans lines: read bounded
    assert not may_hold_wide_rows(csv_bytes([BASE_ROW] * 3))
    header, rows = read_rows(data)
    assert [values[0] for _, values, _ in rows] == ["rms_norm", "rms_norm", "softmax"]
    assert rows[1][1][UPSTREAM_COLUMNS.index("x_label")] == "two\nlines"


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
