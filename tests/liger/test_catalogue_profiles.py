"""Catalogue profiles: `full` keeps every reference object and adds runs for rows the reference skips.

Memory rows become runs exactly as the memory-run contract says (COMMON.md): status passed, no
timing, measurements[0] = peak_memory in bytes (MB x 2**20, exact), their own protocol, and the same
workload / implementation / environment objects as the speed rows of their case.
"""

from __future__ import annotations

import json

import pytest

from kernelindex_pipeline.imports.coverage import CoverageTable
from kernelindex_pipeline.liger import import_csv
from kernelindex_pipeline.liger.catalogue import LigerCatalogueError, default_catalogue, load_catalogue
from kernelindex_pipeline.records.canonical import canonical_bytes, digest_of
from kernelindex_pipeline.records.schema import validate_manifest
from tests.support.liger_rows import BASE_ROW, csv_bytes, row

MEMORY_ROW = row(
    metric_name="memory",
    metric_unit="MB",
    kernel_operation_mode="full",
    y_value_50="1234.5",
    y_value_20="1234.25",
    y_value_80="1300.125",
)


def imported(rows, profile, **kwargs):
    result = import_csv(csv_bytes(rows), profile=profile, **kwargs)
    assert result.report.conserved(), result.report.to_dict()
    for digest, manifest in result.manifests.items():
        assert validate_manifest(manifest) == [], manifest["metadata"]["name"]
        assert digest_of(manifest) == digest
    return result


def reference_rows():
    """Rows the reference binds (several kernels, providers, modes, GPUs) plus rows it skips."""
    bound = [
        BASE_ROW,
        row(kernel_provider="huggingface", timestamp="2025-01-02 03:04:06"),
        row(kernel_operation_mode="backward", x_value="2048"),
        row(kernel_name="layer_norm", x_name="N", gpu_name="NVIDIA B200"),
        row(
            kernel_name="cross_entropy",
            x_name="V",
            x_value="32000",
            extra_benchmark_config_str=json.dumps({"B": 8, "T": 2048}),
        ),
    ]
    skipped = [
        MEMORY_ROW,
        row(kernel_operation_mode="no-grad-forward", timestamp="2025-01-02 03:04:07"),
        row(gpu_name="NVIDIA H100 NVL"),
        row(kernel_provider="liger-fp32-accum"),
        row(kernel_name="not_a_kernel"),
    ]
    return bound, skipped


@pytest.mark.parametrize("skipped_first", [False, True])
def test_full_profile_keeps_every_reference_object_byte_for_byte(skipped_first):
    bound, skipped = reference_rows()
    rows = skipped + bound if skipped_first else bound + skipped
    reference = imported(rows, "reference")
    full = imported(rows, "full")
    assert reference.report.runs == len(bound)
    for digest, manifest in reference.manifests.items():
        assert digest in full.manifests, manifest["metadata"]["name"]
        assert canonical_bytes(full.manifests[digest]) == canonical_bytes(manifest)  # name and title too
    assert full.report.runs == len(bound) + len(skipped) - 1  # all but the uncurated kernel
    assert full.report.to_dict()["skipped"]["uncuratedKernels"] == {"not_a_kernel": 1}


def test_reference_profile_ignores_the_extensions():
    reference, full = default_catalogue("reference"), default_catalogue("full")
    assert reference.memory_metric is None and "no-grad-forward" not in reference.modes
    assert full.memory_metric == "memory" and "no-grad-forward" in full.modes
    assert set(reference.kernels) <= set(full.kernels) and set(reference.providers) <= set(full.providers)
    for name, kernel in reference.kernels.items():  # extensions only append rules
        assert full.kernels[name].rules[: len(kernel.rules)] == kernel.rules


def test_memory_row_becomes_a_peak_memory_run_on_the_speed_rows_objects():
    speed = row(kernel_operation_mode="full")
    result = imported([speed, MEMORY_ROW], "full")
    runs = result.runs()
    assert len(runs) == 2
    memory = next(r for r in runs if "timing" not in r["spec"])
    timed = next(r for r in runs if "timing" in r["spec"])
    spec = memory["spec"]
    assert spec["status"] == "passed"
    assert spec["measurements"] == [
        {"metric": "peak_memory", "unit": "bytes", "statistic": "median", "value": 1234.5 * 2**20},
        {"metric": "peak_memory", "unit": "bytes", "statistic": "p20", "value": 1234.25 * 2**20},
        {"metric": "peak_memory", "unit": "bytes", "statistic": "p80", "value": 1300.125 * 2**20},
    ]
    assert type(spec["measurements"][0]["value"]) is int  # exact bytes
    assert spec["sourceNative"]["metrics"] == {"mb_50": 1234.5, "mb_20": 1234.25, "mb_80": 1300.125}
    for key in ("workloadDigest", "implementationDigest", "environmentDigest"):
        assert spec[key] == timed["spec"][key]
    assert spec["protocolDigest"] != timed["spec"]["protocolDigest"]
    protocol = result.manifests[spec["protocolDigest"]]
    assert protocol["spec"]["measurement"]["timer"] == "torch_cuda_max_memory_allocated"
    assert "2**20" in protocol["spec"]["comparability"]["notes"]
    assert spec["sourceNative"]["externalId"] != timed["spec"]["sourceNative"]["externalId"]
    assert memory["metadata"]["name"] != timed["metadata"]["name"]
    assert "memory" in spec["sourceNative"]["externalId"] and "memory" in memory["metadata"]["name"]


def test_memory_run_lines_equal_generic_canonical_json():
    lines = []
    rows = [
        MEMORY_ROW,
        row(
            metric_name="memory",
            kernel_operation_mode="full",
            y_value_50="0.5",
            y_value_20="nan",
            y_value_80="",
            timestamp="2025-01-02 03:04:09",
        ),
    ]
    import_csv(csv_bytes(rows), on_run=lines.append, profile="full")
    assert len(lines) == 2
    for run in lines:
        assert run.line == canonical_bytes(run.manifest)
        assert run.digest == digest_of(run.manifest)
    sparse = next(r for r in lines if r.manifest["spec"]["sourceNative"]["metrics"] == {"mb_50": 0.5})
    assert sparse.manifest["spec"]["measurements"] == [
        {"metric": "peak_memory", "unit": "bytes", "statistic": "median", "value": 524288}
    ]


def test_memory_runs_are_built_the_same_in_worker_processes():
    rows = [
        row(metric_name="memory", kernel_operation_mode="full", x_value=str(1024 + i), y_value_50=f"{i + 1}.25")
        for i in range(30)
    ]
    streamed, parallel = [], []
    import_csv(csv_bytes(rows), on_run=streamed.append, workers=0)
    import_csv(csv_bytes(rows), on_run=parallel.append, workers=2)
    assert [(r.digest, r.line) for r in streamed] == [(r.digest, r.line) for r in parallel]


@pytest.mark.parametrize(
    "changes, reason, key",
    [
        ({"metric_name": "flops"}, "unknownMetric", "flops"),
        ({"kernel_operation_mode": "sideways"}, "unknownMode", "sideways"),
        ({"metric_name": "memory", "kernel_operation_mode": "no-grad-forward"}, "unknownMode", "no-grad-forward"),
        ({"gpu_name": "Some GPU"}, "unknownGpu", "Some GPU"),
        ({"kernel_provider": "nobody"}, "unknownProvider", "nobody"),
    ],
)
def test_full_profile_skips_with_specific_reasons(changes, reason, key):
    report = imported([row(**changes)], "full").report.to_dict()
    assert report["runs"] == 0 and report["skipped"][reason] == {key: 1}
    (cell,) = report["coverage"]["cells"]
    assert cell["rows"] == 1 and cell["runs"] == 0 and cell["skipped"] == {reason: 1}


def test_no_grad_forward_has_its_own_protocol():
    result = imported([row(kernel_operation_mode="no-grad-forward")], "full")
    (protocol,) = result.iter_kind("BenchmarkProtocol")
    assert protocol["metadata"]["name"] == "liger-bench-do-bench-no-grad-forward"
    assert "torch.no_grad()" in protocol["spec"]["comparability"]["notes"]


def test_ab_rows_get_their_own_implementation_and_never_the_release_one():
    config = json.dumps({"M": 2048, "dtype": "torch.bfloat16", "eps": 1e-6, "base_sha": "23ba106", "pr_sha": "639139b"})
    rows = [
        row(),
        row(kernel_provider="liger-base", extra_benchmark_config_str=config),
        row(kernel_provider="liger-pr", extra_benchmark_config_str=config),
    ]
    result = imported(rows, "full")
    implementations = {m["metadata"]["name"]: m for m in result.iter_kind("ImplementationRevision")}
    assert set(implementations) == {
        "liger-bench-rms-norm-liger",
        "liger-bench-rms-norm-liger-base-23ba106",
        "liger-bench-rms-norm-liger-pr-639139b",
    }
    assert implementations["liger-bench-rms-norm-liger-pr-639139b"]["metadata"]["labels"] == {"ab_revision": "639139b"}
    assert len({r["spec"]["implementationDigest"] for r in result.runs()}) == 3
    # without the A/B keys, a -base provider is just unknown
    plain = imported([row(kernel_provider="liger-base")], "full").report.to_dict()
    assert plain["skipped"]["unknownProvider"] == {"liger-base": 1}


def test_coverage_table_merges_reports_and_their_json():
    bound, skipped = reference_rows()
    one = imported(bound + skipped, "full").report
    two = imported(bound, "reference").report
    table = CoverageTable.of([one, two.to_dict()])
    assert sum(c.rows for c in table.cells) == one.rows_read + two.rows_read
    assert sum(c.runs for c in table.cells) == one.runs + two.runs
    by_metric = table.by_metric()
    assert by_metric["memory"]["runs"] == 1 and by_metric["speed"]["skipped"] == {"uncuratedKernels": 1}
    assert "not_a_kernel" in table.text().splitlines()[1]  # cells that lost rows come first


def test_extensions_may_not_change_a_reference_fact(tmp_path):
    ext = tmp_path / "ext.yaml"
    ext.write_text(
        "providers:\n  liger: {project: liger-kernel, title: X, language: triton, license: {declared: MIT}}\n"
    )
    with pytest.raises(LigerCatalogueError, match="already in the reference"):
        load_catalogue(profile="full", extensions_path=ext)
    ext.write_text("rules:\n  no_such_kernel: []\n")
    with pytest.raises(LigerCatalogueError, match="not a reference kernel"):
        load_catalogue(profile="full", extensions_path=ext)
    with pytest.raises(LigerCatalogueError, match="unknown catalogue profile"):
        load_catalogue(profile="everything")


def test_a_reference_row_names_its_objects_even_when_an_extension_row_made_the_digest_first():
    dims = {"hidden_size": 4096, "intermediate_size": 11008, "dtype": "torch.bfloat16", "hidden_act": "silu"}
    mlp = row(
        kernel_name="mlp", x_name="T", extra_benchmark_config_str=json.dumps({"bsz": 4, **dims})
    )  # extension kernel
    swiglu = row(kernel_name="swiglu", x_name="T", extra_benchmark_config_str=json.dumps({"B": 4, **dims}))  # reference
    reference = imported([mlp, swiglu], "reference")
    full = imported([mlp, swiglu], "full")
    shared = [
        d
        for d in reference.manifests
        if reference.manifests[d]["kind"] in ("OperationSpec", "WorkloadCase", "ImplementationRevision")
    ]
    assert len(shared) == 3
    for digest in shared:  # the same spec as mlp's, so one digest; swiglu's name and title win
        assert canonical_bytes(full.manifests[digest]) == canonical_bytes(reference.manifests[digest])
        assert full.names_by_digest[digest][0] == reference.names_by_digest[digest][0]
        assert len(full.names_by_digest[digest]) == 2
