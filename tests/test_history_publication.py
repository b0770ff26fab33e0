"""The real 0.8.5 history, every partition built and published twice, into SQLite and PostgreSQL:
the second publication inserts nothing and both catalogues hold exactly the same objects."""

from __future__ import annotations

import pytest

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.liger import partition as liger_partition
from kernelindex_pipeline.liger.release import fetch_release

pytestmark = pytest.mark.network


@pytest.fixture(scope="module")
def history_partitions():
    artifact = fetch_release("0.8.5")
    slices = liger_partition.slice_history(liger_partition.read_history_csv(artifact)[0])
    built = []
    for gpu, version in slices.partitions:
        partition_csv = liger_partition.history_partition_csv(artifact, gpu, version)
        # the reference profile: the counts below are KernelIndex's (CATALOGUE.md)
        result = liger_partition.build_records(
            liger_partition.parse_partition_csv(partition_csv), partition_csv, profile="reference"
        )
        assert result.report.conserved()
        built.append((f"{gpu}|{version}", partition_csv.snapshot, result))
    return built


def _publish_all(url, partitions):
    store = CatalogueStore.open(url)
    try:
        results = [
            store.publish(r.manifests, partition=key, source=snap, report=r.report.to_dict())
            for key, snap, r in partitions
        ]
        return results, list(store.manifests()), store.counts_by_kind()
    finally:
        store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_publishing_the_history_twice_adds_nothing(backend, request, history_partitions):
    url = request.getfixturevalue(f"{backend}_url")
    first, objects, counts = _publish_all(url, history_partitions)
    second, objects_again, _ = _publish_all(url, history_partitions)
    assert sum(r.new for r in second) == 0
    assert sum(r.already_present for r in second) == sum(r.new + r.already_present for r in first)
    assert objects_again == objects
    # CATALOGUE.md: a digest-keyed store keeps 31 OperationSpecs, 237 cases and 63 implementations of 0.8.5.
    assert (
        counts["OperationSpec"],
        counts["WorkloadCase"],
        counts["ImplementationRevision"],
        counts["BenchmarkRun"],
    ) == (31, 237, 63, 1649)


def test_sqlite_and_postgres_hold_the_same_objects(sqlite_url, postgres_url, history_partitions):
    _, from_sqlite, _ = _publish_all(sqlite_url, history_partitions)
    _, from_postgres, _ = _publish_all(postgres_url, history_partitions)
    assert from_sqlite == from_postgres
