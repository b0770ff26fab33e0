"""The labelled audit of detection on Liger's CI runs (bench/audit/liger-ci-eleven.yaml) and its scoring
(bench/regressions_audit.py): every label is usable, and the figures count what they say."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
spec = importlib.util.spec_from_file_location("regressions_audit", BENCH / "regressions_audit.py")
audit = importlib.util.module_from_spec(spec)
spec.loader.exec_module(audit)


def test_every_labelled_change_has_a_verdict_a_known_cause_and_a_reason():
    labelled = audit.load_audit(audit.AUDIT)
    assert len(labelled) >= 200
    for key, label in labelled.items():
        assert label["verdict"] in ("real", "noise"), key
        if label["verdict"] == "real":
            assert label["cause"] in (*audit.CAUSES, "unknown"), key
    document = audit.yaml.safe_load(audit.AUDIT.read_text())
    assert all(group["reason"] for group in document["groups"])


def _change(kernel: str, before: str, after: str, cause: str, commits: tuple[str, ...] = ()) -> dict:
    return {
        "gpu": "g",
        "kernel": kernel,
        "mode": "full",
        "provider": "liger",
        "caseKey": "c",
        "metric": "latency",
        "before": {"source": before},
        "after": {"source": after},
        "cause": cause,
        "causes": [{"cause": cause, "commits": [{"sha": sha} for sha in commits]}],
    }


@pytest.fixture
def labels() -> dict:
    real = {"verdict": "real", "cause": "liger_kernel", "commits": ["abc1234"], "group": "g1"}
    return {
        "g k1/full/liger/c/latency a->b": real,
        "g k2/full/liger/c/latency a->b": {**real, "cause": "benchmark_script", "commits": ["def5678"]},
        "g k3/full/liger/c/latency b->c": {"verdict": "noise", "cause": None, "commits": [], "group": "g2"},
        "g k4/full/liger/c/latency a->b": real,  # never reported: a miss
    }


def test_scores_count_real_noise_misses_causes_and_commits(labels):
    report = {
        "changes": [
            _change("k1", "a", "b", "liger_kernel", ("abc1234ffff",)),  # right cause, right commit
            _change("k2", "a", "b", "liger_kernel", ("def5678",)),  # wrong cause
            _change("k3", "b", "c", "unknown"),  # noise, alone in its group
            _change("k5", "b", "c", "unknown"),  # not in the audit
        ],
        "sources": [{"source": "a", "codeRef": "x"}, {"source": "b", "codeRef": "y"}, {"source": "c", "codeRef": "y"}],
        "series": 10,
        "counts": {"byCause": {}},
    }
    figures = audit.score(report, labels)
    assert (figures["reported"], figures["real"], figures["noise"]) == (4, 2, 1)
    assert figures["unlabelled"] == ["g k5/full/liger/c/latency b->c"]
    assert figures["precision"] == pytest.approx(2 / 3)
    assert figures["missed"] == ["g k4/full/liger/c/latency a->b"] and figures["recall"] == pytest.approx(2 / 3)
    assert figures["cause_right"] == pytest.approx(1 / 2)
    # k2's true commit is not among the suspects of its true cause (none were named for benchmark_script)
    assert figures["commit_named"] == pytest.approx(1 / 2)
    assert figures["groups_only_noise"] == []  # b->c unknown also holds the unlabelled k5
    assert figures["same_code_changes"] == 2  # b and c measured the same code
