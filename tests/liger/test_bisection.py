"""The bisection's search (liger/bisection.py) with fake measurements: a series at one level up to the
culprit and at another from it on, commits that do not build, overlapping levels, budgets."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.liger.bisection import (
    AFTER,
    AMBIGUOUS,
    BEFORE,
    CONFIRMED,
    INCOMPLETE,
    NOT_REPRODUCED,
    SKIPPED,
    ExpectedStep,
    Measurement,
    Skipped,
    bisect,
    max_measurements,
)


def commits(n: int) -> tuple[str, list[str], str]:
    """good, n candidates, bad: commit names c0 .. c(n+1)."""
    return "c0", [f"c{i}" for i in range(1, n + 1)], f"c{n + 1}"


class Fake:
    """A series at `before` up to (not including) commit c<k>, at `after` from it on; each measurement
    spread by `spread` either side and taking `seconds`; commits in `broken` do not build."""

    def __init__(self, k, before=100.0, after=125.0, spread=2.0, seconds=10.0, broken=(), values=None):
        self.k, self.before, self.after, self.spread, self.seconds = k, before, after, spread, seconds
        self.broken = set(broken)
        self.values = values or {}
        self.calls: list[str] = []

    def __call__(self, commit):
        self.calls.append(commit)
        if commit in self.broken:
            return Skipped("ImportError: cannot import name 'rms_norm'", seconds=1.0)
        index = int(commit[1:])
        value = self.values.get(commit, self.after if index >= self.k else self.before)
        return Measurement(value, value - self.spread, value + self.spread, seconds=self.seconds)


CHANGE = ExpectedStep(1.25, 1.2, 1.3)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 7, 8, 15, 20])
def test_every_culprit_is_confirmed_within_the_bound(n):
    good, candidates, bad = commits(n)
    for k in range(1, n + 2):
        fake = Fake(k)
        verdict = bisect(good, candidates, bad, fake, expected=CHANGE)
        assert verdict.kind == CONFIRMED, (n, k, verdict.reason)
        assert (verdict.culprit, verdict.parent) == (f"c{k}", f"c{k - 1}")
        assert verdict.label == f"confirmed c{k}"
        assert verdict.measurements == len(fake.calls) <= math.ceil(math.log2(n + 1)) + 2
        assert fake.calls[:2] == [good, bad]  # the endpoints first


def test_the_bound_is_the_endpoints_and_a_binary_search():
    assert [max_measurements(n) for n in (0, 1, 2, 3, 4, 7, 8)] == [2, 3, 4, 4, 5, 5, 6]


def test_steps_name_each_commit_its_value_interval_and_level():
    good, candidates, bad = commits(6)
    verdict = bisect(good, candidates, bad, Fake(4), expected=CHANGE)
    steps = verdict.to_dict()["steps"]
    assert [(s["commit"], s["role"], s["outcome"]) for s in steps] == [
        ("c0", "good", BEFORE),
        ("c7", "bad", AFTER),
        ("c3", "candidate", BEFORE),  # the middle of positions 0..7
        ("c5", "candidate", AFTER),
        ("c4", "candidate", AFTER),
    ]
    assert steps[0]["value"] == 100.0 and steps[0]["interval"] == [98.0, 102.0]
    assert verdict.to_dict()["measuredStep"]["ratio"] == pytest.approx(1.25)
    assert verdict.to_dict()["culprit"] == "c4" and verdict.to_dict()["inQuestion"] == []


def test_a_speed_up_is_bisected_as_a_slowdown_is():
    good, candidates, bad = commits(5)
    verdict = bisect(good, candidates, bad, Fake(2, before=100.0, after=75.0), expected=ExpectedStep(0.75, 0.7, 0.8))
    assert (verdict.kind, verdict.culprit) == (CONFIRMED, "c2")


def test_endpoints_without_the_step_are_not_reproduced_and_nothing_else_is_measured():
    good, candidates, bad = commits(6)
    flat = Fake(99)  # every commit at the before level
    verdict = bisect(good, candidates, bad, flat, expected=CHANGE)
    assert verdict.kind == NOT_REPRODUCED and flat.calls == ["c0", "c7"]
    assert "do not reproduce" in verdict.reason
    assert verdict.in_question == tuple(candidates + [bad])


def test_a_step_other_than_the_changes_is_not_reproduced():
    good, candidates, bad = commits(3)
    verdict = bisect(good, candidates, bad, Fake(2, after=200.0), expected=CHANGE)  # 2x where the change was 1.25x
    assert verdict.kind == NOT_REPRODUCED
    assert "measured step 2 " in verdict.reason


def test_overlapping_endpoint_levels_with_the_changes_step_are_ambiguous():
    good, candidates, bad = commits(3)
    wide = Fake(2, before=100.0, after=125.0, spread=20.0)
    verdict = bisect(good, candidates, bad, wide, expected=ExpectedStep(1.25, 1.0, 1.6))
    assert verdict.kind == AMBIGUOUS and "overlap" in verdict.reason
    assert wide.calls == ["c0", "c4"]


def test_by_hand_without_an_expected_step_overlapping_endpoints_are_not_reproduced():
    good, candidates, bad = commits(3)
    verdict = bisect(good, candidates, bad, Fake(2, before=100.0, after=101.0, spread=2.0))
    assert verdict.kind == NOT_REPRODUCED and "overlap" in verdict.reason
    confirmed = bisect(good, candidates, bad, Fake(2))
    assert (confirmed.kind, confirmed.culprit) == (CONFIRMED, "c2")


def test_a_candidate_between_the_levels_is_ambiguous():
    good, candidates, bad = commits(6)
    fake = Fake(4, values={"c3": 112.5})  # c3 straddles the midpoint (112.5 +- 2)
    verdict = bisect(good, candidates, bad, fake, expected=CHANGE)
    assert verdict.kind == AMBIGUOUS and verdict.steps[-1].commit == "c3"
    assert "overlaps both levels" in verdict.reason
    assert verdict.in_question == ("c1", "c2", "c3", "c4", "c5", "c6", "c7")


def test_a_commit_that_does_not_build_is_skipped_and_said():
    good, candidates, bad = commits(6)
    fake = Fake(4, broken={"c5"})
    verdict = bisect(good, candidates, bad, fake, expected=CHANGE)
    assert (verdict.kind, verdict.culprit) == (CONFIRMED, "c4")
    skipped = [s for s in verdict.steps if s.outcome == SKIPPED]
    assert [(s.commit, s.reason) for s in skipped] == [("c5", "ImportError: cannot import name 'rms_norm'")]
    assert verdict.skipped == ("c5",) and verdict.measurements == len(fake.calls) - 1
    assert "c5" in fake.calls and verdict.measurements <= max_measurements(6)


def test_the_culprits_parent_not_building_leaves_both_in_question():
    good, candidates, bad = commits(4)
    verdict = bisect(good, candidates, bad, Fake(3, broken={"c2"}), expected=CHANGE)
    assert verdict.kind == AMBIGUOUS
    assert verdict.in_question == ("c2", "c3") and "cannot be measured" in verdict.reason


def test_an_endpoint_that_does_not_build_is_not_reproduced():
    good, candidates, bad = commits(3)
    fake = Fake(2, broken={"c0"})
    verdict = bisect(good, candidates, bad, fake, expected=CHANGE)
    assert verdict.kind == NOT_REPRODUCED and fake.calls == ["c0"]
    assert "good endpoint c0 cannot be measured" in verdict.reason


def test_a_budget_stops_cleanly_with_what_is_still_in_question():
    good, candidates, bad = commits(15)
    fake = Fake(11, seconds=100.0)
    verdict = bisect(good, candidates, bad, fake, expected=CHANGE, budget_seconds=350.0)
    # three steps of 100 s fit; a fourth would end at 400 s
    assert verdict.kind == INCOMPLETE and len(fake.calls) == 3
    assert verdict.gpu_seconds == 300.0 and "budget" in verdict.reason
    # after the endpoints and c8 (before level) the culprit is one of c9..c16
    assert verdict.in_question == tuple(f"c{i}" for i in range(9, 17))
    assert "c11" in verdict.in_question and verdict.culprit is None
    assert verdict.to_dict()["budgetSeconds"] == 350.0


def test_a_budget_too_small_for_the_endpoints_says_so():
    good, candidates, bad = commits(3)
    verdict = bisect(good, candidates, bad, Fake(2, seconds=100.0), budget_seconds=150.0)
    assert verdict.kind == INCOMPLETE and "before both endpoints" in verdict.reason
    assert len(verdict.steps) == 1


def test_refuses_repeated_commits_and_a_bad_budget():
    with pytest.raises(ValueError, match="distinct"):
        bisect("a", ["b", "a"], "c", Fake(1))
    with pytest.raises(ValueError, match="positive"):
        bisect("c0", [], "c1", Fake(1), budget_seconds=0)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(min_value=0, max_value=40),
    data=st.data(),
)
def test_property_the_verdict_is_right_or_says_what_is_still_in_question(n, data):
    k = data.draw(st.integers(min_value=1, max_value=n + 1), label="culprit")
    broken = data.draw(st.sets(st.integers(min_value=1, max_value=n), max_size=n), label="broken") if n else set()
    good, candidates, bad = commits(n)
    fake = Fake(k, broken={f"c{i}" for i in broken})
    verdict = bisect(good, candidates, bad, fake, expected=CHANGE)
    assert verdict.measurements <= max_measurements(n)
    assert fake.calls[:2] == [good, bad]
    assert len(set(fake.calls)) == len(fake.calls)  # no commit measured twice
    if not broken:
        assert (verdict.kind, verdict.culprit) == (CONFIRMED, f"c{k}")
    elif verdict.kind == CONFIRMED:
        assert verdict.culprit == f"c{k}" and verdict.parent == f"c{k - 1}"
    else:
        assert verdict.kind in (AMBIGUOUS, INCOMPLETE)
        assert f"c{k}" in verdict.in_question
