"""The judgement store (reporting/judgements.py): a detection that reuses stored per-series judgements gives
the report a detection without the store gives, judges afresh exactly the series whose inputs changed, and
treats a damaged store as empty (a note, never a crash)."""

from __future__ import annotations

import copy
import json
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.reporting import judgements
from kernelindex_pipeline.reporting.changepoints import DetectionSettings
from kernelindex_pipeline.reporting.regressions import detect_regressions
from tests.reporting.test_regressions import START, panel
from tests.support.factories import detection_run as run

H100 = "nvidia-h100-80gb-hbm3"  # the GPU of every detection_run
A100 = "nvidia-a100-80gb"


def levels(seed: int = 1, series: int = 24, sweeps: int = 10) -> np.ndarray:
    """Series of 2 % noise; series 3 is 30 % slower from sweep 6 on (one change to find)."""
    rng = np.random.default_rng(seed)
    out = 200_000 * np.exp(rng.normal(0, 0.02, size=(series, sweeps)))
    out[3, 6:] *= 1.3
    return out


def on_gpu(runs: list[dict], gpu: str) -> list[dict]:
    """The same runs measured on another GPU (its slug in the external id: a series of its own)."""
    moved = copy.deepcopy(runs)
    for m in moved:
        native = m["spec"]["sourceNative"]
        native["externalId"] = native["externalId"].replace(H100, gpu)
    return moved


def stored_keys(path) -> set[str]:
    return set(json.loads(path.read_text())["judgements"])


def test_a_second_detection_of_the_same_runs_reuses_every_judgement_and_gives_the_same_report(tmp_path):
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    first = detect_regressions(runs, judgement_store=store)
    assert (first.judgements.rejudged, first.judgements.reused) == (24, 0) and len(first.changes) == 1
    written = store.read_bytes()
    second = detect_regressions(runs, judgement_store=store)
    assert (second.judgements.rejudged, second.judgements.reused) == (0, 24)
    assert second.to_dict() == first.to_dict() == detect_regressions(runs).to_dict()
    assert store.read_bytes() == written  # nothing new: the file is left as it was
    assert second.judgements.notes == [] and str(store) in second.judgements.line()


def test_a_new_run_on_one_gpu_rejudges_that_gpus_series_only(tmp_path):
    """Host effects and noise priors are estimated across the series of a GPU, so a new run there moves the
    inputs of each of its series (the key catches that); the other GPU's series keep theirs and are reused
    (nothing is pooled across GPUs: the next test)."""
    store = tmp_path / "judgements.json"
    h100 = panel(levels())
    runs = h100 + on_gpu(panel(levels(seed=2)), A100)
    before = detect_regressions(runs, judgement_store=store)
    assert before.judgements.rejudged == 48
    newer = runs + on_gpu([run("kernel0", "liger", "case1", START + timedelta(days=70), 200_000.0)], A100)
    after = detect_regressions(newer, judgement_store=store)
    assert (after.judgements.rejudged, after.judgements.reused) == (24, 24)
    reused = {t.key for t in after.trends if t.key.gpu == H100}
    assert len(reused) == 24  # the reused ones are the H100's, whose runs did not change
    assert after.to_dict() == detect_regressions(newer).to_dict()
    assert len(stored_keys(store)) == 48  # the A100's old judgements are gone: the store holds the current ones


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), step=st.sampled_from([1.0, 1.25, 0.8]), swept=st.sampled_from([H100, A100]))
def test_a_new_sweep_on_one_gpu_leaves_every_series_of_the_other_gpu_reused(tmp_path_factory, seed, step, swept):
    """Two GPUs are never compared: what host effects pool over a latency class (its usual spread over kernel
    groups, the usual scatter under a script's effect, the shrinkage of loadings) is pooled per GPU, so a new
    sweep on one GPU moves no input of the other GPU's series. Its 24 series are all judged afresh (each has
    a new value), so exactly 24 judged afresh means none of the other GPU's. (Pooled over both GPUs, 3 of
    the first 6 seeds rejudged some or all of the other GPU's series.)"""
    store = tmp_path_factory.mktemp("store") / "judgements.json"
    rng = np.random.default_rng(seed)
    old = {H100: levels(int(rng.integers(2**32))), A100: levels(int(rng.integers(2**32)))}
    detect_regressions(panel(old[H100]) + on_gpu(panel(old[A100]), A100), judgement_store=store)
    new = dict(old)
    new[swept] = np.c_[old[swept], old[swept][:, -1] * step]
    runs = panel(new[H100]) + on_gpu(panel(new[A100]), A100)
    report = detect_regressions(runs, judgement_store=store)
    assert (report.judgements.rejudged, report.judgements.reused) == (24, 24)
    assert report.to_dict() == detect_regressions(runs).to_dict()


def test_a_new_run_of_a_series_alone_on_its_gpu_rejudges_that_series_only(tmp_path):
    """Where no estimate across series can carry a new run to other series (the only series of its GPU, one
    kernel group: too few for a host effect), exactly that series is judged again."""
    store = tmp_path / "judgements.json"
    lone = [
        run("solo", "liger", "case0", START + timedelta(days=7 * j), 300_000.0 * (1 + 0.01 * (j % 3)))
        for j in range(10)
    ]
    runs = panel(levels()) + on_gpu(lone, A100)
    assert detect_regressions(runs, judgement_store=store).judgements.rejudged == 25
    newer = runs + on_gpu([run("solo", "liger", "case0", START + timedelta(days=70), 300_000.0)], A100)
    report = detect_regressions(newer, judgement_store=store)
    assert (report.judgements.rejudged, report.judgements.reused) == (1, 24)
    assert report.to_dict() == detect_regressions(newer).to_dict()


@settings(max_examples=12, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    edits=st.lists(st.tuples(st.integers(0, 23), st.integers(0, 9), st.floats(0.5, 2.0)), max_size=3),
    append=st.booleans(),
)
def test_a_detection_with_a_stale_store_equals_one_without_it(tmp_path_factory, seed, edits, append):
    """The differential guarantee: whatever changed between two detections (values edited, a sweep added on
    one GPU), reusing the store never changes the report; how much is reused depends on what moved."""
    store = tmp_path_factory.mktemp("store") / "judgements.json"
    old = levels(seed)
    detect_regressions(panel(old) + on_gpu(panel(old), A100), judgement_store=store)
    new = old.copy()
    for series, sweep, factor in edits:
        new[series, sweep] *= factor
    if append:
        new = np.c_[new, new[:, -1] * 1.25]  # a step at the newest sweep: pending on every series
    runs = panel(new) + on_gpu(panel(old), A100)
    reusing = detect_regressions(runs, judgement_store=store)
    assert reusing.judgements.rejudged + reusing.judgements.reused == len(reusing.trends) == 48
    assert reusing.to_dict() == detect_regressions(runs).to_dict()


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"\xff\xfe", b"[]", json.dumps({"format": "something else"}).encode(), b""],
    ids=["broken-json", "not-utf8", "a-list", "another-format", "empty"],
)
def test_an_unreadable_store_is_a_note_and_a_full_recompute(tmp_path, content):
    store = tmp_path / "judgements.json"
    store.write_bytes(content)
    runs = panel(levels())
    report = detect_regressions(runs, judgement_store=store)
    assert (report.judgements.rejudged, report.judgements.reused) == (24, 0)
    [note] = report.judgements.notes
    assert str(store) in note and "judged afresh" in note
    assert report.to_dict() == detect_regressions(runs).to_dict()
    again = detect_regressions(runs, judgement_store=store)  # rewritten whole: usable again
    assert (again.judgements.reused, again.judgements.notes) == (24, [])


def test_a_malformed_judgement_in_the_store_is_never_reused(tmp_path):
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    detect_regressions(runs, judgement_store=store)
    data = json.loads(store.read_text())
    first = next(iter(data["judgements"]))
    data["judgements"][first] = [0.01, [[1, 2]], None]  # a split cut short
    store.write_text(json.dumps(data))
    report = detect_regressions(runs, judgement_store=store)
    assert report.judgements.rejudged == 24 and "malformed" in report.judgements.notes[0]


def test_changed_settings_rejudge_every_series(tmp_path):
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    detect_regressions(runs, judgement_store=store)
    stricter = DetectionSettings(alpha=0.0001)
    report = detect_regressions(runs, stricter, judgement_store=store)
    assert (report.judgements.rejudged, report.judgements.reused) == (24, 0)
    assert report.to_dict() == detect_regressions(runs, stricter).to_dict()


def test_another_judgement_version_is_not_reused(tmp_path, monkeypatch):
    """A store written by another version of detection is simply not ours: judged afresh, without a warning."""
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    detect_regressions(runs, judgement_store=store)
    monkeypatch.setattr(judgements, "JUDGEMENT_VERSION", judgements.JUDGEMENT_VERSION + 1)
    report = detect_regressions(runs, judgement_store=store)
    assert (report.judgements.rejudged, report.judgements.reused, report.judgements.notes) == (24, 0, [])
    assert json.loads(store.read_text())["version"] == judgements.JUDGEMENT_VERSION


def test_a_store_that_cannot_be_written_is_a_note_and_the_result_stands(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    runs = panel(levels())
    report = detect_regressions(runs, judgement_store=blocker / "judgements.json")  # its folder is a file
    assert report.judgements.rejudged == 24 and any("not written" in n for n in report.judgements.notes)
    assert report.to_dict() == detect_regressions(runs).to_dict()


def test_without_a_store_every_series_is_judged_in_memory():
    report = detect_regressions(panel(levels()))
    assert (report.judgements.rejudged, report.judgements.reused, report.judgements.store) == (24, 0, None)
    assert "no judgement store" in report.judgements.line()
