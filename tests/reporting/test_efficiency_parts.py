"""Efficiency per publication (reporting/efficiency_parts.py): after any sequence of publications the parts give
what one derivation of the whole catalogue gives (the sidecar's bytes, the ranking, the counts), deriving only
what the publications since brought, and a damaged part or list is derived again with a warning."""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.reporting.efficiency import (
    IMPLAUSIBLE_FLAGS,
    SIDECAR_NAME,
    derive_efficiency,
    rank_by_efficiency,
    write_sidecar,
)
from kernelindex_pipeline.reporting.efficiency_parts import PARTS_DIR, PARTS_LIST, _inserted, update_efficiency
from kernelindex_pipeline.reporting.series import RecordIndex, build_series
from tests.support.run_pool import SECOND_SENTINEL, STEPS, pool, publish

LOW = 0.3


def _same_as_one_derivation(store: CatalogueStore, out: Path, done) -> None:
    index = RecordIndex(store.manifests())
    report = derive_efficiency(index, low_threshold=LOW)
    with tempfile.TemporaryDirectory() as whole:
        write_sidecar(report, whole)
        assert (out / SIDECAR_NAME).read_bytes() == (Path(whole) / SIDECAR_NAME).read_bytes()
    assert [r.to_dict() for r in done.rows] == [r.to_dict() for r in rank_by_efficiency(build_series(index), report)]
    assert done.counts == report.counts()
    assert done.runs == len(report.runs)
    assert done.implausible == sum(1 for r in report.runs.values() if any(f in IMPLAUSIBLE_FLAGS for f in r.flags))


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(steps=[(set(range(len(pool()[0]))) - SECOND_SENTINEL, "ci:a", False), (SECOND_SENTINEL, "sweep:h100", False)])  # fmt: skip
@example(steps=[(set(range(0, 20)), "ci:a", False), (set(), "ci:a", True), (set(range(20, 25)), "ci:b", False)])
@given(steps=STEPS)
def test_after_any_sequence_of_publications_the_parts_are_one_derivation_of_the_whole(steps):
    """Random runs as random partitions (republished ones, a new GPU, a faster sentinel that moves a ceiling);
    after each, the incremental folder's sidecar, ranking and counts are the whole derivation's, and its files
    are those of a fresh folder."""
    runs = pool()[0]
    with tempfile.TemporaryDirectory() as tmp:
        store = CatalogueStore.open(f"sqlite:///{tmp}/catalogue.sqlite")
        published: dict[str, set[int]] = {}
        for number, (chosen, partition, again) in enumerate(steps):
            published[partition] = (published.get(partition, set()) if again else set()) | chosen
            publish(store, [runs[i] for i in sorted(published[partition])], partition, number)
            done = update_efficiency(store, Path(tmp) / "nightly", low_threshold=LOW)
            assert done.warnings == []
            _same_as_one_derivation(store, Path(tmp) / "nightly", done)
        update_efficiency(store, Path(tmp) / "fresh", low_threshold=LOW)
        assert _files(Path(tmp) / "nightly") == _files(Path(tmp) / "fresh")
        store.close()


def _night(store: CatalogueStore, chosen, partition: str, number: int) -> None:
    runs = pool()[0]
    publish(store, [runs[i] for i in sorted(chosen)], partition, number)


def test_a_night_derives_only_its_publication_and_a_night_of_nothing_derives_nothing(tmp_path):
    with CatalogueStore.open(f"sqlite:///{tmp_path}/catalogue.sqlite") as store:
        _night(store, set(range(0, 30)) - SECOND_SENTINEL, "ci:a", 0)
        _night(store, set(range(30, 50)) - SECOND_SENTINEL, "ci:b", 1)
        update_efficiency(store, tmp_path / "out", low_threshold=LOW)
        _night(store, set(range(50, 60)) - SECOND_SENTINEL, "sweep:h100", 2)
        done = update_efficiency(store, tmp_path / "out", low_threshold=LOW)
        assert (done.written, done.kept, done.why) == ([3], [1, 2], {})
        every = {t for e in json.loads((tmp_path / "out" / PARTS_LIST).read_text())["parts"].values() for t in e["templates"]}  # fmt: skip
        assert 0 < len(done.templates_ranked) < len(every)  # the night's run templates only
        assert "1 of 3 parts derived (1 new), 2 kept" in done.recomputed()
        _same_as_one_derivation(store, tmp_path / "out", done)
        before = (tmp_path / "out" / SIDECAR_NAME).stat().st_mtime_ns
        assert (tmp_path / "out" / SIDECAR_NAME).stat().st_mode & 0o777 == 0o644  # readable where it is placed
        nothing = update_efficiency(store, tmp_path / "out", low_threshold=LOW)
        assert (nothing.written, nothing.templates_ranked) == ([], [])
        assert (tmp_path / "out" / SIDECAR_NAME).stat().st_mtime_ns == before  # not even rewritten


def test_a_faster_sentinel_derives_the_parts_of_its_host_again(tmp_path):
    runs = pool()[0]
    with CatalogueStore.open(f"sqlite:///{tmp_path}/catalogue.sqlite") as store:
        _night(store, set(range(len(runs))) - SECOND_SENTINEL, "ci:a", 0)
        update_efficiency(store, tmp_path / "out", low_threshold=LOW)
        _night(store, SECOND_SENTINEL, "sweep:h100", 1)
        done = update_efficiency(store, tmp_path / "out", low_threshold=LOW)
        assert done.why == {1: "the measured ceilings of its environments moved"}
        _same_as_one_derivation(store, tmp_path / "out", done)


def test_a_run_whose_workload_arrives_later_is_derived_again_then(tmp_path):
    runs, others = pool()
    run = runs[0]
    workload = run["spec"]["workloadDigest"]
    with CatalogueStore.open(f"sqlite:///{tmp_path}/catalogue.sqlite") as store:
        store.publish([run], partition="early", source=None, report=None)  # its records not yet published
        first = update_efficiency(store, tmp_path / "out", low_threshold=LOW)
        assert first.counts == {"no workload": 1}
        store.publish([others[workload]], partition="late", source=None, report=None)
        done = update_efficiency(store, tmp_path / "out", low_threshold=LOW)
        assert done.why == {1: "1 records its runs refer to arrived"}
        _same_as_one_derivation(store, tmp_path / "out", done)


@pytest.mark.parametrize(
    "damage", ["flip a byte", "delete a part", "delete the list", "garble the list", "a wrong type", "a bad candidate"]
)
def test_a_damaged_part_or_list_is_derived_again_with_a_warning(tmp_path, damage):
    with CatalogueStore.open(f"sqlite:///{tmp_path}/catalogue.sqlite") as store:
        _night(store, set(range(0, 30)), "ci:a", 0)
        _night(store, set(range(30, 60)), "ci:b", 1)
        out = tmp_path / "out"
        update_efficiency(store, out, low_threshold=LOW)
        part = sorted((out / PARTS_DIR).iterdir())[1]
        if damage == "flip a byte":
            data = bytearray(part.read_bytes())
            data[len(data) // 2] ^= 0x01
            part.write_bytes(bytes(data))
        elif damage == "delete a part":
            part.unlink()
        elif damage == "delete the list":
            (out / PARTS_LIST).unlink()
        elif damage == "garble the list":
            (out / PARTS_LIST).write_text('{"format": 1, "parts": {')
        else:
            listed = json.loads((out / PARTS_LIST).read_text())
            if damage == "a wrong type":
                listed["parts"]["2"]["ceilings"] = {"x|y": "fast"}
            else:
                next(iter(listed["ranking"].values())).append({"key": [], "rank": 3})
            (out / PARTS_LIST).write_text(json.dumps(listed))
        done = update_efficiency(store, out, low_threshold=LOW)
        assert len(done.warnings) == 1
        whole = damage not in ("flip a byte", "delete a part")
        assert done.written == ([1, 2] if whole else [2])
        assert ("every part derived again" if whole else "efficiency part 2") in done.warnings[0]
        _same_as_one_derivation(store, out, done)
        assert update_efficiency(store, out, low_threshold=LOW).warnings == []


def test_another_threshold_derives_every_part_again(tmp_path):
    with CatalogueStore.open(f"sqlite:///{tmp_path}/catalogue.sqlite") as store:
        _night(store, set(range(0, 30)), "ci:a", 0)
        update_efficiency(store, tmp_path / "out", low_threshold=LOW)
        done = update_efficiency(store, tmp_path / "out", low_threshold=0.9)
        assert done.full == "efficiency.parts.json made with another threshold"
        assert json.loads((tmp_path / "out" / PARTS_LIST).read_text())["lowThreshold"] == 0.9


def test_a_rebuild_derives_every_part_again_with_the_same_bytes(tmp_path):
    with CatalogueStore.open(f"sqlite:///{tmp_path}/catalogue.sqlite") as store:
        _night(store, set(range(0, 30)), "ci:a", 0)
        _night(store, set(range(30, 60)), "ci:b", 1)
        update_efficiency(store, tmp_path / "out", low_threshold=LOW)
        before = _files(tmp_path / "out")
        done = update_efficiency(store, tmp_path / "out", low_threshold=LOW, rebuild=True)
        assert (done.written, done.full, done.warnings) == ([1, 2], "a rebuild was asked for", [])
        assert _files(tmp_path / "out") == before


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.text("0123456789abcdef", min_size=1, max_size=4), st.integers(0, 40), max_size=30),
    st.data(),
)
def test_a_night_s_lines_are_put_in_their_places_in_the_sorted_sidecar(lines, data):
    """The merge of a few new parts into the previous sidecar (by bisecting its byte offsets) gives the lines of
    one sorted merge: new keys before the first, after the last and between neighbours, lines of any length."""

    def line(key: str, pad: int) -> bytes:
        return (json.dumps({"pad": "x" * pad, "run": key}) + "\n").encode()

    keys = sorted(lines)
    new = set(data.draw(st.lists(st.sampled_from(keys), unique=True)) if keys else [])
    previous = io.BytesIO(b'{"kind": "header"}\n' + b"".join(line(k, lines[k]) for k in keys if k not in new))
    put = [(k, line(k, lines[k])) for k in keys if k in new]
    assert b"".join(_inserted(previous, put)) == b"".join(line(k, lines[k]) for k in keys)
