"""Runs built in worker processes equal runs built in-process: same lines, digests and order."""

from __future__ import annotations

import json

import pytest

from kernelindex_pipeline.cli import main
from kernelindex_pipeline.liger import InvalidRecord, MeasuredContext, import_csv, parallel
from tests.support.liger_rows import csv_bytes, row


def many_rows(n: int) -> bytes:
    rows = []
    for i in range(n):
        rows.append(
            row(
                x_value=str(256 * (1 + i % 7)),
                kernel_provider=["liger", "torch", "huggingface"][i % 3],
                kernel_operation_mode=["forward", "backward", "full"][i % 3],
                timestamp=f"2025-03-{1 + i % 28:02d} 12:{i // 60 % 60:02d}:{i % 60:02d}",
                y_value_50=f"{0.1 + i / 1000:.6f}",
                y_value_20="nan" if i % 11 == 0 else "0.09",
                metric_name="memory" if i % 13 == 0 else "speed",
            )
        )
    rows.append(rows[n // 2])  # a duplicate
    return csv_bytes(rows)


def collect(data: bytes, **kwargs):
    runs = []
    result = import_csv(data, on_run=runs.append, **kwargs)
    return result, [(r.name, r.digest, r.external_id, r.line) for r in runs]


def test_workers_build_the_same_runs_in_the_same_order(monkeypatch):
    monkeypatch.setattr(parallel, "DEFAULT_BATCH_RUNS", 7)  # many batches, both workers busy
    data = many_rows(300)
    serial, serial_runs = collect(data, workers=0)
    for workers in (1, 2):
        result, runs = collect(data, workers=workers)
        assert runs == serial_runs
        assert result.report.to_dict() == serial.report.to_dict()
        assert set(result.manifests) == set(serial.manifests)
    assert serial.report.duplicate_rows == 1 and serial.report.runs == len(serial_runs) > 200


def test_streamed_manifest_is_parsed_from_the_line():
    _, runs = collect(many_rows(20), workers=0)
    result_runs = []
    import_csv(many_rows(20), on_run=result_runs.append, workers=2)
    assert [json.loads(r.line) for r in result_runs] == [r.manifest for r in result_runs]


def test_invalid_run_from_a_worker_is_an_error_naming_record_and_field():
    measured = MeasuredContext(
        software={}, logs_by_kernel={"rms_norm": {"uri": "not a uri", "digest": "sha256:" + "0" * 64}}
    )
    with pytest.raises(InvalidRecord, match=r"BenchmarkRun/liger-rms-norm-.*: spec\.evidence\.logs\.uri"):
        import_csv(many_rows(5), measured=measured, on_run=lambda r: None, workers=2)


def test_workers_need_streaming():
    with pytest.raises(ValueError, match="on_run"):
        import_csv(many_rows(3), workers=2)


def test_cli_output_does_not_depend_on_workers(tmp_path):
    path = tmp_path / "b.csv"
    path.write_bytes(many_rows(120))
    assert main(["transform", str(path), "--workers", "0", "--out", str(tmp_path / "a")]) == 0
    assert main(["transform", str(path), "--workers", "2", "--out", str(tmp_path / "b")]) == 0
    assert (tmp_path / "a" / "records.jsonl").read_bytes() == (tmp_path / "b" / "records.jsonl").read_bytes()
