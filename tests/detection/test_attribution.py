"""Commit subjects as the check and the page show them (detection/attribution.py): whole words, the pull
request number kept, Markdown escaped where Dagster renders it (issue 30)."""

from __future__ import annotations

import pytest

from kernelindex_pipeline.detection.attribution import escape_markdown, short_subject

SUBJECTS = [
    "fix(benchmark): move chunked loss module init out of measurements (#643)",
    "Add `accum_dtype` option for `FusedLinearCrossEntropy` (#830)",
    "[Perf] Optimize LayerNorm Backward: Replace Atomics with Persistent Reduction (#945)",
    "a subject without a pull request number that goes on and on past any reasonable width",
    "x" * 120,
]


@pytest.mark.parametrize("subject", SUBJECTS)
@pytest.mark.parametrize("limit", [30, 50, 70])
def test_a_cut_subject_keeps_whole_words_and_its_pull_request(subject, limit):
    short = short_subject(subject, limit)
    assert len(short) <= limit
    if len(subject) <= limit:
        assert short == subject
        return
    assert "…" in short
    words = subject.split()
    kept = short.split("…")[0].split()
    # every word shown is a whole word of the subject, in order (one word longer than the limit is cut)
    assert kept[:-1] == words[: len(kept) - 1]
    # the last one loses the punctuation a cut leaves dangling ("Backward:" before "…")
    assert kept[-1] == words[len(kept) - 1].rstrip(",;:-") or len(words[0]) > limit
    if subject.endswith(")") and "(#" in subject:
        assert short.endswith(subject[subject.rindex("(#") :])  # "(#643)", never "(#64"


def test_a_short_subject_is_unchanged_and_whitespace_is_one_space():
    assert short_subject("Fix rope (#12)") == "Fix rope (#12)"
    assert short_subject("Fix\n  rope") == "Fix rope"


def test_markdown_in_a_subject_is_shown_as_written():
    assert escape_markdown("Add `accum_dtype` *fast* [x] (#830)") == r"Add \`accum\_dtype\` \*fast\* \[x\] (\#830)"
