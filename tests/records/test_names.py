"""kebab(): docs/reference/record-contract.md §3, including the 100-character cut."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelindex_pipeline.records.names import NAME_LIMIT, kebab


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3"),
        ("fused_linear_grpo_loss_sequence", "fused-linear-grpo-loss-sequence"),
        ("2025-08-05 00:08:54", "2025-08-05-00-08-54"),
        ("  --Hello,   World!--  ", "hello-world"),
        ("a__b..c//d", "a-b-c-d"),
        ("Ünïcödé ẞ café", "n-c-d-caf"),  # letters outside [a-z0-9] after lowercasing become '-'
        ("\u212a", "k"),  # KELVIN SIGN lowercases to ASCII 'k' (as in ECMAScript)
        ("", ""),
        ("---", ""),
    ],
)
def test_known_answers(text, expected):
    assert kebab(text) == expected


def test_seed_run_name_is_cut_at_100_characters():
    # The first seed record: the cut drops the dtype and the timestamp entirely.
    text = "liger-fused_linear_grpo_loss_sequence-forward-torch-NVIDIA A100-SXM4-80GB-batch8-seq1024-vocab128256-bf16-2025-08-05 00:08:54"
    assert kebab(text) == (
        "liger-fused-linear-grpo-loss-sequence-forward-torch-nvidia-a100-sxm4-80gb-batch8-seq1024-vocab128256"
    )
    assert len(kebab(text)) == NAME_LIMIT == 100


def test_cut_may_split_a_timestamp():
    text = "liger-megatron_cross_entropy-backward-liger-NVIDIA H100 80GB HBM3-batch4-seq2048-vocab131072-bf16-2026-06-15 22:13:03"
    assert kebab(text) == (
        "liger-megatron-cross-entropy-backward-liger-nvidia-h100-80gb-hbm3-batch4-seq2048-vocab131072-bf16-20"
    )


def test_cut_may_leave_a_trailing_dash():
    text = "x" * 99 + " tail"
    assert kebab(text) == "x" * 99 + "-"


def test_strip_happens_before_the_cut():
    # Leading separators are stripped first, so they do not use up the 100 characters.
    assert kebab("---" + "y" * 120) == "y" * 100


@given(st.text())
def test_properties(text):
    name = kebab(text)
    assert re.fullmatch(r"[a-z0-9-]*", name)
    assert len(name) <= NAME_LIMIT
    assert "--" not in name
    assert not name.startswith("-")
    uncut = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    assert uncut.startswith(name)
    assert kebab(name) == name.rstrip("-")  # idempotent up to a trailing '-' left by the cut
