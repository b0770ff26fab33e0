"""The catalogue YAML, the rule grammar and the safe expression evaluator."""

from __future__ import annotations

import pytest

from kernelindex_pipeline.liger.catalogue import (
    Check,
    ExpressionUndefined,
    LigerCatalogueError,
    compile_expression,
    default_catalogue,
    load_catalogue,
)


def test_packaged_catalogue_loads_and_ignores_not_in_reference():
    cat = default_catalogue("reference")
    assert len(cat.kernels) == 35
    assert cat.modes == ("forward", "backward", "full") and cat.metric_name == "speed"
    assert "NVIDIA A100-SXM4-40GB" not in cat.hardware  # listed only under not_in_reference
    assert "NVIDIA H100 80GB HBM3" in cat.hardware
    assert cat.providers["torch"].baseline and not cat.providers["torch_compile"].baseline
    assert cat.providers["liger"].pip == "liger-kernel" and cat.providers["torch"].pip is None


@pytest.mark.parametrize(
    "text, env, value",
    [
        ("x", {"x": 7}, 7),
        ("B * T", {"B": 8, "T": 1024}, 8192),
        ("hidden // q_heads", {"hidden": 4096, "q_heads": 32}, 128),
        ("seq + 1", {"seq": 9}, 10),
        ("ffn * 2", {"ffn": 3}, 6),
        ("(a + b) * c", {"a": 1, "b": 2, "c": 3}, 9),
        ("a + b * c", {"a": 1, "b": 2, "c": 3}, 7),
        ("a - b - c", {"a": 10, "b": 2, "c": 3}, 5),
        ("7 // 2", {}, 3),
        ("7 % 3", {}, 1),
        ("-7 % 3", {}, -1),
        ("a*b//c%d", {"a": 5, "b": 6, "c": 4, "d": 4}, 3),
        (12, {}, 12),
    ],
)
def test_expressions(text, env, value):
    assert compile_expression(text).evaluate(env) == value


@pytest.mark.parametrize(
    "text", ["", "x +", "(x", "x)", "x ** 2", "__import__('os')", "x / 2", "x.y", "1 2", True, None]
)
def test_bad_expressions_are_catalogue_errors(text):
    with pytest.raises(LigerCatalogueError):
        compile_expression(text)


def test_division_by_zero_is_undefined():
    with pytest.raises(ExpressionUndefined):
        compile_expression("a // b").evaluate({"a": 1, "b": 0})
    with pytest.raises(ExpressionUndefined):
        compile_expression("a % b").evaluate({"a": 1, "b": 0})


def test_expression_names():
    assert compile_expression("hidden // q_heads + hidden").names == ("hidden", "q_heads")


@pytest.mark.parametrize(
    "check, config, ok",
    [
        (Check("M", "int"), {"M": 4}, True),
        (Check("M", "int"), {"M": 4.0}, True),
        (Check("M", "int"), {"M": 4.5}, False),
        (Check("M", "int"), {"M": 0}, False),
        (Check("M", "int"), {"M": True}, False),
        (Check("M", "int"), {"M": "4"}, False),
        (Check("M", "int"), {}, False),
        (Check("e", "positive"), {"e": 1e-6}, True),
        (Check("e", "positive"), {"e": 0}, False),
        (Check("e", "positive"), {"e": float("inf")}, False),
        (Check("n", "number"), {"n": -3}, True),
        (Check("n", "number"), {"n": False}, False),
        (Check("n", "number"), {"n": None}, False),
        (Check("d", "dtype"), {"d": "torch.float16"}, True),
        (Check("d", "dtype"), {"d": "torch.int8"}, False),
        (Check("TP", "literal", 1), {"TP": 1.0}, True),
        (Check("TP", "literal", 1), {"TP": True}, False),
        (Check("b", "literal", True), {"b": 1}, False),
        (Check("b", "literal", True), {"b": True}, True),
        (Check("s", "literal", "silu"), {"s": "silu"}, True),
        (Check("s", "literal", "silu"), {"s": "SiLU"}, False),
        (Check("z", "literal", None), {"z": None}, True),
        (Check("z", "literal", None), {}, False),
        (Check("dim", "literal", -1), {"dim": -1.0}, True),
    ],
)
def test_checks_are_type_strict(check, config, ok):
    assert check.passes(config) is ok


KERNEL = """
metric_name: speed
modes: [forward]
kernels:
  - kernel: k
    slug: liger-k
    family: f
    title: K
    inputs:
      - {{name: x, shape: [rows, hidden], dtype: float}}
    outputs:
      - {{name: "y", shape: [rows, hidden], dtype: float}}
    bindings:
      - {rule}
"""
PROVIDERS = """
projects: {}
providers: {}
hardware: {}
not_in_reference: {hardware: {"X": {vendor: nvidia}}}
"""


@pytest.mark.parametrize(
    "rule, message",
    [
        (
            'x_name: "N"\n        require: {"M": number}\n        axes: {rows: "M", hidden: "x"}\n        dtype: fp32',
            "int-checked",
        ),
        ('x_name: "N"\n        require: {"M": int}\n        axes: {rows: "M"}\n        dtype: fp32', "does not bind"),
        (
            'x_name: "N"\n        require: {"M": int}\n        axes: {rows: "M", hidden: "x"}\n        dtype: config.dtype',
            "dtype",
        ),
        (
            'x_name: "N"\n        require: {"M": int}\n        axes: {rows: "M", hidden: "x"}\n        dtype: fp32\n        where: "q == 1"',
            "not axes",
        ),
        (
            'x_name: "N"\n        require: {"M": int}\n        axes: {rows: "M", hidden: "x"}\n        dtype: fp32\n        scalars: {eps: "eps"}',
            "scalar",
        ),
        (
            'x_name: "N"\n        require: {"M": int}\n        axes: {rows: "M", hidden: "x"}\n        dtype: fp32\n        shape: 1',
            "unknown keys",
        ),
    ],
)
def test_malformed_rules_fail_at_load(tmp_path, rule, message):
    (tmp_path / "k.yaml").write_text(KERNEL.format(rule=rule))
    (tmp_path / "p.yaml").write_text(PROVIDERS)
    with pytest.raises(LigerCatalogueError, match=message):
        load_catalogue(tmp_path / "k.yaml", tmp_path / "p.yaml")


def test_wellformed_custom_catalogue(tmp_path):
    rule = 'x_name: {not: ["T"]}\n        require: {"M": int}\n        axes: {rows: "M", hidden: "x * 2"}\n        dtype: fp32\n        where: ["rows != 3", "hidden % 2 == 0"]'
    (tmp_path / "k.yaml").write_text(KERNEL.format(rule=rule))
    (tmp_path / "p.yaml").write_text(PROVIDERS)
    cat = load_catalogue(tmp_path / "k.yaml", tmp_path / "p.yaml")
    r = cat.kernels["k"].rules[0]
    assert r.accepts_x_name("N") and not r.accepts_x_name("T")
    assert len(r.where) == 2 and cat.hardware == {}


def test_c_and_python_yaml_loaders_read_the_same_catalogue(monkeypatch):
    import yaml

    from kernelindex_pipeline.liger import catalogue as module

    fast = load_catalogue()
    monkeypatch.setattr(module, "_SAFE_LOADER", yaml.SafeLoader)
    slow = load_catalogue()
    assert fast.providers == slow.providers and fast.hardware == slow.hardware and fast.projects == slow.projects
    assert [
        (k.kernel, k.slug, k.title, k.inputs, k.outputs, [(r.checks, r.scalars) for r in k.rules])
        for k in fast.kernels.values()
    ] == [
        (k.kernel, k.slug, k.title, k.inputs, k.outputs, [(r.checks, r.scalars) for r in k.rules])
        for k in slow.kernels.values()
    ]
