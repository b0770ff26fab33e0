"""The run table (catalogue/run_table.py): detection from it is detection from the manifests, after any
sequence of publications, and a table that is damaged, missing or another catalogue's is read again."""

from __future__ import annotations

import copy
import gzip
import json
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.catalogue.run_table import LIST_NAME, RunTable, RunTableError, run_table_beside
from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.detection.document import regressions_json
from kernelindex_pipeline.detection.run_facts import own_facts_of
from kernelindex_pipeline.detection.settings import DetectionSettings
from kernelindex_pipeline.liger.attribution import detect_and_attribute
from kernelindex_pipeline.liger.runs import CODE_REF_LABEL
from tests.support.ci_slice import CI_SLICE
from tests.support.factories import detection_run

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _detected(store: CatalogueStore, table: RunTable | None, *, by_rows: bool = False) -> str:
    """regressions.json and the table of the detection from the run table (or the manifests, None): from its
    columns, or `by_rows` from its rows one by one (the path of an adapter that does not say `completes_from`)."""
    runs = store.manifests() if table is None else table.facts(store)
    if by_rows:
        runs = runs._replace(columns=None)
    return _text(detect_and_attribute(runs, DetectionSettings(), None, marks=store.acknowledgements())[0])


def _text(report) -> str:
    return json.dumps(regressions_json(report), sort_keys=True, default=str) + "\n" + report.markdown()


def _own_facts_in_catalogue_order(store: CatalogueStore) -> list:
    return [own_facts_of(run) for run in store.manifests(kinds=["BenchmarkRun"])]


@pytest.mark.slow
def test_detection_from_the_run_table_is_detection_from_the_manifests_on_real_ci_runs(tmp_path):
    """The ten H100 CI runs of the slice, each a publication; every second one's runs labelled with their
    commit, as a CI part of a catalogue is (the adapter's code-ref path), and one file republished."""
    url = f"sqlite:///{tmp_path}/catalogue.sqlite"
    with CatalogueStore.open(url) as store:
        for number, packed in enumerate(sorted(CI_SLICE.glob("*.jsonl.gz"))):
            runs = [json.loads(line) for line in gzip.decompress(packed.read_bytes()).splitlines()]
            if number % 2:
                for run in runs:
                    run["metadata"]["labels"][CODE_REF_LABEL] = packed.name.split(".")[0].split("-")[0]
            store.publish(runs, partition=f"ci:{packed.name}", source=None, report=None)
            if number == 3:
                store.publish(runs, partition=f"ci:{packed.name}", source=None, report=None)
        table = RunTable(tmp_path / "run-table")
        done = table.update(store)
        assert (len(done.written), done.kept, done.warnings) == (10, [], [])
        assert list(table.facts(store).runs) == _own_facts_in_catalogue_order(store)
        assert _detected(store, table) == _detected(store, table, by_rows=True) == _detected(store, None)


def _run(gpu: str, series: int, night: int, value: float, *, source: str = "liger-kernel-bench") -> dict:
    run = detection_run("rms_norm", "liger", f"n{series}", T0 + timedelta(days=night), value)
    if gpu != "h100":
        run = json.loads(json.dumps(run).replace("nvidia-h100-80gb-hbm3", gpu))
    run["spec"]["sourceNative"]["source"] = source
    return run


@st.composite
def _publications(draw):
    """Nights of runs on one or two GPUs (a step in one series), some republished, one of a source no adapter
    reads, one failed run; each night a partition."""
    nights = draw(st.integers(8, 14))
    step_at = draw(st.integers(3, nights - 1))
    new_gpu_at = draw(st.integers(1, nights))
    plan = []
    for night in range(nights):
        runs = []
        for gpu in ["h100"] + (["nvidia-b200"] if night >= new_gpu_at else []):
            for series in range(3):
                slower = 1.3 if series == 0 and night >= step_at else 1.0
                runs.append(_run(gpu, series, night, 1e6 * slower * (1 + 0.001 * ((night * 7 + series) % 5))))
        if draw(st.booleans()):
            runs.append(_run("h100", 9, night, 5e5, source="someone-else"))
        if night == 2:
            failed = copy.deepcopy(runs[0])
            failed["spec"]["status"] = "failed"
            failed["metadata"]["name"] += "-failed"
            failed["spec"]["sourceNative"]["externalId"] += "-failed"
            runs.append(failed)
        plan.append((f"night-{night}", runs))
        if draw(st.integers(0, 3)) == 0:
            plan.append(draw(st.sampled_from(plan)))  # a partition published again (nothing new, or a part)
    return plan


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_publications())
def test_after_any_sequence_of_publications_the_incremental_table_is_a_fresh_one(plan):
    """Updated after each publication, the table gives the runs a fresh table gives and detection the same
    report as from the manifests: a new GPU, republished partitions and unusable runs included."""
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/catalogue.sqlite"
        nightly = RunTable(Path(tmp) / "nightly")
        with CatalogueStore.open(url) as store:
            for partition, runs in plan:
                store.publish(runs, partition=partition, source=None, report=None)
                done = nightly.update(store)
                assert done.warnings == [] and done.removed == []
                assert len(done.written) <= 1  # only the publication just made, when it brought anything
            fresh = RunTable(Path(tmp) / "fresh")
            fresh.update(store)
            assert list(nightly.facts(store).runs) == list(fresh.facts(store).runs)
            assert list(nightly.facts(store).runs) == _own_facts_in_catalogue_order(store)
            assert _detected(store, nightly) == _detected(store, nightly, by_rows=True) == _detected(store, None)


def _catalogue(tmp_path: Path, nights: int = 10) -> CatalogueStore:
    store = CatalogueStore.open(f"sqlite:///{tmp_path}/catalogue.sqlite")
    for night in range(nights):
        runs = [_run("h100", s, night, 1e6 * (1.3 if s == 0 and night >= 6 else 1.0)) for s in range(3)]
        store.publish(runs, partition=f"night-{night}", source=None, report=None)
    return store


def test_an_unchanged_catalogue_reads_no_manifest_of_a_run(tmp_path, monkeypatch):
    with _catalogue(tmp_path) as store:
        table = RunTable(tmp_path / "run-table")
        table.update(store)
        read = []
        original = store.records
        monkeypatch.setattr(store, "records", lambda *a, **k: read.append((a, k)) or original(*a, **k))
        done = table.update(store)
        assert (done.written, len(done.kept), done.rows_written) == ([], 10, 0)
        assert read == []


@pytest.mark.parametrize(
    "damage", ["flip a byte", "delete a file", "delete the list", "garble the list", "a wrong type"]
)
def test_a_damaged_or_missing_table_is_read_again_with_a_warning(tmp_path, damage):
    with _catalogue(tmp_path) as store:
        table = RunTable(tmp_path / "run-table")
        table.update(store)
        expected = list(table.facts(store).runs)
        segment = sorted(table.path.glob("runs-*.parquet"))[4]
        if damage == "flip a byte":
            data = bytearray(segment.read_bytes())
            data[len(data) // 2] ^= 0xFF
            segment.write_bytes(bytes(data))
        elif damage == "delete a file":
            segment.unlink()
        elif damage == "delete the list":
            (table.path / LIST_NAME).unlink()
        elif damage == "garble the list":
            (table.path / LIST_NAME).write_text('{"format": 1, "publications": [')
        else:
            listed = json.loads((table.path / LIST_NAME).read_text())
            listed["publications"]["5"]["file"] = ["runs-000000005.parquet"]
            (table.path / LIST_NAME).write_text(json.dumps(listed))
        done = RunTable(table.path).update(store)
        assert len(done.warnings) == 1
        whole = damage not in ("flip a byte", "delete a file")
        assert len(done.written) == (10 if whole else 1)
        assert ("every publication read again" if whole else "publication 5") in done.warnings[0]
        assert list(RunTable(table.path).facts(store).runs) == expected
        assert RunTable(table.path).update(store).warnings == []


def test_a_table_of_another_catalogue_is_read_again(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    table = RunTable(tmp_path / "run-table")
    with _catalogue(tmp_path / "a", nights=4) as store:
        table.update(store)
    with _catalogue(tmp_path / "b", nights=6) as store:
        done = table.update(store)
        assert len(done.written) == 6 and "another catalogue" in done.warnings[0]
        assert list(table.facts(store).runs) == _own_facts_in_catalogue_order(store)


def test_a_table_whose_list_cannot_be_read_is_refused_until_updated(tmp_path):
    with _catalogue(tmp_path, nights=2) as store:
        table = RunTable(tmp_path / "run-table")
        table.update(store)
        (table.path / LIST_NAME).write_text("[]")
        with pytest.raises(RunTableError, match="another format"):
            table.facts(store)


def test_the_table_of_an_sqlite_catalogue_is_beside_its_file(tmp_path):
    with CatalogueStore.open(f"sqlite:///{tmp_path}/x.sqlite") as store:
        assert run_table_beside(store) == tmp_path / "x.sqlite.run-table"


def test_a_detection_whose_inputs_are_all_unchanged_keeps_the_previous_result_whole(tmp_path):
    """From a run table, with `previous`: the same runs, records, settings and marks give the kept result (the
    same report); a new publication, other settings, a new acknowledgement or a file not ours detect again."""
    previous = tmp_path / "last-result.pickle"
    with _catalogue(tmp_path) as store:
        table = RunTable(tmp_path / "run-table")

        def detect(settings=None, marks=()):
            table.update(store)
            runs = table.facts(store)
            report, _ = detect_and_attribute(
                runs, settings or DetectionSettings(), None, marks=list(marks), previous=previous
            )
            return report, _text(report)

        first, first_text = detect()
        assert not first.judgements.kept_whole and first.changes
        again, again_text = detect()
        assert again.judgements.kept_whole and again_text == first_text
        assert "the previous result kept whole" in again.judgements.line()
        assert not detect(DetectionSettings(alpha=0.01))[0].judgements.kept_whole
        mark = {"change_id": "x" * 16, "status": "expected", "fixed_in": "", "note": "", "by": "me", "at": "2026-01-01"}
        assert not detect(marks=[mark])[0].judgements.kept_whole
        store.publish([_run("h100", 0, 11, 1.3e6)], partition="night-11", source=None, report=None)
        newer, newer_text = detect()
        assert not newer.judgements.kept_whole and newer_text == _detected(store, None)
        previous.write_bytes(b"not ours\n")
        assert not detect()[0].judgements.kept_whole


def test_a_rebuild_writes_every_file_again_with_the_same_bytes(tmp_path):
    with _catalogue(tmp_path, nights=3) as store:
        table = RunTable(tmp_path / "run-table")
        table.update(store)
        before = {p.name: p.read_bytes() for p in table.path.iterdir()}
        done = table.update(store, rebuild=True)
        assert (len(done.written), done.warnings) == (3, [])
        assert {p.name: p.read_bytes() for p in table.path.iterdir()} == before


def test_a_table_its_caller_made_before_and_that_is_gone_is_read_again_with_a_warning(tmp_path):
    with _catalogue(tmp_path, nights=2) as store:
        done = RunTable(tmp_path / "never-made").update(store, made_before=True)
        assert len(done.written) == 2 and done.warnings == [
            f"run table {tmp_path / 'never-made'}: gone (its caller made it before); every publication read again "
            "from the catalogue"
        ]
        assert RunTable(tmp_path / "first").update(store).warnings == []  # a first table: nothing to warn of


def test_an_adapter_whose_completion_sets_a_field_it_does_not_name_is_refused(tmp_path):
    """Completed once per distinct combination of its `completes_from` fields, an adapter that changes another
    field would give every run of the combination the first run's value: refused, naming the field."""
    from kernelindex_pipeline.detection.detect import detect_in_run_table
    from kernelindex_pipeline.liger.run_facts import LigerRunFacts

    class ScriptChanging(LigerRunFacts):
        def complete(self, facts):
            return super().complete(facts)._replace(script="another")

    with _catalogue(tmp_path, nights=4) as store:
        table = RunTable(tmp_path / "run-table")
        table.update(store)
        with pytest.raises(TypeError, match="script"):
            detect_in_run_table(table.facts(store), DetectionSettings(), {"liger-kernel-bench": ScriptChanging()})
