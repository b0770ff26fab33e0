"""Sensors and the schedule, evaluated with Dagster's own test contexts against a real instance."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from dagster import SensorResult, SkipReason, build_schedule_context, build_sensor_context, instance_for_test
from dagster_support import HISTORY_PARTITIONS, LocalReleases, build_history_sdist, history_rows

from kernelindex_pipeline.defs.partitions import (
    GPU_DIMENSION,
    VERSION_DIMENSION,
    InvalidPartitionValue,
    benchmark_partition_key,
    split_partition_key,
)
from kernelindex_pipeline.defs.resources import GpuFleetResource
from kernelindex_pipeline.defs.schedules import GPU_POOL_TAG, nightly_gpu_sweep
from kernelindex_pipeline.defs.sensors import liger_history_sensor, liger_release_sensor


@pytest.fixture
def instance():
    with instance_for_test() as instance:
        yield instance


def _evaluate(sensor, instance, releases) -> SensorResult | SkipReason:
    context = build_sensor_context(instance=instance, resources={"releases": releases})
    return sensor(context)


def test_partition_keys_are_validated_and_built_with_multipartitionkey():
    key = benchmark_partition_key("nvidia-h100-80gb-hbm3", "0.8.0")
    assert split_partition_key(str(key)) == ("nvidia-h100-80gb-hbm3", "0.8.0")
    for gpu in ("NVIDIA H100", "a|b", "a,b", ""):
        with pytest.raises(InvalidPartitionValue, match="gpu partition value"):
            benchmark_partition_key(gpu, "0.8.0")


def test_release_sensor_adds_new_versions_once(instance, tmp_path):
    releases = LocalReleases(sdist_path=str(build_history_sdist(tmp_path)))
    first = _evaluate(liger_release_sensor, instance, releases)
    (request,) = first.dynamic_partitions_requests
    assert request.partitions_def_name == VERSION_DIMENSION and list(request.partition_keys) == ["0.5.0", "0.6.0"]
    instance.add_dynamic_partitions(VERSION_DIMENSION, list(request.partition_keys))
    assert isinstance(_evaluate(liger_release_sensor, instance, releases), SkipReason)


def test_history_sensor_requests_one_run_per_partition_with_content_run_keys(instance, tmp_path):
    releases = LocalReleases(sdist_path=str(build_history_sdist(tmp_path)))
    result = _evaluate(liger_history_sensor, instance, releases)
    added = {(r.partitions_def_name, key) for r in result.dynamic_partitions_requests for key in r.partition_keys}
    assert added == {(GPU_DIMENSION, g) for g, _ in HISTORY_PARTITIONS} | {(VERSION_DIMENSION, v) for _, v in HISTORY_PARTITIONS}
    keys = {split_partition_key(r.partition_key): r.run_key for r in result.run_requests}
    assert set(keys) == HISTORY_PARTITIONS

    # Re-evaluating the same history yields the same run keys, so Dagster launches nothing new.
    again = _evaluate(liger_history_sensor, instance, releases)
    assert {split_partition_key(r.partition_key): r.run_key for r in again.run_requests} == keys

    # One more row in one partition changes that partition's key only.
    changed_dir = tmp_path / "changed"
    changed_dir.mkdir()
    changed = LocalReleases(sdist_path=str(build_history_sdist(changed_dir, rows=history_rows(extra_h100_rows=1))))
    after = {split_partition_key(r.partition_key): r.run_key for r in _evaluate(liger_history_sensor, instance, changed).run_requests}
    differing = {partition for partition in keys if keys[partition] != after[partition]}
    assert differing == {("nvidia-h100-80gb-hbm3", "0.5.0")}


def test_nightly_sweep_requests_one_run_per_gpu_pool_on_the_newest_version(instance):
    instance.add_dynamic_partitions(VERSION_DIMENSION, ["0.6.1", "0.8.0", "0.10.0", "0.9.2"])
    fleet = GpuFleetResource(gpu_pools="nvidia-h100-80gb-hbm3, nvidia-b200")
    when = datetime(2026, 11, 30, 2, 0, tzinfo=UTC)
    context = build_schedule_context(instance=instance, resources={"fleet": fleet}, scheduled_execution_time=when)
    requests = list(nightly_gpu_sweep(context))
    assert [split_partition_key(r.partition_key) for r in requests] == [("nvidia-h100-80gb-hbm3", "0.10.0"), ("nvidia-b200", "0.10.0")]
    assert [r.run_key for r in requests] == ["sweep:2026-11-30:nvidia-h100-80gb-hbm3|0.10.0", "sweep:2026-11-30:nvidia-b200|0.10.0"]
    assert [r.tags[GPU_POOL_TAG] for r in requests] == ["nvidia-h100-80gb-hbm3", "nvidia-b200"]
    assert set(instance.get_dynamic_partitions(GPU_DIMENSION)) == {"nvidia-h100-80gb-hbm3", "nvidia-b200"}


def test_nightly_sweep_without_pools_says_how_to_configure_them(instance):
    context = build_schedule_context(instance=instance, resources={"fleet": GpuFleetResource()})
    result = nightly_gpu_sweep(context)
    assert isinstance(result, SkipReason) and "KERNELINDEX_GPU_POOLS" in result.skip_message
