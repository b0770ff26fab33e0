"""A bisection through the real sweep path on a CPU (sweep/bisection.py over liger/bisection.py): a
synthetic Liger repository whose rms_norm op gets slower from one commit on and fails to import at
another, built per commit into wheels, each step a real run_sweep (its own environment, the sentinel, the
benchmark script of the harness commit in real subprocesses, stand-in torch/triton timing the op's cost),
its CSV made into records, the series' median and interval read from them."""

from __future__ import annotations

import json
import math

import pytest

from kernelindex_pipeline.liger.bisection import AFTER, BEFORE, CONFIRMED, NOT_REPRODUCED, SKIPPED, ExpectedStep
from kernelindex_pipeline.liger.source_history import LigerSourceHistory, SourceHistoryError
from kernelindex_pipeline.records.io import load_manifests
from kernelindex_pipeline.sweep.bisection import (
    BisectionInputError,
    BisectionPlan,
    SeriesSelector,
    StepSweeper,
    bisection_document,
    plan_by_hand,
    plan_of_group,
    run_bisection,
)
from kernelindex_pipeline.sweep.outcomes import ConfigurationError
from tests.support.liger_bisection import CASE_KEY, H100, build_host, build_repository, report_of

SERIES = SeriesSelector("rms_norm", "forward")
# 2.0 -> 2.6 ms with the stand-in clock (tests/support/liger_bisection.py); a change seen at 1.3x
CHANGE = ExpectedStep(1.3, 1.25, 1.35)


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("bisect")
    # c0 .. c8: the op is slower from c6 on, and c4 does not import (c5 repairs it)
    repo = build_repository(root, commits=8, slow_from=6, broken=frozenset({4}))
    host = build_host(root / "host")
    (root / "wheels").mkdir()
    fields = {
        "env_cache_dir": str(root / "envs"),
        "wheel_dir": str(root / "wheels"),  # offline: the wheel of each commit is all that is installed
        "extra_pythonpath": [str(host["torch"])],
        "extra_env": {"PATH": host["path"]},
        "script_timeout_s": 120.0,
    }
    return {"root": root, "repo": repo, "fields": fields, "builds": root / "builds"}


def sweeper(bench, plan, name, progress=None):
    return StepSweeper(
        LigerSourceHistory(bench["repo"].path),
        plan,
        bench["root"] / name,
        rounds=2,
        build_cache_dir=bench["builds"],
        request_fields=bench["fields"],
        progress=progress,
    )


def hand_plan(bench, good, bad, expected=CHANGE):
    commits = bench["repo"].commits
    plan = plan_by_hand(
        LigerSourceHistory(bench["repo"].path), gpu=H100, good=commits[good], bad=commits[bad], series=SERIES
    )
    return BisectionPlan(**{**plan.__dict__, "expected": expected})


@pytest.fixture(scope="module")
def first(bench):
    plan = hand_plan(bench, 0, 8)
    lines = []
    step = sweeper(bench, plan, "first", lines.append)
    verdict = run_bisection(plan, step)
    return {"plan": plan, "verdict": verdict, "lines": lines, "step": step}


@pytest.mark.slow  # six sweeps, each building a commit's wheel and environment: about 20 s
def test_the_culprit_is_found_within_the_bound_and_the_broken_commit_is_skipped(bench, first):
    commits, verdict = bench["repo"].commits, first["verdict"]
    plan = first["plan"]
    assert plan.candidates == tuple(commits[1:8]) and plan.harness == commits[8]  # n = 7, the later run's harness
    assert verdict.kind == CONFIRMED, verdict.summary_lines()
    assert (verdict.culprit, verdict.parent) == (commits[6], commits[5])
    assert verdict.measurements <= math.ceil(math.log2(7 + 1)) + 2 == 5
    outcomes = [(s.commit, s.outcome) for s in verdict.steps]
    assert outcomes == [
        (commits[0], BEFORE),
        (commits[8], AFTER),
        (commits[4], SKIPPED),  # the middle: does not import, so its neighbour is probed
        (commits[3], BEFORE),
        (commits[5], BEFORE),
        (commits[6], AFTER),
    ]
    skipped = verdict.steps[2]
    assert "benchmark_rms_norm.py failed" in skipped.reason and "liger_kernel.ops.gone" in skipped.reason
    fast, slow = verdict.steps[0], verdict.steps[1]
    assert 1.8e6 < fast.value < 2.2e6 and 2.4e6 < slow.value < 2.8e6  # ns: the op's cost plus the clock's jitter
    assert verdict.measured_step is not None and 1.25 < verdict.measured_step[0] < 1.35
    assert all(s.seconds > 0 for s in verdict.steps)


@pytest.mark.slow
def test_each_step_is_an_ordinary_measured_run_naming_its_commit(first):
    verdict = first["verdict"]
    culprit = verdict.steps[-1]
    manifests = [m for _, m in load_manifests(culprit.detail["records"])]
    revisions = [m for m in manifests if m["kind"] == "ImplementationRevision" and m["spec"].get("projectRevision")]
    liger = [
        r["spec"]["projectRevision"] for r in revisions if "Liger-Kernel" in r["spec"]["projectRevision"]["repository"]
    ]
    assert {r.get("commit") for r in liger} == {verdict.culprit}
    runs = [m for m in manifests if m["kind"] == "BenchmarkRun"]
    assert runs and all(m["spec"]["timing"]["latencyNs"].get("confidence95") for m in runs if "timing" in m["spec"])


@pytest.mark.slow  # after the first bisection (the fixture): three sweeps, nothing built
def test_a_second_bisection_builds_nothing_and_finds_the_culprit_over_other_commits(bench, first):
    commits = bench["repo"].commits
    plan = hand_plan(bench, 5, 8)  # n = 2, the culprit the first candidate
    step = sweeper(bench, plan, "second")
    verdict = run_bisection(plan, step)
    assert (verdict.kind, verdict.culprit) == (CONFIRMED, commits[6])
    assert verdict.measurements == 3 <= math.ceil(math.log2(2 + 1)) + 2
    assert step.builds and all(b["reused"] for b in step.builds.values())
    measured = [s for s in verdict.steps if s.outcome != SKIPPED]
    assert measured and all(s.detail["environmentReused"] for s in measured)  # each commit's environment too


@pytest.mark.slow  # after the first bisection: six sweeps, two commits to build
@pytest.mark.parametrize(
    ("good", "bad", "measured", "skipped"),
    [(5, 6, 2, 0), (2, 7, 4, 1)],  # n = 0: the culprit is the bad end; n = 4: c4 (the middle) skipped
)
def test_other_ranges_find_the_culprit_within_the_bound(bench, first, good, bad, measured, skipped):
    plan = hand_plan(bench, good, bad)
    verdict = run_bisection(plan, sweeper(bench, plan, f"range-{good}-{bad}"))
    n = bad - good - 1
    assert (verdict.kind, verdict.culprit) == (CONFIRMED, bench["repo"].commits[6]), verdict.summary_lines()
    assert (verdict.measurements, len(verdict.skipped)) == (measured, skipped)
    assert verdict.measurements <= math.ceil(math.log2(n + 1)) + 2


@pytest.mark.slow  # after the first bisection: two sweeps of commits built before
def test_endpoints_without_the_change_are_not_reproduced(bench, first):
    commits = bench["repo"].commits
    plan = hand_plan(bench, 0, 3)  # every commit at the fast level
    verdict = run_bisection(plan, sweeper(bench, plan, "flat"))
    assert verdict.kind == NOT_REPRODUCED and [s.commit for s in verdict.steps] == [commits[0], commits[3]]
    assert "do not reproduce" in verdict.reason


@pytest.mark.slow
def test_the_verdict_document(first):
    document = bisection_document(first["plan"], first["verdict"], first["step"].builds)
    assert document["verdict"] == CONFIRMED and document["label"] == f"confirmed {first['verdict'].culprit}"
    assert document["plan"]["series"]["kernel"] == "rms_norm" and len(document["steps"]) == 6
    assert json.loads(json.dumps(document)) == document


def test_a_groups_plan_is_its_boundary_its_suspects_oldest_first_and_its_largest_liger_step(bench):
    commits = bench["repo"].commits
    history = LigerSourceHistory(bench["repo"].path)
    report = report_of(commits, before_ref=commits[0][:7], after_ref=commits[8][:7])
    plan = plan_of_group(history, report, "g-0123456789ab")
    assert (plan.good, plan.bad, plan.harness) == (commits[0], commits[8], commits[8])
    assert plan.candidates == (commits[3], commits[6])  # oldest first; the bad end is no candidate
    assert plan.series == SeriesSelector(
        "rms_norm", "forward", "liger", CASE_KEY
    )  # the huggingface step is no Liger code
    assert plan.expected == ExpectedStep(1.3, 1.25, 1.35) and plan.gpu == H100 and plan.group == "g-0123456789ab"
    assert plan_of_group(history, report, "1") == plan  # by its place on the page too


def test_a_group_that_cannot_be_bisected_says_why(bench):
    commits = bench["repo"].commits
    history = LigerSourceHistory(bench["repo"].path)
    with pytest.raises(BisectionInputError, match="its runs name no commit"):
        plan_of_group(history, report_of(commits, before_ref=None, after_ref=commits[8]), "1")
    with pytest.raises(BisectionInputError, match=r"no group 'g-nope' in the report \(its 1 groups: g-0123456789ab\)"):
        plan_of_group(history, report_of(commits, before_ref=commits[0], after_ref=commits[8]), "g-nope")
    with pytest.raises(SourceHistoryError, match="no commit 'abcdef0' in the clone"):
        plan_of_group(history, report_of(commits, before_ref="abcdef0", after_ref=commits[8]), "1")
    with pytest.raises(BisectionInputError, match="not an ancestor"):
        plan_by_hand(history, gpu=H100, good=commits[8], bad=commits[0], series=SERIES)


def test_a_step_needs_two_rounds_for_its_interval(bench):
    plan = hand_plan(bench, 0, 8)
    with pytest.raises(ConfigurationError, match="2 rounds or more"):
        StepSweeper(LigerSourceHistory(bench["repo"].path), plan, bench["root"] / "one-round", rounds=1)
    with pytest.raises(ConfigurationError, match="cannot take: \\['kernels'\\]"):
        StepSweeper(
            LigerSourceHistory(bench["repo"].path), plan, bench["root"] / "x", request_fields={"kernels": ["a"]}
        )


def test_the_groups_worth_bisecting_are_slowdowns_with_suspects_named_commits_and_a_gpu():
    from kernelindex_pipeline.records.metrics import LATENCY
    from kernelindex_pipeline.sweep.bisection import groups_worth_bisecting

    def group(gid, magnitude=1.5, suspects=2, refs=("a", "b"), gpu="nvidia-h100", provider="liger"):
        return {
            "id": gid,
            "gpu": gpu,
            "before": {"codeRef": refs[0]},
            "after": {"codeRef": refs[1]},
            "suspects": {"commits": [{"sha": f"{i:040x}"} for i in range(suspects)]},
            "series": [{"provider": provider, "metric": LATENCY, "magnitude": magnitude}],
        }

    report = {
        "groups": [
            group("g-small", 1.2),
            group("g-big", 3.0),
            group("g-faster", 0.5),
            group("g-one-suspect", suspects=1),
            group("g-no-commit", refs=(None, "b")),
            group("g-no-gpu", gpu=None),
            group("g-torch", provider="huggingface"),
            {"id": "g-junk", "series": "not a list", "suspects": "nor a mapping", "before": 3},
            "not a group",
        ]
    }
    assert groups_worth_bisecting(report) == [("g-big", "nvidia-h100"), ("g-small", "nvidia-h100")]
    assert ("g-one-suspect", "nvidia-h100") in groups_worth_bisecting(report, min_suspects=1)
    assert groups_worth_bisecting({"groups": "x"}) == [] and groups_worth_bisecting([]) == []
