"""Coverage of real Liger output under the full profile, and model_config (categorical) rows.

`fixtures/liger-ci-slice.csv` holds one real row of each row format in Liger's CI CSVs (see its .md);
`fixtures/liger-ci/` and `fixtures/liger-ci-report/` hold slices of whole real CI files.
"""

from __future__ import annotations

import json

import pytest

from kernelindex_pipeline.imports.coverage import CoverageTable
from kernelindex_pipeline.liger import identity, import_csv
from kernelindex_pipeline.records.canonical import canonical_bytes
from kernelindex_pipeline.records.schema import validate_manifest
from tests.support import FIXTURES
from tests.support.liger_rows import csv_bytes, row

SLICE = FIXTURES / "liger-ci-slice.csv"
REAL_CI_FILES = [
    SLICE,
    *sorted((FIXTURES / "liger-ci").glob("*.csv")),
    *sorted((FIXTURES / "liger-ci-report").glob("*.csv")),
]


def test_every_row_format_of_liger_ci_binds_under_the_full_profile():
    result = import_csv(SLICE, profile="full")
    report = result.report
    assert report.conserved() and report.issues == []
    by_metric = CoverageTable.of([report]).by_metric()
    assert set(by_metric) == {"speed", "memory"}
    for metric, totals in by_metric.items():
        assert totals["runs"] == totals["rows"], (metric, totals["skipped"])
    for manifest in result.manifests.values():
        assert validate_manifest(manifest) == [], manifest["metadata"]["name"]


def test_on_real_rows_the_full_profile_keeps_every_reference_object():
    reference = import_csv(SLICE, profile="reference")
    full = import_csv(SLICE, profile="full")
    assert 0 < reference.report.runs < full.report.runs
    for digest, manifest in reference.manifests.items():
        assert canonical_bytes(full.manifests[digest]) == canonical_bytes(manifest), manifest["metadata"]["name"]


MODEL_ROW = row(
    kernel_name="cross_entropy",
    kernel_provider="liger",
    x_name="model_config",
    x_label="model configuration",
    x_value="llama_3_8b",
    extra_benchmark_config_str=json.dumps({"bsz": 2, "seq_len": 1024}),
)


def test_model_config_row_takes_its_sizes_from_the_model_table():
    result = import_csv(csv_bytes([MODEL_ROW]), profile="full")
    (run,) = result.runs()
    case = result.manifests[run["spec"]["workloadDigest"]]
    assert case["spec"]["axes"] == {"tokens": 2048, "vocab": 128256}  # bsz * seq_len, llama_3_8b's vocab_size
    assert case["metadata"]["labels"] == {"model_config": "llama_3_8b"}
    assert case["metadata"]["title"].endswith(" · llama_3_8b")
    ident = identity.parse_external_id(run["spec"]["sourceNative"]["externalId"])
    assert identity.case_category(ident.case_key) == "llama_3_8b"
    assert identity.parse_case_key(ident.case_key) == ({"tokens": 2048, "vocab": 128256}, "fp32")


def test_two_models_with_the_same_sizes_are_two_runs_on_one_case_digest():
    rows = [
        row(
            kernel_name="rms_norm",
            x_name="model_config",
            x_value=model,
            extra_benchmark_config_str=json.dumps({"bsz": 1, "seq_len": 512, "eps": 1e-6}),
        )
        for model in ("llama_2_7b", "llama_3_8b")
    ]  # both hidden_size 4096
    result = import_csv(csv_bytes(rows), profile="full")
    assert result.report.runs == 2 and result.report.duplicate_rows == 0
    assert len({r["spec"]["workloadDigest"] for r in result.runs()}) == 1
    assert sorted(result.names_by_digest[result.runs()[0]["spec"]["workloadDigest"]]) == [
        "liger-rms-norm-hidden4096-rows512-bf16-llama-2-7b",
        "liger-rms-norm-hidden4096-rows512-bf16-llama-3-8b",
    ]


@pytest.mark.parametrize("x_value", ["no_such_model", "", "1024"])
def test_a_model_config_row_naming_no_known_model_is_unknown_config(x_value):
    report = import_csv(csv_bytes([row(**{**MODEL_ROW, "x_value": x_value})]), profile="full").report.to_dict()
    assert report["runs"] == 0 and report["skipped"]["unknownConfig"] == {"cross_entropy": 1}


def test_model_config_rows_are_unknown_config_to_the_reference():
    report = import_csv(csv_bytes([MODEL_ROW]), profile="reference").report.to_dict()
    assert report["skipped"]["unknownConfig"] == {"cross_entropy": 1}


def test_liger_ci_files_at_least_99_percent_of_speed_and_memory_rows_become_runs():
    files = REAL_CI_FILES
    assert len(files) >= 5
    reports = [import_csv(path, profile="full", on_run=lambda run: None).report for path in files]
    assert all(r.conserved() for r in reports)
    by_metric = CoverageTable.of(reports).by_metric()
    for metric in ("speed", "memory"):
        assert by_metric[metric]["runs"] >= 0.99 * by_metric[metric]["rows"], (metric, by_metric[metric]["skipped"])


def test_a_model_rule_reading_a_field_the_model_lacks_does_not_match(tmp_path):
    from kernelindex_pipeline.liger.catalogue import load_catalogue

    ext = tmp_path / "ext.yaml"
    ext.write_text(
        "models:\n  dense: {hidden_size: 64}\n  moe: {hidden_size: 64, num_experts: 8}\n"
        "rules:\n  rms_norm:\n"
        "    - {x_name: model_config, category: model, require: {seq_len: int}, axes: {rows: model_num_experts, hidden: model_hidden_size}, dtype: model}\n"
        "    - {x_name: model_config, category: model, require: {seq_len: int}, axes: {rows: seq_len, hidden: model_hidden_size}, dtype: model}\n"
    )
    catalogue = load_catalogue(profile="full", extensions_path=ext)
    rows = [
        row(x_name="model_config", x_value=model, extra_benchmark_config_str=json.dumps({"seq_len": 16}))
        for model in ("moe", "dense")
    ]
    result = import_csv(csv_bytes(rows), catalogue=catalogue)
    assert sorted(m["spec"]["axes"]["rows"] for m in result.iter_kind("WorkloadCase")) == [8, 16]
