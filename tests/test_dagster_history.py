"""The history path through Dagster, in process: one partition, all partitions, re-materialization,
and a corrupted record stopped by the blocking checks before publication."""

from __future__ import annotations

import pytest
from dagster import DagsterInstance, materialize
from dagster_support import HISTORY_PARTITIONS, LocalReleases, build_history_sdist

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.defs import assets
from kernelindex_pipeline.defs.partitions import GPU_DIMENSION, VERSION_DIMENSION, benchmark_partition_key
from kernelindex_pipeline.defs.resources import BenchmarkRunnerResource, CatalogueResource
from kernelindex_pipeline.liger import partition as liger_partition

CHAIN = [assets.benchmark_csv, assets.benchmark_rows, assets.kernelindex_records, assets.catalogue_publication]


@pytest.fixture
def instance():
    with DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions(GPU_DIMENSION, sorted({gpu for gpu, _ in HISTORY_PARTITIONS}))
        instance.add_dynamic_partitions(VERSION_DIMENSION, sorted({v for _, v in HISTORY_PARTITIONS}))
        yield instance


@pytest.fixture
def resources(tmp_path, sqlite_url):
    sdist = build_history_sdist(tmp_path)
    return {
        "catalogue": CatalogueResource(url=sqlite_url),
        "releases": LocalReleases(sdist_path=str(sdist)),
        "runner": BenchmarkRunnerResource(work_root=str(tmp_path / "sweeps")),
    }


def _materialize(instance, resources, gpu, version, **kwargs):
    return materialize(CHAIN, partition_key=benchmark_partition_key(gpu, version), instance=instance, resources=resources, **kwargs)


def _publication(result) -> dict:
    (event,) = result.asset_materializations_for_node("catalogue_publication")
    return {key: value.value for key, value in event.metadata.items()}


def test_one_partition_publishes_its_rows(instance, resources, sqlite_url):
    result = _materialize(instance, resources, "nvidia-h100-80gb-hbm3", "0.5.0")
    assert result.success
    records = result.output_for_node("kernelindex_records")
    report = records.report.to_dict()
    # Full profile (the default): 6 speed rows of rms_norm and its memory row become runs; the uncurated
    # kernel is skipped by reason.
    assert (report["profile"], report["rowsRead"], report["runs"], report["memoryRuns"]) == ("full", 8, 7, 1)
    assert report["skipped"]["memoryRows"] == 0 and report["skipped"]["uncuratedKernels"] == {"not_a_curated_kernel": 1}
    evaluations = result.get_asset_check_evaluations()
    # Partitioned checks: each evaluation belongs to this partition only.
    assert {evaluation.partition for evaluation in evaluations} == {"nvidia-h100-80gb-hbm3|0.5.0"}
    checks = {evaluation.check_name: evaluation.passed for evaluation in evaluations}
    assert checks == {"sweep_scripts_succeeded": True, "records_schema_valid": True, "record_digests_recompute": True, "run_references_resolve": True, "rows_conserved": True}
    publication = _publication(result)
    assert publication["inserted"] == len(records.manifests) and publication["already_present"] == 0
    store = CatalogueStore.open(sqlite_url)
    try:
        assert store.counts_by_kind()["BenchmarkRun"] == 7
    finally:
        store.close()


def test_rematerializing_a_partition_inserts_nothing(instance, resources, sqlite_url):
    first = _publication(_materialize(instance, resources, "nvidia-h100-80gb-hbm3", "0.5.0"))
    store = CatalogueStore.open(sqlite_url)
    before = sorted(store.manifests(), key=lambda m: m["metadata"]["name"])
    store.close()
    second = _publication(_materialize(instance, resources, "nvidia-h100-80gb-hbm3", "0.5.0"))
    assert second["inserted"] == 0 and second["already_present"] == first["inserted"]
    assert second["summary"].startswith("0 new,")
    store = CatalogueStore.open(sqlite_url)
    assert sorted(store.manifests(), key=lambda m: m["metadata"]["name"]) == before
    store.close()


def test_all_history_partitions(instance, resources, sqlite_url):
    runs = 0
    for gpu, version in sorted(HISTORY_PARTITIONS):
        result = _materialize(instance, resources, gpu, version)
        assert result.success
        runs += result.output_for_node("kernelindex_records").report.runs
    store = CatalogueStore.open(sqlite_url)
    try:
        counts = store.counts_by_kind()
    finally:
        store.close()
    # 18 speed rows and 3 memory rows (full profile, the default) become runs.
    assert runs == 21 and counts["BenchmarkRun"] == 21
    # Two GPUs share one OperationSpec and the two protocols (speed and peak memory); each GPU has its own environment.
    assert counts["OperationSpec"] == 1 and counts["ExecutionEnvironment"] == 2 and counts["BenchmarkProtocol"] == 2


def test_a_corrupted_record_is_stopped_before_publication(instance, resources, sqlite_url, monkeypatch):
    real_build = liger_partition.build_records

    def corrupting_build(parsed, partition_csv, **kwargs):
        result = real_build(parsed, partition_csv, **kwargs)
        run_digest = next(d for d, m in result.manifests.items() if m["kind"] == "BenchmarkRun" and "timing" in m["spec"])
        result.manifests[run_digest]["spec"]["timing"]["latencyNs"]["median"] = -1  # invalid, and no longer its digest
        return result

    monkeypatch.setattr(liger_partition, "build_records", corrupting_build)
    result = _materialize(instance, resources, "nvidia-h100-80gb-hbm3", "0.5.0", raise_on_error=False)
    checks = {evaluation.check_name: evaluation.passed for evaluation in result.get_asset_check_evaluations()}
    assert checks["records_schema_valid"] is False and checks["record_digests_recompute"] is False
    assert not result.asset_materializations_for_node("catalogue_publication")
    store = CatalogueStore.open(sqlite_url)
    try:
        assert sum(store.counts_by_kind().values()) == 0
    finally:
        store.close()
