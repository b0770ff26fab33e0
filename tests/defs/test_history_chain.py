"""The history chain through Dagster, in process: one partition, every partition in ONE run (the
single-run backfill the UI and import-history use), re-materialization, a corrupted record stopped by
the blocking checks before publication, and partitions registered in version order."""

from __future__ import annotations

import json

import pytest
from dagster import AssetKey, DagsterInstance, materialize

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.defs.chain_values import IO_MANAGER_KEY, ChainValuesIOManager
from kernelindex_pipeline.defs.history_chain import HISTORY
from kernelindex_pipeline.defs.import_plan import RANGE_END_TAG, RANGE_START_TAG
from kernelindex_pipeline.defs.partitions import benchmark_partition_key, register_partitions, registered_keys
from kernelindex_pipeline.defs.resources import BenchmarkRunnerResource, CatalogueResource
from kernelindex_pipeline.liger import partition as liger_partition
from tests.support.dagster_support import HISTORY_PARTITIONS, LocalReleases, build_history_sdist

CHAIN = HISTORY.assets
PUBLICATION = AssetKey(["history", "catalogue_publication"])


@pytest.fixture
def instance():
    with DagsterInstance.ephemeral() as instance:
        register_partitions(instance, "history", HISTORY_PARTITIONS)
        yield instance


@pytest.fixture
def resources(tmp_path, sqlite_url):
    sdist = build_history_sdist(tmp_path)
    return {
        "catalogue": CatalogueResource(url=sqlite_url),
        "releases": LocalReleases(sdist_path=str(sdist)),
        "runner": BenchmarkRunnerResource(work_root=str(tmp_path / "sweeps")),
        IO_MANAGER_KEY: ChainValuesIOManager(base_dir=str(tmp_path / "values")),
    }


def _materialize(instance, resources, gpu, version, **kwargs):
    return materialize(
        CHAIN, partition_key=benchmark_partition_key(gpu, version), instance=instance, resources=resources, **kwargs
    )


def _materialize_all(instance, resources, **kwargs):
    keys = registered_keys(instance, "history")
    tags = {RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[-1]}
    return materialize(CHAIN, instance=instance, resources=resources, tags=tags, **kwargs)


def _publication(result) -> dict:
    (event,) = result.asset_materializations_for_node("history__catalogue_publication")
    return {key: value.value for key, value in event.metadata.items()}


def _catalogue(sqlite_url) -> dict:
    with CatalogueStore.open(sqlite_url) as store:
        return store.counts_by_kind()


def test_the_releases_resource_picks_the_reference_profile(instance, resources):
    resources = {
        **resources,
        "releases": LocalReleases(sdist_path=resources["releases"].sdist_path, profile="reference"),
    }
    result = _materialize(instance, resources, "nvidia-h100-80gb-hbm3", "0.5.0")
    assert result.success
    (records,) = result.output_for_node("history__kernelindex_records")["nvidia-h100-80gb-hbm3|0.5.0"]
    report = records.report
    # KernelIndex's own importer: the memory row is skipped as a memory row
    assert (report["profile"], report["runs"], report["skipped"]["memoryRows"]) == ("reference", 6, 1)


def test_one_partition_publishes_its_rows(instance, resources, sqlite_url):
    result = _materialize(instance, resources, "nvidia-h100-80gb-hbm3", "0.5.0")
    assert result.success
    (records,) = result.output_for_node("history__kernelindex_records")["nvidia-h100-80gb-hbm3|0.5.0"]
    report = records.report
    # Full profile (the default): 6 speed rows of rms_norm and its memory row become runs; the uncurated
    # kernel is skipped by reason.
    assert (report["profile"], report["rowsRead"], report["runs"], report["memoryRuns"]) == ("full", 8, 7, 1)
    assert report["skipped"]["memoryRows"] == 0 and report["skipped"]["uncuratedKernels"] == {"not_a_curated_kernel": 1}
    checks = {evaluation.check_name: evaluation.passed for evaluation in result.get_asset_check_evaluations()}
    assert checks == {
        "partitions_registered": True,
        "records_schema_valid": True,
        "record_digests_recompute": True,
        "run_references_resolve": True,
        "rows_conserved": True,
    }
    publication = _publication(result)
    assert publication["inserted"] == len(records.manifests) and publication["already_present"] == 0
    assert publication["content_digests"] == {
        "nvidia-h100-80gb-hbm3|0.5.0": liger_partition.parts_digest(
            result.output_for_node("history__benchmark_csv")["nvidia-h100-80gb-hbm3|0.5.0"]
        )
    }
    assert _catalogue(sqlite_url)["BenchmarkRun"] == 7


def test_every_partition_in_one_run(instance, resources, sqlite_url):
    result = _materialize_all(instance, resources)
    assert result.success
    outputs = result.output_for_node("history__kernelindex_records")
    assert set(outputs) == {benchmark_partition_key(*pair) for pair in HISTORY_PARTITIONS}
    # 18 speed rows and 3 memory rows (full profile, the default) become runs.
    assert sum(r.report["runs"] for results in outputs.values() for r in results) == 21
    counts = _catalogue(sqlite_url)
    assert counts["BenchmarkRun"] == 21
    # Two GPUs share one OperationSpec and the two protocols (speed and peak memory); each GPU has its own environment.
    assert counts["OperationSpec"] == 1 and counts["ExecutionEnvironment"] == 2 and counts["BenchmarkProtocol"] == 2
    # Each partition has its own materialization, and its own stored value for the next step.
    assert instance.get_materialized_partitions(PUBLICATION) == set(outputs)
    again = _materialize(
        instance, resources, "nvidia-a100-sxm4-80gb", "0.6.0", selection=CHAIN[1:]
    )  # reads stored values
    assert again.success and _publication(again)["inserted"] == 0


def test_rematerializing_a_partition_inserts_nothing(instance, resources, sqlite_url):
    first = _publication(_materialize(instance, resources, "nvidia-h100-80gb-hbm3", "0.5.0"))
    with CatalogueStore.open(sqlite_url) as store:
        before = sorted(store.manifests(), key=lambda m: m["metadata"]["name"])
    second = _publication(_materialize(instance, resources, "nvidia-h100-80gb-hbm3", "0.5.0"))
    assert second["inserted"] == 0 and second["already_present"] == first["inserted"]
    with CatalogueStore.open(sqlite_url) as store:
        assert sorted(store.manifests(), key=lambda m: m["metadata"]["name"]) == before


def test_a_corrupted_record_stops_the_runs_publication(instance, resources, sqlite_url, monkeypatch):
    real_build = liger_partition.build_records

    def corrupting_build(parsed, partition_csv, **kwargs):
        result = real_build(parsed, partition_csv, **kwargs)
        if (partition_csv.gpu, partition_csv.liger_version) == ("nvidia-h100-80gb-hbm3", "0.5.0"):
            run_digest = next(
                d for d, m in result.manifests.items() if m["kind"] == "BenchmarkRun" and "timing" in m["spec"]
            )
            result.manifests[run_digest]["spec"]["timing"]["latencyNs"][
                "median"
            ] = -1  # invalid, and no longer its digest
        return result

    monkeypatch.setattr(liger_partition, "build_records", corrupting_build)
    result = _materialize_all(instance, resources, raise_on_error=False)
    checks = {evaluation.check_name: evaluation for evaluation in result.get_asset_check_evaluations()}
    assert not checks["records_schema_valid"].passed and not checks["record_digests_recompute"].passed
    assert checks["rows_conserved"].passed
    assert checks["records_schema_valid"].metadata["partitions_with_problems"].value == ["nvidia-h100-80gb-hbm3|0.5.0"]
    assert not result.asset_materializations_for_node("history__catalogue_publication")
    assert sum(_catalogue(sqlite_url).values()) == 0


def test_partitions_are_registered_once_in_version_order():
    with DagsterInstance.ephemeral() as instance:
        added = register_partitions(instance, "ci", [("b", "0.5.10"), ("a", "0.5.4"), ("b", "0.5.4")])
        assert added == ["a|0.5.4", "b|0.5.4", "b|0.5.10"]
        assert register_partitions(instance, "ci", [("a", "0.5.4"), ("a", "0.6.0")]) == ["a|0.6.0"]
        assert registered_keys(instance, "ci") == ["a|0.5.4", "b|0.5.4", "b|0.5.10", "a|0.6.0"]
        assert registered_keys(instance, "history") == []  # each source has its own partitions


def _latest_metadata(instance, asset_key, partition) -> dict:
    """The metadata of `partition`'s latest materialization of `asset_key`, as the instance stored it."""
    from dagster import AssetRecordsFilter

    (record,) = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=asset_key, asset_partitions=[partition]), limit=1
    ).records
    return {key: value.value for key, value in record.asset_materialization.metadata.items()}


def test_each_partition_of_a_run_carries_its_own_figures(instance, resources, sqlite_url):
    """Issue 21: one run over every partition stores, per partition, that partition's counts, not the run's."""
    result = _materialize_all(instance, resources)
    assert result.success
    keys = registered_keys(instance, "history")
    records_key = AssetKey(["history", "kernelindex_records"])
    published = {key: _latest_metadata(instance, PUBLICATION, key) for key in keys}
    built = {key: _latest_metadata(instance, records_key, key) for key in keys}
    outputs = result.output_for_node("history__kernelindex_records")
    for key in keys:
        (part,) = outputs[key]
        assert built[key]["runs"] == part.report["runs"] and built[key]["rows_read"] == part.report["rowsRead"]
        assert published[key]["runs"] == part.report["runs"]
        assert published[key]["content_digests"] == {
            key: liger_partition.parts_digest(result.output_for_node("history__benchmark_csv")[key])
        }
    # the partitions' own insertions add up to the catalogue (nothing was there before), and differ
    assert sum(meta["inserted"] for meta in published.values()) == sum(_catalogue(sqlite_url).values())
    assert sorted(meta["inserted"] for meta in published.values()) == [7, 8, 18]  # not 33 on each
    # the catalogue's state after the run is the same fact for every partition
    assert len({meta["catalogue_fingerprint"] for meta in published.values()}) == 1


def test_stage_values_are_data_files(instance, resources, tmp_path):
    """What the steps hand each other is CSV, JSON and JSON Lines (no pickle), read back by the next step."""
    result = _materialize(instance, resources, "nvidia-h100-80gb-hbm3", "0.5.0")
    assert result.success
    stored = tmp_path / "values" / "history"
    files = sorted(path.relative_to(stored).as_posix() for path in stored.rglob("*") if path.is_file())
    partition = "nvidia-h100-80gb-hbm3%7C0.5.0"
    assert files == [
        f"benchmark_csv/{partition}/part-000.csv",
        f"benchmark_csv/{partition}/part-000.json",
        f"benchmark_rows/{partition}/parse.json",
        f"kernelindex_records/{partition}/part-000.records.jsonl",
        f"kernelindex_records/{partition}/part-000.report.json",
    ]
    (part,) = result.output_for_node("history__benchmark_csv")["nvidia-h100-80gb-hbm3|0.5.0"]
    assert (stored / "benchmark_csv" / partition / "part-000.csv").read_bytes() == part.csv_bytes
    lines = (stored / "kernelindex_records" / partition / "part-000.records.jsonl").read_text().splitlines()
    assert all(json.loads(line)["apiVersion"] == "kernelindex.dev/v1alpha1" for line in lines)
    report = json.loads((stored / "kernelindex_records" / partition / "part-000.report.json").read_text())
    assert report["runs"] == 7 and report["conserved"]
    # a re-execution of the later steps reads those files (not objects of this process)
    again = _materialize(instance, resources, "nvidia-h100-80gb-hbm3", "0.5.0", selection=CHAIN[1:])
    assert again.success and _publication(again)["inserted"] == 0


def test_a_partition_added_by_hand_that_the_history_lacks_fails_and_publishes_nothing(instance, resources, sqlite_url):
    """Issue 30: 'Add a partition' in the UI accepted a pair the history lacks, and its run succeeded green."""
    register_partitions(instance, "history", {("nvidia-h100-80gb-hbm3", "9.9.9"): None})
    result = _materialize(instance, resources, "nvidia-h100-80gb-hbm3", "9.9.9", raise_on_error=False)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    message = failure.event_specific_data.error.message + str(failure.event_specific_data.user_failure_data)
    assert "'nvidia-h100-80gb-hbm3|9.9.9': not in the history of liger-kernel" in message
    assert "Nothing was published" in message
    assert not result.asset_materializations_for_node("history__catalogue_publication")
    assert sum(_catalogue(sqlite_url).values()) == 0
