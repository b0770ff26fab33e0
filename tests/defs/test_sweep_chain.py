"""The sweep chain through Dagster: the stand-in release's scripts run in real subprocesses behind Pipes,
the good rows are published as measured records, the bad scripts are classified, and a host without
CUDA fails at once (its typed error says not to retry) naming the partition's GPU, without touching the
history chain of the same GPU and version."""

from __future__ import annotations

import pytest
from dagster import AssetKey, DagsterInstance, materialize

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.defs.chain_values import IO_MANAGER_KEY, ChainValuesIOManager
from kernelindex_pipeline.defs.history_chain import HISTORY
from kernelindex_pipeline.defs.partitions import benchmark_partition_key, register_partitions
from kernelindex_pipeline.defs.resources import BenchmarkRunnerResource, CatalogueResource, LigerGitResource
from kernelindex_pipeline.defs.sweep_chain import SWEEP
from tests.support.dagster_support import LocalReleases, build_history_sdist
from tests.support.standin_release import build_fake_torch, build_site

VERSION = "0.5.0"
GPU = "nvidia-h100-80gb-hbm3"
KEY = benchmark_partition_key(GPU, VERSION)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build_site(tmp_path_factory.mktemp("sweep-site"), VERSION)


def _run(site, tmp_path, sqlite_url, device_name, instance=None):
    torch_dir = build_fake_torch(tmp_path / "torch", device_name)
    resources = {
        IO_MANAGER_KEY: ChainValuesIOManager(base_dir=str(tmp_path / "values")),
        "catalogue": CatalogueResource(url=sqlite_url),
        "releases": LocalReleases(sdist_path=str(site["tarball"]), version=VERSION),
        "liger_git": LigerGitResource(),  # a release's partition builds nothing from the clone
        "runner": BenchmarkRunnerResource(
            work_root=str(tmp_path / "sweeps"),
            env_cache_dir=str(site["root"] / "envs"),
            wheel_dir=str(site["wheels"]),
            script_timeout_s=20,
            rounds=1,  # one run per script: the metadata counts below are per script
            extra_pythonpath=[str(torch_dir)],
            extra_env={"PATH": site["path"]},
        ),
    }
    if instance is None:
        with DagsterInstance.ephemeral() as ephemeral:
            return _run(site, tmp_path, sqlite_url, device_name, ephemeral)
    register_partitions(instance, "sweep", [(GPU, VERSION)])
    return materialize(SWEEP.assets, partition_key=KEY, instance=instance, resources=resources, raise_on_error=False)


@pytest.mark.slow  # 23 s on a quiet two-core machine
def test_sweep_publishes_the_good_scripts_rows_and_classifies_the_bad(site, tmp_path, sqlite_url):
    result = _run(site, tmp_path, sqlite_url, "NVIDIA H100 80GB HBM3")
    assert result.success
    (partition_csv,) = result.output_for_node("sweep__benchmark_csv")[KEY]
    statuses = {o.script: o.status.value for o in partition_csv.sweep.outcomes}
    assert statuses["benchmark_rms_norm.py"] == "ok" and statuses["benchmark_tiled_mlp.py"] == "ok"
    assert statuses["benchmark_layer_norm.py"] == "failed"
    assert statuses["benchmark_cross_entropy.py"] == "out_of_memory"
    assert statuses["benchmark_softmax.py"] == "timed_out"

    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks["sweep_scripts_succeeded"] is False  # a warning: the good rows still go through
    assert all(passed for name, passed in checks.items() if name != "sweep_scripts_succeeded")

    (csv_event,) = result.asset_materializations_for_node("sweep__benchmark_csv")
    assert "orchestration_overhead_s" in csv_event.metadata and csv_event.metadata["scripts_failed"].value == 3
    # Coverage against the release's history (its one rms_norm row, measured) and the sentinel, in the metadata.
    assert (
        csv_event.metadata["sweep_coverage_totals"].value["measured"]
        == csv_event.metadata["sweep_coverage_totals"].value["expected"]
        == 1
    )
    assert "| benchmark_layer_norm.py | failed |" in csv_event.metadata["sweep_coverage"].value
    assert csv_event.metadata["sentinel"].value.startswith("sentinel matmul_bf16: start ")

    store = CatalogueStore.open(sqlite_url)
    try:
        manifests = list(store.manifests())
    finally:
        store.close()
    runs = [m for m in manifests if m["kind"] == "BenchmarkRun"]
    benchmarks = {r["spec"]["sourceNative"]["benchmark"].split("/")[0] for r in runs}
    assert runs and benchmarks - {"sentinel_matmul_bf16", "sentinel_copy_1gib"} <= {
        "rms_norm",
        "tiled_swiglu",
        "tiled_geglu",
    }
    # The sweep's sentinel is published with it: both reference operations, at its start and its end.
    sentinel = sorted(
        r["metadata"]["labels"]["sentinel"]
        for r in runs
        if r["spec"]["sourceNative"]["source"] == "kernelindex-sentinel"
    )
    assert sentinel == ["end", "end", "start", "start"]
    assert all(r["spec"]["evidence"]["logs"]["digest"].startswith("sha256:") for r in runs)
    (environment,) = [m for m in manifests if m["kind"] == "ExecutionEnvironment"]
    assert environment["spec"]["software"], "a measured environment records its software"
    assert {r["spec"]["environmentDigest"] for r in runs} == {store_digest(environment)}


def store_digest(manifest):
    from kernelindex_pipeline.records.canonical import digest_of

    return digest_of(manifest)


def test_a_host_without_cuda_fails_without_retry_and_leaves_history_alone(site, tmp_path, sqlite_url):
    with DagsterInstance.ephemeral() as instance:
        register_partitions(instance, "history", [(GPU, VERSION)])
        history = materialize(
            HISTORY.assets,
            partition_key=KEY,
            instance=instance,
            resources={
                "catalogue": CatalogueResource(url=sqlite_url),
                "releases": LocalReleases(sdist_path=str(build_history_sdist(tmp_path)), version=VERSION),
                IO_MANAGER_KEY: ChainValuesIOManager(base_dir=str(tmp_path / "values")),
            },
        )
        assert history.success
        result = _run(site, tmp_path, sqlite_url, None, instance)
        assert not result.success
        failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
        error = str(failure.event_specific_data.error)
        assert GPU in error and "HostCheckError" in error and "not retried" in error
        assert not result.asset_materializations_for_node("sweep__catalogue_publication")
        # The history chain of the same GPU and version keeps its materialization and its checks.
        history_key = AssetKey(["history", "catalogue_publication"])
        assert instance.get_materialized_partitions(history_key) == {KEY}
        assert instance.get_latest_materialization_event(history_key).run_id == history.run_id
        assert {event.asset_key.path[0] for event in result.get_asset_materialization_events()} <= {"sweep"}


def test_a_commits_partition_key_names_the_commit_and_parses_as_any_sweep_key():
    from kernelindex_pipeline.defs.partitions import split_partition_key
    from kernelindex_pipeline.defs.sweep_chain import commit_of_version, commit_partition_key

    key = commit_partition_key(GPU, "E98D0CD81C14DBB4082D8E005013CA5765BAA170")
    assert key == f"{GPU}|git-e98d0cd81c14"
    gpu, version = split_partition_key(key)
    assert (gpu, commit_of_version(version)) == (GPU, "e98d0cd81c14")
    assert commit_of_version(VERSION) is None and commit_of_version("git-notahex") is None
