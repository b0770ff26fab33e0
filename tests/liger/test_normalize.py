"""Rows -> records: skip order, binding, names, titles, rounding, duplicates, issues, measured runs.

These pin the reference profile (KernelIndex's behaviour); tests/liger/test_catalogue_profiles.py covers what
the full profile adds."""

from __future__ import annotations

import json

import pytest

from kernelindex_pipeline.liger import InvalidRecord, MeasuredContext, import_csv
from kernelindex_pipeline.liger.catalogue import load_catalogue
from kernelindex_pipeline.records.canonical import canonical_bytes, digest_of
from kernelindex_pipeline.records.schema import validate_manifest
from tests.support.liger_rows import BASE_ROW, csv_bytes, row


def run_import(rows, **kwargs):
    kwargs.setdefault("profile", "reference")
    result = import_csv(csv_bytes(rows), **kwargs)
    assert result.report.conserved(), result.report.to_dict()
    for digest, manifest in result.manifests.items():
        assert validate_manifest(manifest) == []
        assert digest_of(manifest) == digest
    return result


def kinds(result):
    out: dict[str, list[str]] = {}
    for m in result.manifests.values():
        out.setdefault(m["kind"], []).append(m["metadata"]["name"])
    return out


def test_one_row_makes_seven_kinds_with_names_and_titles():
    result = run_import([BASE_ROW])
    by_kind = kinds(result)
    assert by_kind["OperationSpec"] == ["liger-rms-norm"]
    assert by_kind["WorkloadCase"] == ["liger-rms-norm-hidden1024-rows2048-bf16"]
    assert by_kind["ImplementationRevision"] == ["liger-bench-rms-norm-liger"]
    assert by_kind["BenchmarkProtocol"] == ["liger-bench-do-bench-forward"]
    assert by_kind["ExecutionEnvironment"] == ["liger-bench-nvidia-h100-80gb-hbm3"]
    assert by_kind["SoftwareProject"] == ["liger-kernel"]
    (run,) = result.runs()
    assert run["metadata"] == {
        "name": "liger-rms-norm-forward-liger-nvidia-h100-80gb-hbm3-hidden1024-rows2048-bf16-2025-01-02-03-04-05",
        "title": "RMSNorm · liger · forward",
        "labels": {"liger_version": "0.5.0"},
    }
    assert (
        run["spec"]["sourceNative"]["externalId"]
        == "rms_norm/forward/liger/nvidia-h100-80gb-hbm3/hidden1024-rows2048-bf16/2025-01-02-03-04-05"
    )
    assert run["spec"]["observedAt"] == "2025-01-02T03:04:05.000Z"
    assert run["spec"]["timing"]["latencyNs"]["median"] == 125000
    assert [m["value"] for m in run["spec"]["measurements"]] == [120000, 130000]
    case = next(result.iter_kind("WorkloadCase"))
    assert case["metadata"]["title"] == "RMSNorm · rows=2048, hidden=1024 · bf16"
    assert case["spec"]["tensors"] == {
        "x": {"shape": [2048, 1024], "dtype": "bf16"},
        "weight": {"shape": [1024], "dtype": "bf16"},
    }
    assert case["spec"]["scalars"] == {"eps": {"dtype": "fp32", "value": 1e-6}}
    assert b'"value":0.000001' in canonical_bytes(case)


@pytest.mark.parametrize(
    "changes, counter, key",
    [
        ({"metric_name": "memory", "kernel_name": "not_curated"}, "memoryRows", None),
        ({"kernel_name": "not_curated", "kernel_operation_mode": "no-grad-forward"}, "uncuratedKernels", "not_curated"),
        ({"kernel_operation_mode": "no-grad-forward", "kernel_provider": "nobody"}, "unknownConfig", "rms_norm"),
        ({"kernel_provider": "nobody", "extra_benchmark_config_str": "oops"}, "unknownProvider", "nobody"),
        ({"extra_benchmark_config_str": "oops", "gpu_name": "Some GPU"}, "unknownConfig", "rms_norm"),
        ({"gpu_name": "NVIDIA A100-SXM4-40GB"}, "unknownGpu", "NVIDIA A100-SXM4-40GB"),
    ],
)
def test_skip_order(changes, counter, key):
    report = run_import([row(**changes)]).report.to_dict()
    assert report["runs"] == 0
    assert (report["skipped"][counter] if key is None else report["skipped"][counter]) == (
        1 if key is None else {key: 1}
    )


def test_operation_spec_exists_once_a_row_binds_even_if_its_gpu_is_unknown():
    result = run_import([row(gpu_name="NVIDIA A100-SXM4-40GB")])
    assert kinds(result) == {"OperationSpec": ["liger-rms-norm"]}
    assert result.report.operations_by_family == {"rmsnorm": 1}


@pytest.mark.parametrize("x_value, hidden", [(" 64 ", 64), ("1e3", 1000), ("0x40", 64), ("1024.0", 1024), ("+8", 8)])
def test_x_values_follow_javascript_number(x_value, hidden):
    (case,) = run_import([row(x_value=x_value)]).iter_kind("WorkloadCase")
    assert case["spec"]["axes"]["hidden"] == hidden


@pytest.mark.parametrize("x_value", ["", "1.5", "0", "-4", "abc", "inf", "Infinity", "1_024"])
def test_bad_x_values_are_unknown_config(x_value):
    assert run_import([row(x_value=x_value)]).report.unknown_config == {"rms_norm": 1}


@pytest.mark.parametrize(
    "config",
    [
        "null",
        "[1, 2]",
        '"text"',
        "3",
        "",
        '{"M": NaN, "dtype": "torch.bfloat16", "eps": 1e-6}',
        "{'M': 1}",
        '{"M": 2048, "dtype": "torch.int8", "eps": 1e-6}',
        '{"M": 2048, "dtype": "torch.bfloat16"}',
        '{"M": true, "dtype": "torch.bfloat16", "eps": 1e-6}',
        '{"M": 2048.5, "dtype": "torch.bfloat16", "eps": 1e-6}',
    ],
)
def test_configs_that_do_not_bind(config):
    assert run_import([row(extra_benchmark_config_str=config)]).report.unknown_config == {"rms_norm": 1}


def test_whole_float_config_values_are_integers():
    config = json.dumps({"M": 2048.0, "dtype": "torch.bfloat16", "eps": 1e-6})
    result = run_import([row(extra_benchmark_config_str=config)])
    assert kinds(result)["WorkloadCase"] == ["liger-rms-norm-hidden1024-rows2048-bf16"]


def test_where_failure_tries_the_next_rule_then_gives_up():
    base = {"num_q_heads": 32, "num_kv_heads": 8, "dtype": "torch.float16", "hidden_size": 4096, "seq_len": 2048}
    ok = row(kernel_name="rope", x_name="T", x_value="512", extra_benchmark_config_str=json.dumps(base))
    bad = row(
        kernel_name="rope",
        x_name="T",
        x_value="512",
        extra_benchmark_config_str=json.dumps({**base, "hidden_size": 4095}),
    )
    other = row(kernel_name="rope", x_name="Q", x_value="7", extra_benchmark_config_str=json.dumps(base))
    result = run_import([ok, bad, other])
    assert result.report.unknown_config == {"rope": 1}
    cases = {m["metadata"]["name"]: m for m in result.iter_kind("WorkloadCase")}
    assert set(cases) == {
        "liger-rope-hidden4096-kv-heads8-q-heads32-seq512-fp16",
        "liger-rope-hidden4096-kv-heads8-q-heads32-seq2048-fp16",
    }
    q = cases["liger-rope-hidden4096-kv-heads8-q-heads32-seq512-fp16"]["spec"]["tensors"]["q"]
    assert q == {"shape": [1, 32, 512, 128], "dtype": "fp16"}  # derived head_dim = hidden // q_heads


def test_literal_checks_are_type_strict_in_rows():
    cfg = {"S": 2048, "B": 4, "TP": 1}
    rows = [
        row(
            kernel_name="megatron_cross_entropy",
            x_name="V",
            x_value="131072",
            extra_benchmark_config_str=json.dumps(cfg),
        ),
        row(
            kernel_name="megatron_cross_entropy",
            x_name="V",
            x_value="65536",
            extra_benchmark_config_str=json.dumps({**cfg, "TP": 1.0}),
        ),
        row(
            kernel_name="megatron_cross_entropy",
            x_name="V",
            x_value="32768",
            extra_benchmark_config_str=json.dumps({**cfg, "TP": True}),
        ),
    ]
    report = run_import(rows).report
    assert report.runs == 2 and report.unknown_config == {"megatron_cross_entropy": 1}


def test_median_rounds_halves_up():
    result = run_import([row(y_value_50="0.0000025", y_value_20="0.0000015", y_value_80="0.0025005")])
    (run,) = result.runs()
    assert run["spec"]["timing"]["latencyNs"]["median"] == 3  # Python's round(2.5) would say 2
    assert [m["value"] for m in run["spec"]["measurements"]] == [2, 2501]
    assert run["spec"]["sourceNative"]["metrics"] == {"ms_50": 0.0000025, "ms_20": 0.0000015, "ms_80": 0.0025005}


@pytest.mark.parametrize("p20, p80", [("nan", "0.1"), ("0.1", "Infinity"), ("x", "y")])
def test_spread_absent_unless_both_quantiles_are_finite(p20, p80):
    (run,) = run_import([row(y_value_20=p20, y_value_80=p80)]).runs()
    assert "measurements" not in run["spec"]
    assert run["spec"]["sourceNative"]["metrics"] == {"ms_50": 0.125}


def test_empty_quantiles_are_zero_like_javascript_number_so_the_band_is_dropped():
    result = run_import([row(y_value_20="", y_value_80="")])
    (run,) = result.runs()
    assert "measurements" not in run["spec"] and run["spec"]["sourceNative"]["metrics"] == {"ms_50": 0.125}
    assert [(i.row, "not ordered" in i.problem) for i in result.report.dropped_bands] == [(1, True)]


@pytest.mark.parametrize("median", ["0", "-1", "nan", "", "Infinity", "abc"])
def test_bad_median_is_an_issue_after_the_case_exists(median):
    result = run_import([row(y_value_50=median)])
    assert [i.row for i in result.report.issues] == [1]
    assert "y_value_50" in result.report.issues[0].problem
    assert "WorkloadCase" in kinds(result) and "BenchmarkRun" not in kinds(result)


@pytest.mark.parametrize(
    "ts",
    [
        "\u0662\u0660\u0662\u0665-01-01 00:00:00",
        "2025-01-01 00:00:00\n",
        "2025-02-29 00:00:00",
        "2025-13-01 00:00:00",
        "2025-01-01T00:00:00",
        "yesterday",
        "2025-01-01 24:00:00",
    ],
)
def test_bad_timestamp_is_an_issue(ts):
    result = run_import([row(timestamp=ts)])
    assert len(result.report.issues) == 1 and "timestamp" in result.report.issues[0].problem


def test_leap_day_is_fine():
    (run,) = run_import([row(timestamp="2024-02-29 23:59:59")]).runs()
    assert run["spec"]["observedAt"] == "2024-02-29T23:59:59.000Z"


def test_duplicates_first_wins():
    result = run_import([BASE_ROW, row(y_value_50="9"), row(timestamp="2025-01-02 03:04:06")])
    assert result.report.duplicate_rows == 1 and result.report.runs == 2
    medians = sorted(r["spec"]["timing"]["latencyNs"]["median"] for r in result.runs())
    assert medians == [125000, 125000]


def test_names_are_cut_at_100_characters():
    cfg = {"T": 1024, "V": 128256, "importance_sampling_level": "sequence", "dtype": "torch.bfloat16"}
    r = row(
        kernel_name="fused_linear_grpo_loss_sequence",
        kernel_provider="torch",
        x_name="B",
        x_value="8",
        extra_benchmark_config_str=json.dumps(cfg),
        gpu_name="NVIDIA A100-SXM4-80GB",
    )
    (run,) = run_import([r]).runs()
    assert len(run["metadata"]["name"]) == 100
    assert run["metadata"]["name"].endswith("-vocab128256")


def test_identical_specs_share_one_digest_and_both_names_are_reported():
    cfg = {"T": 1024, "V": 128256, "dtype": "torch.bfloat16"}
    seq = row(
        kernel_name="fused_linear_grpo_loss_sequence",
        x_name="B",
        x_value="8",
        extra_benchmark_config_str=json.dumps({**cfg, "importance_sampling_level": "sequence"}),
    )
    tok = row(
        kernel_name="fused_linear_grpo_loss_token",
        x_name="B",
        x_value="8",
        extra_benchmark_config_str=json.dumps({**cfg, "importance_sampling_level": "token"}),
    )
    result = run_import([seq, tok])
    report = result.report.to_dict()
    assert report["records"]["OperationSpec"] == 1 and report["objectsByName"]["OperationSpec"] == 2
    assert report["records"]["WorkloadCase"] == 1 and report["objectsByName"]["WorkloadCase"] == 2
    assert sorted(map(sorted, report["sharedDigests"].values())) == [
        ["liger-bench-fused-linear-grpo-loss-sequence-liger", "liger-bench-fused-linear-grpo-loss-token-liger"],
        ["liger-grpo-loss-sequence", "liger-grpo-loss-token"],
        [
            "liger-grpo-loss-sequence-batch8-seq1024-vocab128256-bf16",
            "liger-grpo-loss-token-batch8-seq1024-vocab128256-bf16",
        ],
    ]
    assert report["runs"] == 2


def test_filters():
    rows = [BASE_ROW, row(gpu_name="NVIDIA B200"), row(liger_version="0.6.0")]
    result = run_import(rows, gpu="nvidia-h100-80gb-hbm3", liger_version="0.5.0")
    assert result.report.runs == 1 and result.report.filtered_out == 2


def test_unsafe_values_are_issues_not_invalid_records():
    kto = {"T": 512, "H": 4096, "V": 128256, "dtype": "torch.bfloat16", "bias": True, "beta": 1e400}
    rows = [
        row(x_value="1e300"),
        row(
            kernel_name="kto_loss",
            x_name="B",
            x_value="2",
            extra_benchmark_config_str=json.dumps(kto).replace("Infinity", "1e400"),
        ),
        row(y_value_50="1e300"),
        row(y_value_20="1e303", timestamp="2025-01-02 03:04:07"),
    ]
    result = run_import(rows)
    assert [i.row for i in result.report.issues] == [1, 2, 3, 4]
    assert "overflow" in result.report.issues[3].problem
    assert result.report.runs == 0


def test_a_case_title_beyond_200_characters_is_an_issue(tmp_path):
    from importlib import resources

    kernels = resources.files("kernelindex_pipeline").joinpath("data", "liger-kernels.yaml").read_text("utf-8")
    providers = resources.files("kernelindex_pipeline").joinpath("data", "liger-providers.yaml").read_text("utf-8")
    (tmp_path / "k.yaml").write_text(kernels.replace("title: RMSNorm\n", "title: " + "R" * 170 + "\n", 1))
    (tmp_path / "p.yaml").write_text(providers)
    catalogue = load_catalogue(tmp_path / "k.yaml", tmp_path / "p.yaml")
    result = import_csv(csv_bytes([BASE_ROW, row(x_value="8", timestamp="2025-01-02 03:04:09")]), catalogue=catalogue)
    assert [i.row for i in result.report.issues] == [1]
    assert "title" in result.report.issues[0].problem and result.report.runs == 1


def test_measured_context_gives_its_own_environment_and_evidence():
    logs = {"uri": "s3://bucket/logs/rms_norm.txt", "digest": "sha256:" + "ab" * 32}
    measured = MeasuredContext(
        software={
            "cudaToolkit": "12.4",
            "framework": {"name": "torch", "version": "2.5.1"},
            "libraries": {"triton": "3.1.0"},
        },
        settings={"persistenceMode": True},
        logs_by_kernel={"rms_norm": logs},
    )
    history = run_import([BASE_ROW])
    ours = run_import(
        [
            BASE_ROW,
            row(kernel_name="softmax", extra_benchmark_config_str=json.dumps({"M": 4, "dtype": "torch.float32"})),
        ],
        measured=measured,
    )
    (env,) = ours.iter_kind("ExecutionEnvironment")
    (history_env,) = history.iter_kind("ExecutionEnvironment")
    assert env["spec"]["software"]["cudaToolkit"] == "12.4" and env["spec"]["settings"] == {"persistenceMode": True}
    assert digest_of(env) != digest_of(history_env)
    assert (
        env["metadata"]["name"].startswith("liger-bench-nvidia-h100-80gb-hbm3-")
        and env["metadata"]["name"] != history_env["metadata"]["name"]
    )
    runs = {r["spec"]["sourceNative"]["benchmark"]: r for r in ours.runs()}
    assert runs["rms_norm/forward"]["spec"]["evidence"] == {"logs": logs}
    assert "evidence" not in runs["softmax/forward"]["spec"]
    assert runs["rms_norm/forward"]["spec"]["environmentDigest"] == digest_of(env)


def test_streamed_runs_equal_collected_runs():
    rows = [BASE_ROW, row(timestamp="2025-01-02 03:04:06"), row(y_value_20="nan")]
    streamed = []
    result = import_csv(csv_bytes(rows), on_run=streamed.append)
    assert not result.runs() and len(streamed) == 2
    collected = run_import(rows)
    assert {r.digest for r in streamed} == {digest_of(m) for m in collected.runs()}
    for r in streamed:
        assert r.line == canonical_bytes(r.manifest) and r.digest == digest_of(r.manifest)


def test_empty_file_reports_nothing_and_says_so():
    result = import_csv(b"")
    assert result.report.rows_read == 0 and result.manifests == {}
    assert result.report.drift_warnings == ["the file is empty: no header and no rows"]


def test_a_record_the_schema_refuses_is_an_error_naming_record_and_field(tmp_path):
    from importlib import resources

    kernels = resources.files("kernelindex_pipeline").joinpath("data", "liger-kernels.yaml").read_text("utf-8")
    providers = resources.files("kernelindex_pipeline").joinpath("data", "liger-providers.yaml").read_text("utf-8")
    (tmp_path / "k.yaml").write_text(kernels.replace("family: rmsnorm", "family: Not A Family", 1))
    (tmp_path / "p.yaml").write_text(providers)
    catalogue = load_catalogue(tmp_path / "k.yaml", tmp_path / "p.yaml")
    with pytest.raises(InvalidRecord, match=r"OperationSpec/liger-rms-norm: spec\.family"):
        import_csv(csv_bytes([BASE_ROW]), catalogue=catalogue)


def test_bounded_caches_do_not_change_results(monkeypatch):
    from kernelindex_pipeline.liger import normalize

    rows = [row(x_value=str(64 * (1 + i % 5)), timestamp=f"2025-01-0{1 + i % 3} 00:00:0{i % 7}") for i in range(40)]
    rows.append(rows[3])
    full = run_import(rows)
    monkeypatch.setattr(normalize, "_CACHE_LIMIT", 2)
    small = run_import(rows)
    assert small.report.to_dict() == full.report.to_dict()
    assert {d: canonical_bytes(m) for d, m in small.manifests.items()} == {
        d: canonical_bytes(m) for d, m in full.manifests.items()
    }


# ---------------------------------------------------------------- issue 11: bad data that was accepted (items 18-20)


@pytest.mark.parametrize(
    "invalid", [{"timestamp": "2025-01-02 03:04:05 "}, {"y_value_50": "nan"}, {"y_value_50": "0.0000001"}]
)
def test_run_identity_is_decided_on_valid_rows_only(invalid):
    # The invalid copy shares the valid row's externalId (or would, but for its bad cell): either order
    # gives the valid row's run and one issue, never a "duplicate".
    for rows in ([row(**invalid), BASE_ROW], [BASE_ROW, row(**invalid)]):
        report = run_import(rows).report
        assert (report.runs, len(report.issues), report.duplicate_rows) == (1, 1, 0), rows


def test_a_valid_copy_after_a_valid_row_is_still_a_duplicate():
    report = run_import([row(y_value_50="nan"), BASE_ROW, row(y_value_50="0.2")]).report
    assert (report.runs, len(report.issues), report.duplicate_rows) == (1, 1, 1)


@pytest.mark.parametrize("profile", ["reference", "full"])
@pytest.mark.parametrize("metric", ["speed ", " speed", "Speed", "", "latency"])
def test_only_exact_known_metrics_are_classified(profile, metric):
    report = run_import([row(metric_name=metric)], profile=profile).report
    assert report.memory_rows == 0 and report.runs == 0
    assert report.unknown_metric == {metric: 1}


def test_a_memory_row_is_still_a_memory_row_in_the_reference_profile():
    report = run_import([row(metric_name="memory", metric_unit="MB")]).report
    assert report.memory_rows == 1 and not report.unknown_metric


@pytest.mark.parametrize("profile", ["reference", "full"])
def test_a_repeated_header_and_an_empty_row_are_issues(profile):
    header = {c: c for c in BASE_ROW}
    empty = {c: "" for c in BASE_ROW}
    report = run_import([BASE_ROW, header, empty], profile=profile).report
    assert [(i.row, i.problem) for i in report.issues] == [
        (2, "a repeated header line, not a data row"),
        (3, "an empty row (every cell is empty)"),
    ]
    assert report.memory_rows == 0 and not report.unknown_metric and report.runs == 1


@pytest.mark.parametrize(
    ("p20", "p50", "p80"),
    [
        ("-1", "0.125", "0.13"),
        ("0.13", "0.125", "0.12"),
        ("0.12", "5", "0.13"),
        ("0.12", "0.125", "-1"),
        ("0", "0.125", "0.13"),
        ("0.0000001", "0.125", "0.13"),
    ],
    ids=["negative-p20", "p20-above-p80", "median-above-p80", "negative-p80", "zero-p20", "p20-rounds-to-0"],
)
def test_a_band_that_is_not_ordered_is_dropped_with_a_warning(p20, p50, p80):
    result = run_import([row(y_value_20=p20, y_value_50=p50, y_value_80=p80)])
    (run,) = result.runs()
    assert "measurements" not in run["spec"]
    assert set(run["spec"]["sourceNative"]["metrics"]) == {"ms_50"}
    ((number, problem),) = [(i.row, i.problem) for i in result.report.dropped_bands]
    assert number == 1 and "0 < p20 <= median <= p80" in problem
    assert result.report.to_dict()["droppedBands"] == [{"row": 1, "problem": problem}]


@pytest.mark.parametrize(("p20", "p80"), [("1e300", "1e300"), ("-1e300", "0.13"), ("0.12", "1e300")])
def test_a_band_beyond_what_a_number_of_ns_holds_is_an_issue(p20, p80):
    result = run_import([row(y_value_20=p20, y_value_80=p80)])
    assert result.report.runs == 0 and "overflow a number in ns" in result.report.issues[0].problem


def test_a_median_that_rounds_to_0_ns_is_an_issue():
    result = run_import([row(y_value_50="0.0000004", y_value_20="0.0000001", y_value_80="0.0000004")])
    assert result.report.runs == 0 and "rounds to 0 ns" in result.report.issues[0].problem


def test_an_ordered_band_with_equal_values_is_kept():
    (run,) = run_import([row(y_value_20="0.125", y_value_50="0.125", y_value_80="0.125")]).runs()
    assert [m["value"] for m in run["spec"]["measurements"]] == [125000, 125000]


def test_every_skip_reason_has_one_counter_in_the_report():
    from kernelindex_pipeline.liger.normalize import SkipReason
    from kernelindex_pipeline.liger.report import SKIP_COUNTERS, ImportReport

    assert set(SKIP_COUNTERS) == set(SkipReason)
    report = ImportReport()
    assert [name for name in SKIP_COUNTERS.values() if not hasattr(report, name)] == []
    assert list(report.to_dict()["skipped"]) == [reason.value for reason in SKIP_COUNTERS]
