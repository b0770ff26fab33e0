"""Sensors and the schedule, evaluated with Dagster's own test contexts against a real instance."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from dagster import (
    AssetCheckKey,
    AssetCheckSeverity,
    AssetMaterialization,
    SensorResult,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
    instance_for_test,
)

from kernelindex_pipeline.defs.ci_chain import CI, LigerCiResource, liger_ci_sensor
from kernelindex_pipeline.defs.history_chain import HISTORY, liger_history_sensor
from kernelindex_pipeline.defs.partitions import (
    InvalidPartitionValue,
    benchmark_partition_key,
    registered_keys,
    split_partition_key,
)
from kernelindex_pipeline.defs.resources import GpuFleetResource
from kernelindex_pipeline.defs.sweep_chain import GPU_POOL_TAG, nightly_gpu_sweep
from kernelindex_pipeline.liger.partition import history_partition_csv, parts_digest
from tests.support import FIXTURES
from tests.support.dagster_support import HISTORY_PARTITIONS, LocalReleases, build_history_sdist, history_rows

CI_FIXTURES = FIXTURES / "liger-ci"


@pytest.fixture
def instance():
    with instance_for_test() as instance:
        yield instance


def _evaluate(sensor, instance, releases=None, ci=None) -> SensorResult | SkipReason:
    resources = {"releases": releases} if releases is not None else {"ci": ci}
    # As a context manager: whatever the context opens is closed here, not whenever the collector
    # reaches it (see conftest._no_dagster_instance_context_leak).
    with build_sensor_context(instance=instance, resources=resources) as context:
        return sensor(context)


def test_partition_keys_are_validated_and_split_back():
    key = benchmark_partition_key("nvidia-h100-80gb-hbm3", "0.8.0")
    assert key == "nvidia-h100-80gb-hbm3|0.8.0" and split_partition_key(key) == ("nvidia-h100-80gb-hbm3", "0.8.0")
    for gpu in ("NVIDIA H100", "a|b", "a,b", ""):
        with pytest.raises(InvalidPartitionValue, match="gpu partition value"):
            benchmark_partition_key(gpu, "0.8.0")
    with pytest.raises(InvalidPartitionValue, match="GPU|VERSION"):
        split_partition_key("nvidia-h100-80gb-hbm3")


def test_history_sensor_requests_one_run_per_partition_with_content_run_keys(instance, tmp_path):
    releases = LocalReleases(sdist_path=str(build_history_sdist(tmp_path)))
    result = _evaluate(liger_history_sensor, instance, releases)
    # Only the pairs the history has, in version order.
    assert registered_keys(instance, "history") == [
        "nvidia-h100-80gb-hbm3|0.5.0",
        "nvidia-a100-sxm4-80gb|0.6.0",
        "nvidia-h100-80gb-hbm3|0.6.0",
    ]
    keys = {split_partition_key(r.partition_key): r.run_key for r in result.run_requests}
    assert set(keys) == HISTORY_PARTITIONS

    # Re-evaluating the same history yields the same run keys, so Dagster launches nothing new.
    again = _evaluate(liger_history_sensor, instance, releases)
    assert {split_partition_key(r.partition_key): r.run_key for r in again.run_requests} == keys

    # One more row in one partition changes that partition's key only.
    changed_dir = tmp_path / "changed"
    changed_dir.mkdir()
    changed = LocalReleases(sdist_path=str(build_history_sdist(changed_dir, rows=history_rows(extra_h100_rows=1))))
    after = {
        split_partition_key(r.partition_key): r.run_key
        for r in _evaluate(liger_history_sensor, instance, changed).run_requests
    }
    differing = {partition for partition in keys if keys[partition] != after[partition]}
    assert differing == {("nvidia-h100-80gb-hbm3", "0.5.0")}


def test_ci_sensor_gathers_files_per_partition_with_content_run_keys(instance, tmp_path):
    files = [
        shutil.copy(CI_FIXTURES / name, tmp_path / name)
        for name in ("7644a0f-v0.7.0.csv", "7644a0f.csv", "0701bab.csv")
    ]
    ci = LigerCiResource(locators=[str(f) for f in files])
    result = _evaluate(liger_ci_sensor, instance, ci=ci)
    keys = {r.partition_key: r.run_key for r in result.run_requests}
    assert set(keys) == {"nvidia-h200|0.5.10", "nvidia-h100-80gb-hbm3|0.7.0"}  # two files, one partition
    assert registered_keys(instance, "ci") == ["nvidia-h200|0.5.10", "nvidia-h100-80gb-hbm3|0.7.0"]
    assert {r.run_key for r in _evaluate(liger_ci_sensor, instance, ci=ci).run_requests} == set(keys.values())
    # Another weekly run of 0.7.0 changes that partition's key only.
    Path(files[1]).write_text(Path(files[1]).read_text().replace("0.10491200163960457", "0.105"))
    after = {r.partition_key: r.run_key for r in _evaluate(liger_ci_sensor, instance, ci=ci).run_requests}
    assert {key for key in keys if keys[key] != after[key]} == {"nvidia-h100-80gb-hbm3|0.7.0"}


def _published(instance, publication, partition: str, digest: str) -> None:
    """A publication of `partition` as defs/chain.py records it: its parts' content digest in the metadata."""
    instance.report_runless_asset_event(
        AssetMaterialization(publication, partition=partition, metadata={"content_digests": {partition: digest}})
    )


def test_sensors_skip_a_partition_whose_content_was_published_as_it_is(instance, tmp_path):
    """One rule for "changed" (defs/import_plan.py): a partition is requested again only when its content
    digest differs from the one its last publication recorded, however it was imported (import-ci, a sensor)."""
    releases = LocalReleases(sdist_path=str(build_history_sdist(tmp_path)))
    artifact = releases.fetch(releases.version)
    h100 = benchmark_partition_key("nvidia-h100-80gb-hbm3", "0.5.0")
    _published(instance, HISTORY.publication, h100, "sha256:" + "0" * 64)  # published with other rows: changed
    a100 = benchmark_partition_key("nvidia-a100-sxm4-80gb", "0.6.0")
    # the digest the publication step writes for a history partition (defs/chain.py: parts_digest of its parts)
    _published(
        instance, HISTORY.publication, a100, parts_digest([history_partition_csv(artifact, *split_partition_key(a100))])
    )
    requested = {r.partition_key for r in _evaluate(liger_history_sensor, instance, releases).run_requests}
    assert requested == {h100, "nvidia-h100-80gb-hbm3|0.6.0"}

    files = [shutil.copy(CI_FIXTURES / name, tmp_path / name) for name in ("7644a0f-v0.7.0.csv", "7644a0f.csv")]
    ci = LigerCiResource(locators=[str(f) for f in files])
    key = "nvidia-h100-80gb-hbm3|0.7.0"
    _published(instance, CI.publication, key, ci.gather().digest(split_partition_key(key)))
    assert _evaluate(liger_ci_sensor, instance, ci=ci).run_requests == []
    Path(files[1]).write_text(Path(files[1]).read_text().replace("0.10491200163960457", "0.105"))  # a new weekly run
    assert [r.partition_key for r in _evaluate(liger_ci_sensor, instance, ci=ci).run_requests] == [key]


def test_nightly_sweep_registers_and_requests_one_run_per_gpu_pool_on_the_newest_release(instance, tmp_path):
    fleet = GpuFleetResource(gpu_pools="nvidia-h100-80gb-hbm3, nvidia-b200")
    releases = LocalReleases(sdist_path=str(build_history_sdist(tmp_path)), version="0.10.0")
    when = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
    with build_schedule_context(
        instance=instance, resources={"fleet": fleet, "releases": releases}, scheduled_execution_time=when
    ) as context:
        requests = list(nightly_gpu_sweep(context))
    assert [split_partition_key(r.partition_key) for r in requests] == [
        ("nvidia-h100-80gb-hbm3", "0.10.0"),
        ("nvidia-b200", "0.10.0"),
    ]
    assert [r.run_key for r in requests] == [
        "sweep:2026-11-30:nvidia-h100-80gb-hbm3|0.10.0",
        "sweep:2026-11-30:nvidia-b200|0.10.0",
    ]
    assert [r.tags[GPU_POOL_TAG] for r in requests] == ["nvidia-h100-80gb-hbm3", "nvidia-b200"]
    assert registered_keys(instance, "sweep") == ["nvidia-b200|0.10.0", "nvidia-h100-80gb-hbm3|0.10.0"]


def test_nightly_sweep_without_pools_says_how_to_configure_them(instance):
    with build_schedule_context(
        instance=instance, resources={"fleet": GpuFleetResource(), "releases": LocalReleases(sdist_path="unused")}
    ) as context:
        result = nightly_gpu_sweep(context)
    assert isinstance(result, SkipReason) and "KERNELINDEX_GPU_POOLS" in result.skip_message


def test_a_chain_never_imported_says_so_until_it_has_partitions(instance):
    """chain_partitions_sensor, evaluated against a real instance, reports each chain's partitions_registered
    check without a run; the instance then holds what the UI shows (read back here as the UI reads it)."""
    from kernelindex_pipeline.definitions import chain_partitions
    from kernelindex_pipeline.defs.partitions import register_partitions
    from kernelindex_pipeline.defs.partitions_registered import CHECK_NAME

    def evaluate_and_report():
        with build_sensor_context(instance=instance) as context:
            result = chain_partitions(context)
        for event in getattr(result, "asset_events", []):  # what the sensor daemon does with a tick's events
            instance.report_runless_asset_event(event)
        return result

    def latest(key):
        record = instance.get_latest_asset_check_evaluation_record(AssetCheckKey(key, CHECK_NAME))
        return record.event.dagster_event.event_specific_data

    first = evaluate_and_report()
    assert sorted(event.asset_key.to_user_string() for event in first.asset_events) == [
        "ci/benchmark_csv",
        "history/benchmark_csv",
        "sweep/benchmark_csv",
    ]
    never = latest(CI.keys["benchmark_csv"])
    assert (never.passed, never.severity, never.blocking) == (False, AssetCheckSeverity.WARN, False)
    assert "never imported" in never.description and "kernelindex-pipeline import-ci LOCATOR" in never.description
    assert "kernelindex-pipeline import-history" in latest(HISTORY.keys["benchmark_csv"]).description

    assert isinstance(evaluate_and_report(), SkipReason)  # nothing changed: nothing written

    register_partitions(instance, "history", HISTORY_PARTITIONS)
    (imported,) = evaluate_and_report().asset_events
    assert imported.asset_key == HISTORY.keys["benchmark_csv"]
    now = latest(HISTORY.keys["benchmark_csv"])
    assert now.passed and now.description == "3 partitions registered in the history chain"
    assert not latest(CI.keys["benchmark_csv"]).passed  # the CI chain still says it was never imported
