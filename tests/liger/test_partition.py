"""Slicing a history CSV into (GPU, Liger version) partitions, and a partition through the stages."""

from __future__ import annotations

from kernelindex_pipeline.liger import partition as liger_partition
from kernelindex_pipeline.liger.partition import PartitionCsv, slice_history
from tests.support.liger_rows import csv_bytes, row


def test_rows_are_grouped_by_gpu_slug_and_version_and_unusable_rows_are_counted():
    rows = [
        row(),
        row(liger_version="0.6.0"),
        row(gpu_name="NVIDIA A100-SXM4-80GB"),
        row(gpu_name=""),  # no GPU: no partition
        row(liger_version="0.5|0"),  # would break a multi-partition key
        row(liger_version=""),
    ]
    data = csv_bytes(rows).replace(b"\n", b"\n\n", 1)  # a blank line after the header is no row
    slices = slice_history(data + b"rms_norm,liger,forward\n")  # a ragged last row
    assert slices.rows_read == 7
    assert {key: part.rows for key, part in slices.partitions.items()} == {
        ("nvidia-h100-80gb-hbm3", "0.5.0"): 1,
        ("nvidia-h100-80gb-hbm3", "0.6.0"): 1,
        ("nvidia-a100-sxm4-80gb", "0.5.0"): 1,
    }
    assert slices.unattributable_rows == [4, 5, 6, 7]


def test_a_partition_digest_changes_only_with_its_own_rows():
    before = slice_history(csv_bytes([row(), row(gpu_name="NVIDIA A100-SXM4-80GB")]))
    after = slice_history(csv_bytes([row(), row(gpu_name="NVIDIA A100-SXM4-80GB", y_value_50="0.2")]))
    h100, a100 = ("nvidia-h100-80gb-hbm3", "0.5.0"), ("nvidia-a100-sxm4-80gb", "0.5.0")
    assert before.partitions[h100].content_digest == after.partitions[h100].content_digest
    assert before.partitions[a100].content_digest != after.partitions[a100].content_digest


def test_bytes_that_are_not_utf8_survive_slicing_and_become_a_row_issue():
    data = csv_bytes([row(), row(x_value="2048")]).replace(b"hidden size", b"hidden \xff size", 1)
    (part,) = slice_history(data).partitions.values()
    assert b"\xff" in part.csv_bytes
    partition_csv = PartitionCsv(part.gpu, part.liger_version, "history", part.csv_bytes, {"locator": "test"})
    result = liger_partition.build_records(liger_partition.parse_partition_csv(partition_csv), partition_csv)
    report = result.report.to_dict()
    assert report["runs"] == 1 and report["issues"] == [{"row": 1, "problem": "row is not valid UTF-8"}]
    assert result.report.conserved()
