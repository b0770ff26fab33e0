"""The judgement store (detection/judgements.py): a detection that reuses stored per-series judgements gives
the report a detection without the store gives, judges afresh exactly the series whose inputs changed, and
treats a damaged store as empty (a note, never a crash)."""

from __future__ import annotations

import copy
import json
import os
import threading
from datetime import timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.detection import judgements
from kernelindex_pipeline.detection.detect import detect_regressions
from kernelindex_pipeline.detection.document import regressions_json
from kernelindex_pipeline.detection.settings import DetectionSettings
from tests.detection.test_detect import START, panel
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


def stored_entries(path) -> dict[str, list]:
    """The store's entries by key (its first line is the header)."""
    header, *lines = path.read_bytes().splitlines()
    assert header.startswith(judgements.MAGIC)
    return {row[0]: row for row in map(json.loads, lines)}


def stored_keys(path) -> set[str]:
    return set(stored_entries(path))


def rewrite_entry(path, edit, *, recheck: bool) -> str:
    """Edits one stored entry (the first with a change, else the first) in place: `edit(row)` changes the row
    [key, check, noise, changes, pending]; `recheck` recomputes its check, as a writer who knows this code
    would, so only the entry's own validation can refuse it. Returns the entry's key."""
    header, *lines = path.read_bytes().splitlines()
    rows = [json.loads(line) for line in lines]
    target = next((r for r in rows if r[3]), rows[0])
    edit(target)
    if recheck:
        target[1] = judgements._check(target[0], target[2:])
    path.write_bytes(b"\n".join([header, *(json.dumps(r).encode() for r in rows)]) + b"\n")
    return target[0]


def test_a_second_detection_of_the_same_runs_reuses_every_judgement_and_gives_the_same_report(tmp_path):
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    first = detect_regressions(runs, judgement_store=store)
    assert (first.judgements.rejudged, first.judgements.reused) == (24, 0) and len(first.changes) == 1
    written = store.read_bytes()
    second = detect_regressions(runs, judgement_store=store)
    assert (second.judgements.rejudged, second.judgements.reused) == (0, 24)
    assert regressions_json(second) == regressions_json(first) == regressions_json(detect_regressions(runs))
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
    assert regressions_json(after) == regressions_json(detect_regressions(newer))
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
    assert regressions_json(report) == regressions_json(detect_regressions(runs))


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
    assert regressions_json(report) == regressions_json(detect_regressions(newer))


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
    assert regressions_json(reusing) == regressions_json(detect_regressions(runs))


RECORDS = json.dumps({"apiVersion": "kernelindex/v1", "kind": "BenchmarkRun", "spec": {}}).encode() + b"\n"


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"\xff\xfe", b"[]", json.dumps({"format": "something else"}).encode(), RECORDS, b"[" * 200_000],
    ids=["broken-json", "not-utf8", "a-list", "another-format", "a-records-file", "nested-200k"],
)
def test_a_file_that_is_not_our_store_is_a_note_and_left_as_it_is(tmp_path, content):
    """Issue 31 item 2: `--judgement-store b/records.jsonl` replaced the records file with judgements. A file
    that does not begin with our header is never replaced (item 12: nor decoded, so no depth can crash it)."""
    store = tmp_path / "judgements.json"
    store.write_bytes(content)
    runs = panel(levels())
    for _ in range(2):  # the second detection finds the same file: nothing was stored
        report = detect_regressions(runs, judgement_store=store)
        assert (report.judgements.rejudged, report.judgements.reused) == (24, 0)
        [note] = report.judgements.notes
        assert note.startswith(f"judgement store {store}: not a judgement store") and "left as it is" in note
        assert "\n" not in note
        assert regressions_json(report) == regressions_json(detect_regressions(runs))
    assert store.read_bytes() == content


def test_an_empty_file_is_an_empty_store(tmp_path):
    store = tmp_path / "judgements.json"
    store.write_bytes(b"")
    runs = panel(levels())
    assert detect_regressions(runs, judgement_store=store).judgements.notes == []
    again = detect_regressions(runs, judgement_store=store)
    assert (again.judgements.reused, again.judgements.notes) == (24, [])


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # cut short part way through a line
        lambda data: data + b"garbage\n",
        lambda data: data[: len(judgements.MAGIC) + 3] + b"\n" + data.split(b"\n", 1)[1],  # the header itself damaged
        lambda data: data.replace(b"\n[", b"\n[" + b"[" * 200_000, 1),  # an entry nested 200,000 levels (item 12)
    ],
    ids=["truncated", "garbage-line", "damaged-header", "nested-entry"],
)
def test_a_damaged_store_of_ours_is_reused_where_it_can_be_and_rewritten(tmp_path, damage):
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    detect_regressions(runs, judgement_store=store)
    store.write_bytes(damage(store.read_bytes()))
    report = detect_regressions(runs, judgement_store=store)
    assert report.judgements.rejudged + report.judgements.reused == 24
    [note] = report.judgements.notes
    assert note.startswith(f"judgement store {store}: ") and note.endswith("judged afresh and the store rewritten")
    assert regressions_json(report) == regressions_json(detect_regressions(runs))
    again = detect_regressions(runs, judgement_store=store)  # rewritten whole: usable again
    assert (again.judgements.reused, again.judgements.notes) == (24, [])


def test_a_malformed_judgement_in_the_store_is_never_reused(tmp_path):
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    detect_regressions(runs, judgement_store=store)

    def cut_short(row):
        row[3] = [[1, 2]]

    rewrite_entry(store, cut_short, recheck=True)  # a split cut short
    report = detect_regressions(runs, judgement_store=store)
    assert (report.judgements.rejudged, report.judgements.reused) == (1, 23)
    [note] = report.judgements.notes
    assert "1 stored judgement not reused (an entry with a change that is not 3 indices" in note
    assert regressions_json(report) == regressions_json(detect_regressions(runs))


def test_an_entry_whose_changes_were_emptied_no_longer_matches_its_key(tmp_path):
    """Issue 31 item 9: a store whose entries kept their keys but lost their changes gave 0 changes, no
    warning. Each entry carries a digest of its key and judgement: an edit shows."""
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    assert len(detect_regressions(runs, judgement_store=store).changes) == 1

    def emptied(row):
        row[3] = []

    rewrite_entry(store, emptied, recheck=False)
    report = detect_regressions(runs, judgement_store=store)
    assert len(report.changes) == 1 and (report.judgements.rejudged, report.judgements.reused) == (1, 23)
    assert "does not match its key" in report.judgements.notes[0]


@pytest.mark.parametrize(
    "edit, why",
    [
        (lambda row: row.__setitem__(2, float("nan")), "NaN in an entry"),
        (lambda row: row.__setitem__(2, float("inf")), "Infinity in an entry"),
        (lambda row: row[3][0].__setitem__(4, float("-inf")), "-Infinity in an entry"),
        (lambda row: row[3][0].__setitem__(0, 10_000), "outside a series of 10 values"),
        (lambda row: row[3][0].__setitem__(1, -5), "outside a series of 10 values"),
        (lambda row: row.__setitem__(4, [10, 9, 11, 0.1, 0.1, 0.01]), "outside a series of 10 values"),
        (lambda row: row[3][0].__setitem__(5, 7.0), "p-value outside [0, 1]"),
        (lambda row: row.__setitem__(2, -1.0), "noise is not a finite number"),
        (lambda row: row[3].append(list(row[3][0])), "changes are out of order"),
        (lambda row: row[3][0].__setitem__(0, "3"), "not 3 indices and 3 finite numbers"),
    ],
    ids=[
        "nan",
        "inf",
        "minus-inf",
        "index-past-end",
        "negative-start",
        "pending-past-end",
        "p-value",
        "noise",
        "repeated-change",
        "string-index",
    ],
)
def test_a_stored_entry_is_checked_in_full_before_it_is_reused(tmp_path, edit, why):
    """Issue 31 items 9 and 12: NaN or Infinity passed into regressions.json (not JSON then), indices outside the
    series were an internal IndexError. Even with its check recomputed, such an entry is judged afresh."""
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    detect_regressions(runs, judgement_store=store)
    rewrite_entry(store, edit, recheck=False)
    data = store.read_bytes()
    if b"NaN" not in data and b"Infinity" not in data:  # a finite edit: recompute the check, as a forger would
        store.write_bytes(data)
        rewrite_entry(store, lambda row: None, recheck=True)
    report = detect_regressions(runs, judgement_store=store)
    assert (report.judgements.rejudged, report.judgements.reused) == (1, 23)
    assert why in report.judgements.notes[0]
    assert regressions_json(report) == regressions_json(detect_regressions(runs))
    json.dumps(regressions_json(report), allow_nan=False)


def _fifo(path):
    os.mkfifo(path)
    return path


def _link(target):
    def make(path):
        path.symlink_to(target)
        return path

    return make


@pytest.mark.parametrize(
    "make, kind",
    [
        (_fifo, "a FIFO"),
        (_link("/dev/null"), "a character device"),
        (_link("/dev/zero"), "a character device"),
        (lambda path: (path.mkdir(), path)[1], "a directory"),
    ],
    ids=["fifo", "dev-null", "dev-zero", "directory"],
)
def test_a_store_that_is_not_a_regular_file_is_neither_read_nor_replaced(tmp_path, make, kind):
    """Issue 31 items 2 and 8: a FIFO blocked for ever, a /dev/zero-like node read gigabytes, /dev/null was
    replaced by a regular file (as root: the machine's /dev/null). (The devices are reached through links in
    tmp_path, so a regression replaces a link, never /dev/null.)"""
    store = make(tmp_path / "judgements.json")
    before = os.lstat(store)
    runs = panel(levels())
    done: dict = {}

    def detect():
        try:
            done["report"] = detect_regressions(runs, judgement_store=store)
        except BaseException as exc:  # shown by the assertion below
            done["error"] = exc

    worker = threading.Thread(target=detect)
    worker.start()
    worker.join(timeout=120)
    if worker.is_alive() and kind == "a FIFO":
        with open(store, "wb"):  # let the blocked reader go, so the test run can end
            pass
    assert "report" in done, done.get("error", "the detection did not finish within 120 s")
    [note] = done["report"].judgements.notes
    assert note == (
        f"judgement store {store}: not a regular file ({kind}); it is neither read nor replaced, and every series "
        "is judged afresh (point the store at a regular file)"
    )
    after = os.lstat(store)
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)


def test_only_the_entries_asked_for_are_decoded(tmp_path, monkeypatch):
    """Issue 31 item 8: a well-formed 480 MiB store cost 3.7 GB and 83 s to decode whole. Entries are indexed
    by key undecoded, and only those a detection asks for are decoded, one line at a time."""
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    detect_regressions(runs, judgement_store=store)
    filler = b"".join(
        json.dumps([f"{i:032x}", "0" * 32, 0.01, [[1, 0, 5, 0.1, 0.01, 0.001]], None]).encode() + b"\n"
        for i in range(50_000)
    )
    store.write_bytes(store.read_bytes() + filler)  # 50,000 entries no detection asks for
    decoded = []
    real = judgements.json.loads

    def watched(text, *args, **kwargs):
        decoded.append(len(text))
        return real(text, *args, **kwargs)

    monkeypatch.setattr(judgements.json, "loads", watched)
    report = detect_regressions(runs, judgement_store=store)
    monkeypatch.undo()
    assert (report.judgements.rejudged, report.judgements.reused) == (0, 24)
    assert len(decoded) == 1 + 24 and max(decoded) < 1000  # the header and the 24 entries used
    assert len(stored_keys(store)) == 24  # written back: only what this detection used


def test_a_store_over_the_size_limit_is_a_note_and_rewritten(tmp_path, monkeypatch):
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    detect_regressions(runs, judgement_store=store)
    monkeypatch.setattr(judgements, "MAX_STORE_BYTES", store.stat().st_size - 1)
    report = detect_regressions(runs, judgement_store=store)
    assert report.judgements.rejudged == 24 and "larger than" in report.judgements.notes[0]
    monkeypatch.undo()
    assert detect_regressions(runs, judgement_store=store).judgements.reused == 24


def test_a_link_to_the_store_keeps_pointing_at_it(tmp_path):
    real = tmp_path / "real.json"
    link = tmp_path / "judgements.json"
    link.symlink_to(real)
    detect_regressions(panel(levels()), judgement_store=link)
    assert link.is_symlink() and real.read_bytes().startswith(judgements.MAGIC)
    assert detect_regressions(panel(levels()), judgement_store=link).judgements.reused == 24


def test_an_older_layout_of_our_store_is_rewritten_without_a_note(tmp_path):
    store = tmp_path / "judgements.json"
    store.write_text(json.dumps({"format": judgements.STORE_FORMAT, "version": 1, "judgements": {}}))
    report = detect_regressions(panel(levels()), judgement_store=store)
    assert (report.judgements.rejudged, report.judgements.notes) == (24, [])
    assert len(stored_keys(store)) == 24


def test_changed_settings_rejudge_every_series(tmp_path):
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    detect_regressions(runs, judgement_store=store)
    stricter = DetectionSettings(alpha=0.0001)
    report = detect_regressions(runs, stricter, judgement_store=store)
    assert (report.judgements.rejudged, report.judgements.reused) == (24, 0)
    assert regressions_json(report) == regressions_json(detect_regressions(runs, stricter))


def test_another_judgement_version_is_not_reused(tmp_path, monkeypatch):
    """A store written by another version of detection is simply not ours: judged afresh, without a warning."""
    store = tmp_path / "judgements.json"
    runs = panel(levels())
    detect_regressions(runs, judgement_store=store)
    monkeypatch.setattr(judgements, "JUDGEMENT_VERSION", judgements.JUDGEMENT_VERSION + 1)
    report = detect_regressions(runs, judgement_store=store)
    assert (report.judgements.rejudged, report.judgements.reused, report.judgements.notes) == (24, 0, [])
    assert json.loads(store.read_bytes().split(b"\n", 1)[0])["version"] == judgements.JUDGEMENT_VERSION


def test_a_store_that_cannot_be_written_is_a_note_and_the_result_stands(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    runs = panel(levels())
    report = detect_regressions(runs, judgement_store=blocker / "judgements.json")  # its folder is a file
    assert report.judgements.rejudged == 24 and any("not written" in n for n in report.judgements.notes)
    assert regressions_json(report) == regressions_json(detect_regressions(runs))


def test_without_a_store_every_series_is_judged_in_memory():
    report = detect_regressions(panel(levels()))
    assert (report.judgements.rejudged, report.judgements.reused, report.judgements.store) == (24, 0, None)
    assert "no judgement store" in report.judgements.line()
