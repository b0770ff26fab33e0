"""sweep/data_csv.py on its own (no scripts run): the data CSV read back from whatever a script left,
and the runner's row ledger that restores earlier scripts' rows and names what happened."""

import csv
import io
import os

import pytest

from kernelindex_pipeline.sweep.data_csv import (
    UPSTREAM_COLUMNS,
    RowLedger,
    read_data_csv,
    write_data_csv,
    write_empty_data_csv,
)


def row(kernel: str, x_value: str, y: str = "1.0") -> dict:
    cells = dict.fromkeys(UPSTREAM_COLUMNS, "")
    cells.update(
        kernel_name=kernel,
        kernel_provider="liger",
        kernel_operation_mode="forward",
        metric_name="speed",
        x_name="N",
        x_value=x_value,
        y_value_50=y,
        gpu_name="NVIDIA H100 80GB HBM3",
    )
    return cells


def csv_text(rows: list[dict]) -> str:
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=list(UPSTREAM_COLUMNS))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


@pytest.fixture
def data_csv(tmp_path):
    path = tmp_path / "tree" / "all_benchmark_data.csv"
    write_empty_data_csv(path)
    return path


def test_an_empty_data_csv_is_its_header_alone(data_csv):
    assert data_csv.read_text().strip() == ",".join(UPSTREAM_COLUMNS)
    state = read_data_csv(data_csv)
    assert (state.rows, state.damaged, state.problem) == ({}, False, None)


def test_each_script_owns_the_rows_it_added(data_csv, tmp_path):
    ledger = RowLedger(data_csv, tmp_path / "quarantine")
    data_csv.write_text(csv_text([row("rms_norm", "1024"), row("rms_norm", "2048")]))
    first = ledger.settle("benchmark_rms_norm.py")
    assert (len(first.new_keys), first.repaired, first.problems) == (2, False, [])
    data_csv.write_text(csv_text([row("rms_norm", "1024"), row("rms_norm", "2048"), row("swiglu", "1024")]))
    second = ledger.settle("benchmark_swiglu.py")
    assert [r["kernel_name"] for r in second.new_rows()] == ["swiglu"]
    assert ledger.owners[second.new_keys[0]][0] == "benchmark_swiglu.py"


def test_removed_and_changed_rows_of_earlier_scripts_are_restored_and_named(data_csv, tmp_path):
    ledger = RowLedger(data_csv, tmp_path / "quarantine")
    data_csv.write_text(csv_text([row("rms_norm", "1024"), row("rms_norm", "2048")]))
    ledger.settle("benchmark_rms_norm.py")
    # The next script drops one earlier row, rewrites the other and adds its own.
    data_csv.write_text(csv_text([row("rms_norm", "2048", y="9.9"), row("swiglu", "1024")]))
    settled = ledger.settle("benchmark_swiglu.py")
    assert settled.repaired
    kinds = {p["kind"]: p["message"] for p in settled.problems}
    assert set(kinds) == {"rows_lost", "rows_rewritten"}
    assert "removed 1 row(s) that earlier scripts wrote (benchmark_rms_norm.py: 1)" in kinds["rows_lost"]
    assert "changed 1 row(s) that earlier scripts wrote (benchmark_rms_norm.py: 1)" in kinds["rows_rewritten"]
    kept = read_data_csv(data_csv).rows
    assert sorted((r["kernel_name"], r["x_value"], r["y_value_50"]) for r in kept.values()) == [
        ("rms_norm", "1024", "1.0"),
        ("rms_norm", "2048", "1.0"),
        ("swiglu", "1024", "1.0"),
    ]


def test_a_rewrite_cut_short_keeps_earlier_rows_and_the_complete_new_ones(data_csv, tmp_path):
    ledger = RowLedger(data_csv, tmp_path / "quarantine")
    data_csv.write_text(csv_text([row("rms_norm", "1024")]))
    ledger.settle("benchmark_rms_norm.py")
    text = csv_text([row("rms_norm", "1024"), row("swiglu", "1024"), row("swiglu", "2048")])
    data_csv.write_text(text[:-5])  # killed during its rewrite: the last row has no end
    settled = ledger.settle("benchmark_swiglu.py")
    assert settled.repaired and len(settled.new_keys) == 1
    (problem,) = settled.problems  # the damage, said once; not also as rows lost
    assert problem["kind"] == "data_csv" and "was cut short (no newline at its end)" in problem["message"]
    assert sorted(r["x_value"] + r["kernel_name"] for r in read_data_csv(data_csv).rows.values()) == [
        "1024rms_norm",
        "1024swiglu",
    ]


def test_a_data_csv_replaced_by_a_directory_is_moved_aside_and_rewritten(data_csv, tmp_path):
    ledger = RowLedger(data_csv, tmp_path / "quarantine")
    data_csv.write_text(csv_text([row("rms_norm", "1024")]))
    ledger.settle("benchmark_rms_norm.py")
    data_csv.unlink()
    data_csv.mkdir()
    (data_csv / "junk").write_text("x")
    settled = ledger.settle("benchmark_swiglu.py")
    (problem,) = settled.problems
    assert "was replaced by a directory" in problem["message"] and "moved the directory" in problem["message"]
    assert data_csv.is_file() and len(read_data_csv(data_csv).rows) == 1
    assert [p.name for p in (tmp_path / "quarantine").iterdir()] == ["all_benchmark_data.csv.1"]


def test_reading_never_follows_a_link_nor_blocks_on_a_fifo(tmp_path):
    target = tmp_path / "elsewhere.csv"
    target.write_text(csv_text([row("rms_norm", "1024")]))
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    assert read_data_csv(link).problem == "was replaced by a symbolic link"
    fifo = tmp_path / "fifo.csv"
    os.mkfifo(fifo)
    assert read_data_csv(fifo).problem == "was replaced by a FIFO"
    assert read_data_csv(tmp_path / "missing.csv").problem == "is missing"


def test_write_data_csv_replaces_whatever_sits_at_its_temporary_name(data_csv, tmp_path):
    temporary = data_csv.with_name(data_csv.name + ".tmp")
    temporary.mkdir()
    notes = write_data_csv(data_csv, list(UPSTREAM_COLUMNS), [row("rms_norm", "1024")], tmp_path / "quarantine")
    assert notes == [f"moved the directory at {temporary.name} to {tmp_path / 'quarantine' / (temporary.name + '.1')}"]
    assert len(read_data_csv(data_csv).rows) == 1 and not temporary.exists()
