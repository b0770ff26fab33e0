"""The cost models (liger/costs.py, data/liger-cost-models.yaml): one hand-computed case per formula.

Each expected figure below is counted by hand from the tensors the pass reads and writes (named in the
comment), not from the formula, so a formula that counts a tensor too many or too few times fails.
"""

from __future__ import annotations

import pytest

from kernelindex_pipeline.liger.costs import (
    ANY_PASS,
    Cost,
    CostModelError,
    NoCost,
    cost_of,
    default_cost_models,
    load_cost_models,
)


def t(shape, dtype):
    return {"shape": list(shape), "dtype": dtype}


RMS = {"axes": {"rows": 2, "hidden": 3}, "tensors": {"x": t([2, 3], "bf16"), "weight": t([3], "bf16")}}
ADD_RMS = {
    "axes": {"rows": 2, "hidden": 3},
    "tensors": {"x": t([2, 3], "fp32"), "residual": t([2, 3], "fp32"), "weight": t([3], "fp32")},
}
LN = {
    "axes": {"rows": 2, "hidden": 4},
    "tensors": {"x": t([2, 4], "fp32"), "weight": t([4], "fp32"), "bias": t([4], "fp32")},
}
GN = {
    "axes": {"batch": 1, "channels": 2, "hidden": 3, "channels_per_group": 1},
    "tensors": {"x": t([1, 2, 3], "fp32"), "weight": t([2], "fp32"), "bias": t([2], "fp32")},
}
MEGATRON_RMS = {
    "axes": {"seq": 2, "batch": 1, "hidden": 4},
    "tensors": {"x": t([2, 1, 4], "bf16"), "weight": t([4], "bf16")},
}
X_2x4_FP32 = {"axes": {"rows": 2, "hidden": 4}, "tensors": {"x": t([2, 4], "fp32")}}
SPARSEMAX = {"axes": {"tokens": 2, "features": 4}, "tensors": {"x": t([2, 4], "fp32")}}
RELU2 = {"axes": {"rows": 3, "hidden": 2}, "tensors": {"x": t([3, 2], "bf16")}}
MEGATRON_SWIGLU = {"axes": {"seq": 1, "batch": 1, "ffn": 4}, "tensors": {"y": t([1, 1, 8], "bf16")}}
ROPE = {
    "axes": {"seq": 3, "hidden": 8, "q_heads": 2, "kv_heads": 1},
    "tensors": {"q": t([1, 2, 3, 4], "bf16"), "k": t([1, 1, 3, 4], "bf16")},
}
CE = {"axes": {"tokens": 2, "vocab": 5}, "tensors": {"logits": t([2, 5], "fp32"), "target": t([2], "int64")}}
JSD = {
    "axes": {"tokens": 2, "vocab": 3},
    "tensors": {"student_log_probs": t([2, 3], "fp32"), "teacher_log_probs": t([2, 3], "fp32")},
}
TVD = {"axes": {"tokens": 2, "vocab": 3}, "tensors": {"p": t([2, 3], "fp32"), "q": t([2, 3], "fp32")}}
KL = {"axes": {"tokens": 2, "vocab": 3}, "tensors": {"log_probs": t([2, 3], "fp32"), "target_probs": t([2, 3], "fp32")}}
EMB = {
    "axes": {"batch": 2, "seq": 3, "hidden": 4, "vocab": 10},
    "tensors": {"input_ids": t([2, 3], "int64"), "weight": t([10, 4], "fp32")},
}
MLP = {
    "axes": {"batch": 2, "seq": 3, "hidden": 4, "intermediate": 5},
    "tensors": {
        "x": t([2, 3, 4], "bf16"),
        "w_gate": t([5, 4], "bf16"),
        "w_up": t([5, 4], "bf16"),
        "w_down": t([4, 5], "bf16"),
    },
}
MOE = {
    "axes": {"tokens": 3, "hidden": 4, "intermediate": 5, "experts": 4, "k": 2},
    "tensors": {
        "x": t([3, 4], "bf16"),
        "gate_up_proj": t([4, 10, 4], "bf16"),
        "down_proj": t([4, 4, 5], "bf16"),
        "top_k_index": t([3, 2], "int32"),
        "top_k_weights": t([3, 2], "bf16"),
    },
}
FLCE = {
    "axes": {"tokens": 3, "hidden": 4, "vocab": 5},
    "tensors": {"x": t([3, 4], "bf16"), "weight": t([5, 4], "bf16"), "target": t([3], "int64")},
}
FLJSD = {
    "axes": {"tokens": 3, "hidden": 4, "vocab": 5},
    "tensors": {
        n: t(s, "bf16")
        for n, s in (
            ("student_input", [3, 4]),
            ("student_weight", [5, 4]),
            ("teacher_input", [3, 4]),
            ("teacher_weight", [5, 4]),
        )
    },
}
PREFERENCE = {
    "axes": {"batch": 1, "seq": 3, "hidden": 4, "vocab": 5},
    "tensors": {"x": t([1, 3, 4], "bf16"), "weight": t([5, 4], "bf16"), "target": t([1, 3], "int64")},
}
COPY = {"axes": {"elements": 8}, "tensors": {"source": t([8], "fp32")}}
MATMUL = {"axes": {"m": 2, "n": 3, "k": 4}, "tensors": {"a": t([2, 4], "bf16"), "b": t([4, 3], "bf16")}}

# (kernel, pass, case, bytes, flops, l2 set): counted by hand
HAND = [
    # read x 12 + weight 6, write y 12
    ("rms_norm", "forward", RMS, 30, None, None),
    # read dy 12, x 12, weight 6; write dx 12, dweight 6
    ("rms_norm", "backward", RMS, 48, None, None),
    # read x 24, residual 24, weight 12; write y 24, residual_out 24
    ("fused_add_rms_norm", "forward", ADD_RMS, 108, None, None),
    # read dy 24, d(residual_out) 24, residual_out 24, weight 12; write dx 24, dweight 12
    ("fused_add_rms_norm", "backward", ADD_RMS, 120, None, None),
    # read x 32, weight 16, bias 16; write y 32
    ("layer_norm", "forward", LN, 96, None, None),
    # read dy 32, x 32, weight 16; write dx 32, dweight 16, dbias 16
    ("layer_norm", "backward", LN, 144, None, None),
    # read x 24, weight 8, bias 8; write y 24
    ("group_norm", "forward", GN, 64, None, None),
    # read dy 24, x 24, weight 8; write dx 24, dweight 8, dbias 8
    ("group_norm", "backward", GN, 96, None, None),
    # read x 16, weight 8; write y 16
    ("megatron_rms_norm", "forward", MEGATRON_RMS, 40, None, None),
    # read dy 16, x 16, weight 8; write dx 16, dweight 8
    ("megatron_rms_norm", "backward", MEGATRON_RMS, 64, None, None),
    # read x 32; write y 32
    ("softmax", "forward", X_2x4_FP32, 64, None, None),
    # read y 32, dy 32; write dx 32
    ("softmax", "backward", X_2x4_FP32, 96, None, None),
    ("sparsemax", "forward", SPARSEMAX, 64, None, None),
    ("sparsemax", "backward", SPARSEMAX, 96, None, None),
    # read x 12; write y 12 / read x 12, dy 12; write dx 12
    ("relu_squared", "forward", RELU2, 24, None, None),
    ("relu_squared", "backward", RELU2, 36, None, None),
    # read y 16; write out 8 / read y 16, dout 8; write dy 16
    ("megatron_swiglu", "forward", MEGATRON_SWIGLU, 24, None, None),
    ("megatron_swiglu", "backward", MEGATRON_SWIGLU, 40, None, None),
    # read q 48, k 24, cos 24 (3 x 4 bf16), sin 24; write q 48, k 24
    ("rope", "forward", ROPE, 192, None, None),
    ("rope", "backward", ROPE, 192, None, None),
    # read logits 40, target 16; write dlogits 40
    ("cross_entropy", "forward", CE, 96, None, None),
    ("cross_entropy", "full", CE, 96, None, None),
    # no gradient: read logits 40, target 16
    ("cross_entropy", "no-grad-forward", CE, 56, None, None),
    # read student 24, teacher 24; write dstudent 24
    ("jsd", "forward", JSD, 72, None, None),
    ("jsd", "full", JSD, 72, None, None),
    ("tvd", "forward", TVD, 72, None, None),
    ("tvd", "full", TVD, 72, None, None),
    # read log_probs 24, target 24 / read target 24; write dlog_probs 24
    ("kl_div", "forward", KL, 48, None, None),
    ("kl_div", "backward", KL, 48, None, None),
    # read ids 48, 6 rows of 4 fp32 = 96; write y 96; the table (160) is re-read
    ("embedding", "forward", EMB, 240, None, 160),
    # read dy 96, ids 48; write dweight 160
    ("embedding", "backward", EMB, 304, None, 160),
    # three GEMMs of 2*6*4*5 = 240 FLOPs; read x 48, weights 3 x 40; write y 48
    ("swiglu", "forward", MLP, 216, 720, None),
    # dX and dW per GEMM: 6 x 240; read dy 48, x 48, weights 120; write dx 48, dweights 120
    ("swiglu", "backward", MLP, 384, 1440, None),
    ("geglu", "forward", MLP, 216, 720, None),
    ("geglu", "backward", MLP, 384, 1440, None),
    ("tiled_swiglu", "forward", MLP, 216, 720, None),
    ("tiled_swiglu", "backward", MLP, 384, 1440, None),
    ("tiled_geglu", "forward", MLP, 216, 720, None),
    ("tiled_geglu", "backward", MLP, 384, 1440, None),
    # 3 tokens x 2 experts: gate_up 2*10*4 = 80 + down 2*4*5 = 40 per token-expert
    ("fused_moe", "forward", MOE, None, 720, None),
    ("fused_moe", "backward", MOE, None, 1440, None),
    # logits 2*3*4*5 = 120, dx 120, dweight 120; read x 24, weight 40, target 24; write dx 24, dweight 40
    ("fused_linear_cross_entropy", "forward", FLCE, 152, 360, None),
    ("fused_linear_cross_entropy", "full", FLCE, 152, 360, None),
    # no gradient: the logits GEMM 120; read x 24, weight 40, target 24
    ("fused_linear_cross_entropy", "no-grad-forward", FLCE, 88, 120, None),
    # student and teacher logits, student dx and dweight: 4 x 120; read student x 24, weight 40, teacher x 24,
    # weight 40; write student dx 24, dweight 40
    ("fused_linear_jsd", "forward", FLJSD, 192, 480, None),
    ("fused_linear_jsd", "full", FLJSD, 192, 480, None),
    # 3 x 120; read x 24, weight 40, target 24; write dx 24, dweight 40
    ("fused_linear_orpo_loss", "forward", PREFERENCE, 152, 360, None),
    ("fused_linear_orpo_loss", "full", PREFERENCE, 152, 360, None),
    ("fused_linear_cpo_loss", "forward", PREFERENCE, 152, 360, None),
    ("fused_linear_cpo_loss", "full", PREFERENCE, 152, 360, None),
    ("fused_linear_simpo_loss", "forward", PREFERENCE, 152, 360, None),
    ("fused_linear_simpo_loss", "full", PREFERENCE, 152, 360, None),
    # read source 32; write target 32
    ("sentinel_copy_1gib", ANY_PASS, COPY, 64, None, None),
    # 2*2*3*4 FLOPs; read a 16, b 24; write c (2 x 3 bf16) 12
    ("sentinel_matmul_bf16", ANY_PASS, MATMUL, 52, 48, None),
]


@pytest.mark.parametrize(
    ("kernel", "mode", "case", "nbytes", "flops", "l2"), HAND, ids=[f"{k}-{m}" for k, m, *_ in HAND]
)
def test_formula_on_a_small_shape_counted_by_hand(kernel, mode, case, nbytes, flops, l2):
    cost = cost_of(default_cost_models(), kernel, mode if mode != ANY_PASS else "start", case)
    assert isinstance(cost, Cost), cost
    if nbytes is not None:
        assert cost.bytes == nbytes
    if flops is not None:
        assert cost.flops == flops
    assert cost.l2_bytes == (l2 if l2 is not None else cost.bytes)


def test_every_formula_has_a_hand_counted_case():
    models = default_cost_models()
    written = {(k, mode) for k, m in models.kernels.items() for mode, f in m.passes.items() if not isinstance(f, str)}
    assert written - {(k, m) for k, m, *_ in HAND} == set()


def test_full_is_forward_plus_backward_where_not_written():
    models = default_cost_models()
    full = cost_of(models, "rms_norm", "full", RMS)
    assert isinstance(full, Cost) and full.bytes == 30 + 48


def test_bound_follows_the_kernel():
    models = default_cost_models()
    assert cost_of(models, "rms_norm", "forward", RMS).bound == "bytes"
    assert cost_of(models, "swiglu", "forward", MLP).bound == "flops"
    assert cost_of(models, "fused_linear_cross_entropy", "forward", FLCE).work == 360


def test_layer_norm_matches_tritonbench_gbps_multiples():
    """tritonbench's layer_norm `gbps` counts 2x (fwd), 3x (bwd) and 5x (fwd+bwd) the input's bytes; ours
    is the same plus the weight and bias (read, and their gradients written in the backward)."""
    models = default_cost_models()
    x, w, b = 32, 16, 16
    assert cost_of(models, "layer_norm", "forward", LN).bytes - (w + b) == 2 * x
    assert cost_of(models, "layer_norm", "backward", LN).bytes - (2 * w + b) == 3 * x
    assert cost_of(models, "layer_norm", "full", LN).bytes - (3 * w + 2 * b) == 5 * x


def test_kernel_or_pass_without_a_formula_is_no_cost_model_never_zero():
    models = default_cost_models()
    unknown = cost_of(models, "dyt", "forward", RMS)
    assert isinstance(unknown, NoCost) and "no cost model" in unknown.reason
    written_none = cost_of(models, "cross_entropy", "backward", CE)
    assert isinstance(written_none, NoCost) and "scales the gradient" in written_none.reason
    missing_tensor = cost_of(models, "rms_norm", "forward", {"axes": {}, "tensors": {"x": t([2, 3], "bf16")}})
    assert isinstance(missing_tensor, NoCost) and "size_weight" in missing_tensor.reason


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kernels:\n  - {kernel: rms_norm, bound: bytes, passes: {forward: {bytes: '2 * size_y'}}}\n", "'size_y'"),
        ("kernels:\n  - {kernel: rms_norm, bound: bytes, passes: {forward: {bytes: '2 * tokens'}}}\n", "'tokens'"),
        ("kernels:\n  - {kernel: no_such_kernel, bound: bytes, passes: {forward: {bytes: '1'}}}\n", "no_such_kernel"),
        (
            "kernels:\n  - {kernel: rms_norm, bound: flops, passes: {forward: {bytes: 'size_x'}}}\n",
            "needs a flops formula",
        ),
        (
            "kernels:\n  - {kernel: rms_norm, bound: bytes, passes: {forward: {bytes: 'size_x; import os'}}}\n",
            "unexpected",
        ),
        ("kernels:\n  - {kernel: rms_norm, bound: watts, passes: {}}\n", "bound"),
    ],
)
def test_a_bad_cost_model_file_is_refused_naming_the_problem(tmp_path, text, message):
    path = tmp_path / "costs.yaml"
    path.write_text(text)
    with pytest.raises(CostModelError, match=message):
        load_cost_models(path)
