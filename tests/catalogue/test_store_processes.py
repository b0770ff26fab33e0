"""The catalogue across real processes: concurrent publishers lose nothing; a publisher killed with
SIGKILL in the middle of its transaction leaves the catalogue exactly as it was, and a re-run completes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from kernelindex_pipeline.catalogue import store as store_module
from kernelindex_pipeline.catalogue.store import CatalogueStore

WAIT_LIMIT_S = 120  # only a guard against a hung child; no test asserts on durations

# Opens the catalogue and publishes a partition once the parent creates the "go" file, so that both
# publishers (and their first open of a fresh catalogue) start together.
PUBLISHER = textwrap.dedent(
    """
    import json, os, sys, time
    from kernelindex_pipeline.catalogue.store import CatalogueStore

    url, records_path, partition, ready_path, go_path = sys.argv[1:6]
    records = json.loads(open(records_path, encoding="utf-8").read())
    open(ready_path, "w").close()
    while not os.path.exists(go_path):
        time.sleep(0.005)
    with CatalogueStore.open(url) as store:
        result = store.publish(records, partition=partition)
    print(json.dumps(result.to_dict()))
    """
)

# Publishes a big partition but stops for good after the third batch of objects has been inserted
# (inside the publication's transaction), after reporting how many objects its transaction sees.
STALLING_PUBLISHER = textwrap.dedent(
    """
    import json, pathlib, sys, time
    from sqlalchemy import event
    from kernelindex_pipeline.catalogue.store import CatalogueStore

    url, records_path, marker_path = sys.argv[1:4]
    records = json.loads(open(records_path, encoding="utf-8").read())
    store = CatalogueStore.open(url)
    object_batches = 0

    @event.listens_for(store.engine, "after_cursor_execute")
    def stall_halfway(conn, cursor, statement, parameters, context, executemany):
        global object_batches
        if not statement.lower().lstrip().startswith("insert into objects"):
            return
        object_batches += 1
        if object_batches == 3:
            cursor.execute("SELECT count(*) FROM objects")
            staged = pathlib.Path(marker_path + ".tmp")
            staged.write_text(str(cursor.fetchone()[0]))
            staged.replace(marker_path)  # the parent sees the marker only once it is complete
            time.sleep(3600)  # the parent kills us here, mid-transaction

    store.publish(records, partition="killed-halfway")
    print("finished without being killed")
    """
)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalogue_url(request) -> str:
    return request.getfixturevalue(f"{request.param}_url")


def content_rows(url: str) -> dict[str, list[tuple]]:
    with CatalogueStore.open(url) as store, store.engine.connect() as conn:
        return {
            name: sorted(tuple(row) for row in conn.execute(select(table)))
            for name, table in store_module.metadata.tables.items()
        }


def wait_for(path: Path, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + WAIT_LIMIT_S
    while not path.exists():
        if process.poll() is not None:
            pytest.fail(f"child exited early ({process.returncode}): {process.stderr.read()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"child did not reach {path.name} within {WAIT_LIMIT_S}s")
        time.sleep(0.01)


def test_two_partitions_published_at_once_from_two_processes_lose_nothing(
    catalogue_url, tmp_path, catalogue_records, synthetic_runs
):
    # Both partitions carry the shared seed objects, and each has runs of its own.
    partitions = {
        "gpu-a|0.8.5": catalogue_records | synthetic_runs(2500, start=0),
        "gpu-b|0.8.5": catalogue_records | synthetic_runs(2500, start=100_000),
    }
    script = tmp_path / "publisher.py"
    script.write_text(PUBLISHER)
    go = tmp_path / "go"
    children = []
    for number, (partition, records) in enumerate(partitions.items()):
        records_path = tmp_path / f"records-{number}.json"
        records_path.write_text(json.dumps(records))
        ready = tmp_path / f"ready-{number}"
        args = [sys.executable, str(script), catalogue_url, str(records_path), partition, str(ready), str(go)]
        children.append((subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True), ready))
    for child, ready in children:
        wait_for(ready, child)
    go.touch()

    results = []
    for child, _ in children:
        out, err = child.communicate(timeout=WAIT_LIMIT_S)
        assert child.returncode == 0, err
        results.append(json.loads(out))

    union = set(partitions["gpu-a|0.8.5"]) | set(partitions["gpu-b|0.8.5"])
    with CatalogueStore.open(catalogue_url) as store:
        assert store.present_digests(union) == union
        assert sum(store.counts_by_kind().values()) == len(union)
        assert len(store.publications()) == 2
    assert sum(result["new"] for result in results) == len(union)
    for result, records in zip(results, partitions.values(), strict=False):
        assert result["new"] + result["alreadyPresent"] == len(records)
        assert result["conflicts"] == []


def test_a_publisher_killed_halfway_leaves_the_catalogue_as_it_was_and_the_rerun_completes(
    catalogue_url, tmp_path, catalogue_records, synthetic_runs
):
    with CatalogueStore.open(catalogue_url) as store:
        store.publish(catalogue_records, partition="earlier")
    before = content_rows(catalogue_url)
    big = synthetic_runs(3000, start=500_000)  # six batches of objects: the stall is after the third
    records_path = tmp_path / "big.json"
    records_path.write_text(json.dumps(big))
    script = tmp_path / "stalling_publisher.py"
    script.write_text(STALLING_PUBLISHER)
    marker = tmp_path / "halfway"

    child = subprocess.Popen(
        [sys.executable, str(script), catalogue_url, str(records_path), str(marker)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(marker, child)
    # While the publisher sits in its open transaction, readers are not blocked and see none of it.
    assert content_rows(catalogue_url) == before
    os.kill(child.pid, signal.SIGKILL)
    child.communicate(timeout=WAIT_LIMIT_S)
    assert child.returncode == -signal.SIGKILL

    seen_inside_transaction = int(marker.read_text())
    assert len(catalogue_records) < seen_inside_transaction < len(catalogue_records) + len(big)
    assert content_rows(catalogue_url) == before

    with CatalogueStore.open(catalogue_url) as store:
        rerun = store.publish(big, partition="killed-halfway")
        assert (rerun.new, rerun.already_present) == (len(big), 0)
        assert store.present_digests(big) == set(big)
        assert [p["partition"] for p in store.publications()] == ["earlier", "killed-halfway"]
