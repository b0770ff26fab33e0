"""liger.identity: every format it builds parses back to what it was built from, and the normalizer
writes exactly those formats."""

from __future__ import annotations

import json

import pytest

from kernelindex_pipeline.liger import identity, import_csv
from tests.support.liger_rows import csv_bytes, row


@pytest.mark.parametrize(
    "axes, dtype",
    [
        ((("rows", 2048), ("hidden", 4096)), "bf16"),
        ((("q_heads", 32), ("kv_heads", 8), ("seq", 1)), "fp32"),
        ((("x", 0),), "fp16"),
    ],
)
def test_case_key_round_trip(axes, dtype):
    key = identity.case_key(axes, dtype)
    assert identity.parse_case_key(key) == (dict(axes), dtype)
    assert key == identity.case_key(dict(axes), dtype)  # sorted by axis name either way


@pytest.mark.parametrize(
    "text", ["", "bf16", "rows2048", "rows-bf16", "2048-bf16", "rows2048-int8", "rows2048-hidden-bf16"]
)
def test_not_a_case_key(text):
    assert identity.parse_case_key(text) is None


@pytest.mark.parametrize("memory", [False, True])
def test_external_id_and_benchmark_round_trip(memory):
    ident = identity.RunIdentity(
        "dyt_beta=True",
        "no-grad-forward",
        "liger-fp32-accum",
        "nvidia-h100-nvl",
        "hidden4096-rows8-bf16",
        "2025-01-02-03-04-05",
        memory=memory,
    )
    assert identity.parse_external_id(ident.external_id) == ident
    assert identity.parse_benchmark(ident.benchmark) == (ident.kernel, ident.mode, memory)
    assert ident.metric == ("peak_memory" if memory else "latency")


@pytest.mark.parametrize("text", ["", "a/b", "a/b/c/d/e", "a/b/c/d/e/f/g", "a//c/d/e/f", "a/b/c/d/e/f/g/h"])
def test_not_an_external_id(text):
    assert identity.parse_external_id(text) is None


@pytest.mark.parametrize("memory", [False, True])
def test_titles_round_trip(memory):
    kernel_title = "Fused add + RMSNorm · variant"  # a separator inside the kernel title stays with it
    title = identity.run_title(kernel_title, "liger", "full", memory)
    assert identity.parse_run_title(title) == (kernel_title, "liger", "full", memory)
    impl = identity.implementation_title(kernel_title, "Liger fused")
    assert identity.parse_implementation_title(impl) == (kernel_title, "Liger fused")


@pytest.mark.parametrize("mode, memory", [("full", False), ("no-grad-forward", False), ("full", True)])
def test_protocol_name_round_trip(mode, memory):
    assert identity.parse_protocol_name(identity.protocol_name(mode, memory)) == (mode, memory)


def test_the_normalizer_writes_these_formats():
    rows = [
        row(),
        row(
            metric_name="memory",
            kernel_operation_mode="full",
            extra_benchmark_config_str=json.dumps({"M": 2048, "dtype": "torch.bfloat16", "eps": 1e-6}),
        ),
    ]
    result = import_csv(csv_bytes(rows), profile="full")
    seen = set()
    for run in result.runs():
        spec = run["spec"]
        ident = identity.parse_external_id(spec["sourceNative"]["externalId"])
        assert ident is not None and ident.benchmark == spec["sourceNative"]["benchmark"]
        assert (ident.kernel, ident.provider, ident.gpu_slug) == ("rms_norm", "liger", "nvidia-h100-80gb-hbm3")
        assert identity.parse_case_key(ident.case_key) == ({"hidden": 1024, "rows": 2048}, "bf16")
        assert ident.memory == ("timing" not in spec)
        kernel_title, provider, mode, memory = identity.parse_run_title(run["metadata"]["title"])
        assert (kernel_title, provider, mode, memory) == ("RMSNorm", "liger", ident.mode, ident.memory)
        protocol = result.manifests[spec["protocolDigest"]]
        assert identity.parse_protocol_name(protocol["metadata"]["name"]) == (ident.mode, ident.memory)
        case = result.manifests[spec["workloadDigest"]]
        assert case["metadata"]["name"] == identity.case_name("liger-rms-norm", ident.case_key)
        seen.add(ident.memory)
    assert seen == {False, True}


def test_the_sources_liger_writes_are_the_ones_its_run_facts_adapter_is_registered_for():
    from kernelindex_pipeline.detection.run_facts import SOURCE_ADAPTERS
    from kernelindex_pipeline.liger import runs, sentinel

    for source in (runs.RUN_SOURCE, sentinel.SOURCE):
        assert SOURCE_ADAPTERS[source] == "kernelindex_pipeline.liger.run_facts:LigerRunFacts"
