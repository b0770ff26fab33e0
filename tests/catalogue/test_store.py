"""The catalogue store on SQLite and PostgreSQL: idempotent publication, run identity, atomicity."""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
from collections import Counter

import pytest
from sqlalchemy import select

from kernelindex_pipeline.catalogue import store as store_module
from kernelindex_pipeline.catalogue.store import CatalogueError, CatalogueStore, PublishResult
from kernelindex_pipeline.records.canonical import canonical_json, digest_of
from kernelindex_pipeline.records.schema import KINDS

WAIT_LIMIT_S = 120  # only a guard against a hang; nothing asserts on durations

CONTENT_TABLES = ("objects", "runs", "source_snapshots", "import_reports")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalogue_url(request) -> str:
    return request.getfixturevalue(f"{request.param}_url")


@pytest.fixture
def store(catalogue_url):
    with CatalogueStore.open(catalogue_url) as opened:
        yield opened


def table_rows(store: CatalogueStore) -> dict[str, list[tuple]]:
    """Every row of the content tables, sorted, for before/after comparisons."""
    with store.engine.connect() as conn:
        return {
            name: sorted(tuple(row) for row in conn.execute(select(store_module.metadata.tables[name])))
            for name in CONTENT_TABLES
        }


SNAPSHOT = {
    "locator": "pypi:liger-kernel==0.8.5#benchmark/data/all_benchmark_data.csv",
    "resolvedVersion": "0.8.5",
    "sha256": "ab" * 32,
    "sizeBytes": 1234,
    "fetchedAt": "2026-11-29T00:00:00Z",
    "parserVersion": "1",
}
REPORT = {"rowsRead": 3, "speedRows": 3, "runs": 3, "issues": []}


def test_publishing_twice_leaves_the_same_rows_and_says_nothing_new(store, catalogue_records, synthetic_runs):
    records = catalogue_records | synthetic_runs(300)
    first = store.publish(records, partition="nvidia-a100-sxm4-80gb|0.6.1", source=SNAPSHOT, report=REPORT)
    rows_after_first = table_rows(store)

    second = store.publish(records, partition="nvidia-a100-sxm4-80gb|0.6.1", source=SNAPSHOT, report=REPORT)

    assert table_rows(store) == rows_after_first
    assert (first.new, first.already_present) == (len(records), 0)
    assert first.new_by_kind == dict(Counter(m["kind"] for m in records.values()))
    assert (second.new, second.already_present, second.new_by_kind) == (0, len(records), {})
    assert second.summary() == f"0 new, {len(records)} already present"
    assert len(rows_after_first["objects"]) == len(records)
    assert len(rows_after_first["runs"]) == sum(m["kind"] == "BenchmarkRun" for m in records.values())
    assert len(rows_after_first["source_snapshots"]) == len(rows_after_first["import_reports"]) == 1
    log = store.publications()
    assert [(p["new"], p["alreadyPresent"]) for p in log] == [(len(records), 0), (0, len(records))]
    assert all(p["finishedAt"] >= p["startedAt"] for p in log)
    assert log[0]["snapshot"] == SNAPSHOT and log[0]["report"] == REPORT


def test_summary_separates_thousands_with_a_space():
    assert PublishResult(new=0, already_present=1649).summary() == "0 new, 1 649 already present"
    assert PublishResult(new=1234567, already_present=12).summary() == "1 234 567 new, 12 already present"


def test_manifests_come_back_canonical_in_kinds_then_name_then_digest_order(store, catalogue_records, synthetic_runs):
    records = catalogue_records | synthetic_runs(40)
    # Publish in reverse order: the store must not depend on the order it was given.
    store.publish(dict(reversed(list(records.items()))), partition="p", source=None, report=None)

    stored = list(store.manifests())

    expected_order = sorted(records, key=lambda d: (KINDS.index(records[d]["kind"]), records[d]["metadata"]["name"], d))
    assert [digest_of(m) for m in stored] == expected_order
    assert [canonical_json(m) for m in stored] == [canonical_json(records[d]) for d in expected_order]
    runs_only = list(store.manifests(kinds=["BenchmarkRun"]))
    assert {digest_of(m) for m in runs_only} == {d for d, m in records.items() if m["kind"] == "BenchmarkRun"}
    assert store.get(expected_order[0]) == records[expected_order[0]]
    assert store.get("sha256:" + "0" * 64) is None


def test_names_are_ordered_by_code_point_on_every_database(store, synthetic_runs):
    """The database sorts while streaming: PostgreSQL's locale collation would put 'alpha' before 'Zeta'."""
    runs = synthetic_runs(7)
    for run, name in zip(runs.values(), ["Zeta", "alpha", "\u00e9clair", "a-b", "a_b", "a1", "Alpha"], strict=True):
        run["metadata"]["name"] = name
    store.publish(runs, partition="p", source=None, report=None)
    names = [m["metadata"]["name"] for m in store.manifests(kinds=["BenchmarkRun"])]
    assert names == sorted(names) == ["Alpha", "Zeta", "a-b", "a1", "a_b", "alpha", "\u00e9clair"]


def test_a_list_of_manifests_is_published_under_the_digests_it_hashes_to(store, catalogue_records):
    result = store.publish(list(catalogue_records.values()), partition="p")

    # The fixture's digests come from the reference implementation, not from this code base.
    assert store.present_digests(list(catalogue_records) + ["sha256:" + "f" * 64]) == set(catalogue_records)
    assert result.new == len(catalogue_records)
    counts = store.counts_by_kind()
    assert list(counts) == list(KINDS)
    assert counts == {kind: sum(m["kind"] == kind for m in catalogue_records.values()) for kind in KINDS}


def test_a_second_digest_for_a_published_external_id_is_a_conflict_and_the_first_stays(store, catalogue_records):
    run_digest, run = next((d, m) for d, m in catalogue_records.items() if m["kind"] == "BenchmarkRun")
    store.publish({run_digest: run}, partition="p")
    remeasured = json.loads(json.dumps(run))
    remeasured["spec"]["timing"]["latencyNs"]["median"] += 1
    remeasured_digest = digest_of(remeasured)

    result = store.publish({remeasured_digest: remeasured}, partition="p")

    native = run["spec"]["sourceNative"]
    assert (result.new, result.already_present) == (0, 0)
    assert [(c.source, c.external_id, c.kept_digest, c.rejected_digest) for c in result.conflicts] == [
        (native["source"], native["externalId"], run_digest, remeasured_digest)
    ]
    assert "1 conflict" in result.summary()
    assert store.present_digests([run_digest, remeasured_digest]) == {run_digest}
    assert store.publications()[-1]["conflicts"] == [c.to_dict() for c in result.conflicts]


def test_within_one_batch_the_first_run_of_an_external_id_wins(store, catalogue_records):
    run_digest, run = next((d, m) for d, m in catalogue_records.items() if m["kind"] == "BenchmarkRun")
    twin = json.loads(json.dumps(run))
    twin["spec"]["status"] = "failed"
    twin_digest = digest_of(twin)

    result = store.publish({run_digest: run, twin_digest: twin}, partition="p")

    assert result.new == 1
    assert [(c.kept_digest, c.rejected_digest) for c in result.conflicts] == [(run_digest, twin_digest)]
    assert store.present_digests([run_digest, twin_digest]) == {run_digest}


def test_a_failure_inside_the_transaction_writes_nothing(store, catalogue_records, synthetic_runs, monkeypatch):
    store.publish(catalogue_records, partition="before")
    before = table_rows(store)
    publications_before = store.publications()
    real_insert = CatalogueStore._insert_absent

    def insert_then_fail_on_runs(self, conn, table, values):
        real_insert(self, conn, table, values)  # the objects really are inserted first...
        if table.name == "runs":
            raise OSError("disk full (simulated)")  # ...then the publication fails

    monkeypatch.setattr(CatalogueStore, "_insert_absent", insert_then_fail_on_runs)
    with pytest.raises(CatalogueError, match="disk full"):
        store.publish(synthetic_runs(50), partition="after", source=SNAPSHOT, report=REPORT)

    assert table_rows(store) == before
    assert store.publications() == publications_before


def test_malformed_input_is_refused_before_anything_is_written(store, catalogue_records):
    records = dict(catalogue_records)
    records["sha256:" + "1" * 64] = {"apiVersion": "kernelindex.dev/v1alpha1", "kind": "BenchmarkRun", "spec": {}}
    with pytest.raises(CatalogueError, match="metadata.name"):
        store.publish(records, partition="p")
    first_digest, first = next(iter(catalogue_records.items()))
    with pytest.raises(CatalogueError, match="sha256:<64 hex>"):
        store.publish({"md5:abc": first}, partition="p")
    assert store.counts_by_kind() == dict.fromkeys(KINDS, 0)
    assert store.publications() == []


def test_the_embedded_catalogue_lives_under_dagster_home(tmp_path, monkeypatch, catalogue_records):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster-home"))
    with CatalogueStore.open() as embedded:
        embedded.publish(catalogue_records, partition="p")
    path = tmp_path / "dagster-home" / "kernelindex-catalogue.sqlite"
    assert path.is_file()
    with CatalogueStore.open(home=tmp_path / "explicit") as explicit:
        assert explicit.counts_by_kind() == dict.fromkeys(KINDS, 0)
    assert (tmp_path / "explicit" / "kernelindex-catalogue.sqlite").is_file()
    # WAL: readers and the one writer do not block each other across processes.
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert raw.execute("SELECT count(*) FROM objects").fetchone()[0] == len(catalogue_records)


def test_an_unsupported_url_is_refused_with_the_forms_that_work():
    with pytest.raises(CatalogueError, match=r"supported are sqlite:///path and postgresql\+psycopg://"):
        CatalogueStore.open("mysql://root:hunter2@localhost/kernelindex")
    with pytest.raises(CatalogueError, match="not a SQLAlchemy URL"):
        CatalogueStore.open("not a url")


class _Heard(logging.Handler):
    """Sets `event` when a log record containing `text` is emitted."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.INFO)
        self.text = text
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.event.set()


def _hold_the_write_lock(path) -> sqlite3.Connection:
    """Another connection holding the write lock of a file still in rollback-journal mode: what a
    second process holds while it switches a fresh catalogue to WAL at the same moment."""
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    return holder


def test_opening_a_fresh_catalogue_waits_for_another_connection_s_lock_instead_of_failing(tmp_path, caplog):
    # SQLite answers "database is locked" at once, without its busy handler, when the switch to WAL
    # (a read lock upgraded) meets another connection's write lock; two publishers opening a fresh
    # catalogue together failed so.
    path = tmp_path / "catalogue.sqlite"
    holder = _hold_the_write_lock(path)
    caplog.set_level(logging.INFO, logger=store_module.__name__)
    heard = _Heard("waiting to switch it to WAL")
    store_module.log.addHandler(heard)
    opened: dict[str, object] = {}

    def open_catalogue() -> None:
        try:
            opened["store"] = CatalogueStore.open(f"sqlite:///{path}")
        except Exception as exc:  # noqa: BLE001 - handed to the test thread
            opened["error"] = exc

    opener = threading.Thread(target=open_catalogue)
    try:
        opener.start()
        # The opener meets the lock (and says so) or, without the retry, fails at once.
        while not heard.event.wait(0.05):
            assert opener.is_alive(), f"the opener stopped without waiting for the lock: {opened}"
        holder.execute("COMMIT")
        opener.join(WAIT_LIMIT_S)
        assert not opener.is_alive(), f"the opener did not finish within {WAIT_LIMIT_S}s after the lock was released"
    finally:
        holder.close()
        store_module.log.removeHandler(heard)
    assert "error" not in opened, opened.get("error")
    with opened["store"] as store, store.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert store.counts_by_kind() == dict.fromkeys(KINDS, 0)


def test_a_lock_never_released_fails_the_open_after_the_busy_timeout_naming_the_catalogue(tmp_path):
    path = tmp_path / "catalogue.sqlite"
    holder = _hold_the_write_lock(path)
    try:
        with pytest.raises(CatalogueError, match=r"cannot open the catalogue at sqlite:///.*catalogue\.sqlite.*locked"):
            CatalogueStore.open(f"sqlite:///{path}", busy_timeout_s=0.2)
    finally:
        holder.close()


def test_acknowledgements_are_kept_and_the_latest_mark_of_a_change_wins(catalogue_url):
    from kernelindex_pipeline.detection.acknowledgements import Acknowledgement, from_rows

    first = Acknowledgement("chg-1", "acknowledged", "looking", "a", "2026-01-01T00:00:00Z")
    other = Acknowledgement("chg-2", "expected", "", "b", "2026-01-02T00:00:00Z")
    with CatalogueStore.open(catalogue_url) as store:
        assert store.acknowledgements() == []
        assert store.acknowledge([first, other]) == 2
    fixed = Acknowledgement("chg-1", "fixed", "", "a", "2026-02-01T00:00:00Z", fixed_in="abc1234")
    with CatalogueStore.open(catalogue_url) as store:  # a store opened again reads them back
        store.acknowledge([fixed])
        assert from_rows(store.acknowledgements()) == {"chg-1": fixed, "chg-2": other}
    with pytest.raises(ValueError, match="needs the commit"):
        Acknowledgement("chg-3", "fixed", "", "a", "2026-02-01T00:00:00Z")


def test_a_refresh_reads_what_each_publication_since_its_last_brought(store, catalogue_records, synthetic_runs):
    runs = synthetic_runs(6)
    first, second = dict(list(runs.items())[:3]), dict(list(runs.items())[3:])
    assert store.newest_publication() == 0 and store.publications_with_records() == {}
    one = store.publish(catalogue_records | first, partition="a", source=None, report=None)
    store.publish(first, partition="a", source=None, report=None)  # a republication that brings nothing
    three = store.publish(second, partition="b", source=None, report=None)

    assert store.newest_publication() == three.publication_id
    assert store.publications_with_records() == {one.publication_id: "a", three.publication_id: "b"}
    assert store.publications_with_records(after=one.publication_id) == {three.publication_id: "b"}
    assert store.publications_with_records(after=three.publication_id) == {}
    assert dict(store.records(publications=[three.publication_id])) == second
    assert {d for d, _ in store.records(publications=[one.publication_id])} == set(catalogue_records | first)
    # the same order as the whole catalogue's, restricted to those publications
    whole = [d for d, _ in store.records()]
    assert [d for d, _ in store.records(publications=[one.publication_id])] == [d for d in whole if d not in second]


def test_runs_are_read_by_external_id_prefix_in_the_catalogue_order(store, catalogue_records, synthetic_runs):
    """`runs_by_external_id`: the runs whose externalId starts with a prefix (a Liger kernel's `<kernel>/`), with
    the publication that first brought each, in the order `records` streams them; nothing else."""
    runs = synthetic_runs(9)
    first, second = dict(list(runs.items())[:5]), dict(list(runs.items())[5:])
    one = store.publish(catalogue_records | first, partition="a", source=None, report=None)
    two = store.publish(second, partition="b", source=None, report=None)
    brought = {d: one.publication_id for d in catalogue_records | first} | {d: two.publication_id for d in second}
    every = catalogue_records | runs
    whole = [d for d, m in store.records() if m["kind"] == "BenchmarkRun"]

    def external_id(digest):
        return every[digest]["spec"]["sourceNative"]["externalId"]

    for prefixes in (["jsd/"], ["jsd/", "megatron_cross_entropy/"], ["jsd/forward/torch/"], ["j"]):
        read = list(store.runs_by_external_id(prefixes))
        expected = [d for d in whole if external_id(d).startswith(tuple(prefixes))]
        assert expected and [d for d, _, _ in read] == expected
        assert all(manifest == every[d] and publication == brought[d] for d, manifest, publication in read)
    assert list(store.runs_by_external_id(["jsd"])) == list(store.runs_by_external_id(["jsd/"]))
    assert list(store.runs_by_external_id(["nothing/"])) == [] == list(store.runs_by_external_id([]))
    # a prefix is a prefix, not a pattern: no LIKE wildcards
    assert list(store.runs_by_external_id(["%"])) == [] == list(store.runs_by_external_id(["_sd/"]))
    # thousands of run templates (a sweep night's): read in several statements, in the same order, each run once
    many = [f"absent-{i}/" for i in range(2500)] + ["jsd/", "jsd/forward/", "megatron_cross_entropy/"]
    expected = [d for d in whole if external_id(d).startswith(("jsd/", "megatron_cross_entropy/"))]
    assert [d for d, _, _ in store.runs_by_external_id(many)] == expected


def test_a_catalogue_made_before_the_publication_index_gets_it_when_opened_to_write(tmp_path, catalogue_records):
    url = f"sqlite:///{tmp_path}/old.sqlite"
    with CatalogueStore.open(url) as store:
        store.publish(catalogue_records, partition="a", source=None, report=None)
    with sqlite3.connect(tmp_path / "old.sqlite") as conn:
        conn.execute("DROP INDEX ix_objects_first_publication_id")
    with CatalogueStore.open(url, read_only=True) as store:  # a reader adds nothing and still reads
        assert dict(store.records(publications=[1])) == catalogue_records
    with sqlite3.connect(tmp_path / "old.sqlite") as conn:
        assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'ix_objects_first_publication_id'").fetchall()
    CatalogueStore.open(url).close()
    with sqlite3.connect(tmp_path / "old.sqlite") as conn:
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'ix_objects_first_publication_id'").fetchall()
