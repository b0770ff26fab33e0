"""The bisection job through Dagster, launched with a group's id as config: each step a run of the sweep
chain on the commit's partition (real sweep subprocesses behind Pipes, stand-in torch/triton), published
like any sweep; the verdict read back from the materializations."""

from __future__ import annotations

import json

import pytest
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.defs.bisection_job import VERDICT_KEY, bisection_job
from kernelindex_pipeline.defs.chain_values import IO_MANAGER_KEY, ChainValuesIOManager
from kernelindex_pipeline.defs.partitions import registered_keys
from kernelindex_pipeline.defs.resources import (
    BenchmarkRunnerResource,
    CatalogueResource,
    LigerGitResource,
    LigerReleaseResource,
)
from kernelindex_pipeline.defs.sweep_chain import commit_partition_key
from tests.support.liger_bisection import H100, build_host, build_repository, report_of

GROUP = "g-0123456789ab"


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("bisection-job")
    repo = build_repository(root, commits=8, slow_from=6, broken=frozenset({4}))
    host = build_host(root / "host")
    (root / "wheels").mkdir()
    report = root / "regressions.json"
    report.write_text(
        json.dumps(report_of(repo.commits, before_ref=repo.commits[0][:7], after_ref=repo.commits[8][:7]))
    )
    return {"root": root, "repo": repo, "host": host, "report": report}


def resources(bench, sqlite_url):
    root = bench["root"]
    return {
        IO_MANAGER_KEY: ChainValuesIOManager(base_dir=str(root / "values")),
        "catalogue": CatalogueResource(url=sqlite_url),
        "releases": LigerReleaseResource(cache_dir=str(root / "releases")),  # a commit's partition fetches no release
        "liger_git": LigerGitResource(path=str(bench["repo"].path)),
        "runner": BenchmarkRunnerResource(
            work_root=str(root / "sweeps"),
            env_cache_dir=str(root / "envs"),
            build_cache_dir=str(root / "builds"),
            wheel_dir=str(root / "wheels"),
            script_timeout_s=120,
            rounds=2,
            extra_pythonpath=[str(bench["host"]["torch"])],
            extra_env={"PATH": bench["host"]["path"]},
        ),
    }


@pytest.mark.slow  # four sweep runs through Pipes, each building a commit: about 40 s
def test_the_job_bisects_a_group_each_step_a_sweep_run_of_the_commits_partition(bench, sqlite_url):
    commits = bench["repo"].commits
    with DagsterInstance.ephemeral() as instance:
        result = bisection_job.execute_in_process(
            run_config={
                "ops": {"bisect_group": {"config": {"group": GROUP, "regressions_file": str(bench["report"])}}}
            },
            instance=instance,
            resources=resources(bench, sqlite_url),
        )
        assert result.success
        event = instance.get_latest_materialization_event(VERDICT_KEY)
        metadata = event.asset_materialization.metadata
        assert metadata["verdict"].value == "confirmed" and metadata["culprit"].value == commits[6]
        assert metadata["group"].value == GROUP and metadata["measurements"].value == 4
        document = metadata["bisection"].value
        assert [s["commit"] for s in document["steps"]] == [commits[0], commits[8], commits[3], commits[6]]
        # every step a run of the sweep chain on its commit's partition, listed as the sweep's partitions
        keys = [commit_partition_key(H100, c) for c in (commits[0], commits[8], commits[3], commits[6])]
        assert set(keys) <= set(registered_keys(instance, "sweep"))
        runs = instance.get_runs(RunsFilter(tags={"kernelindex/bisection": GROUP}))
        assert sorted(r.tags.get("dagster/partition") for r in runs) == sorted(keys)
        assert all(r.status == DagsterRunStatus.SUCCESS for r in runs)
        assert "| 4 | " in metadata["steps"].value and "| after |" in metadata["steps"].value
    # ...published as ordinary measured runs, their ImplementationRevision naming the commit
    store = CatalogueStore.open(sqlite_url)
    try:
        revisions = {
            (m["spec"].get("projectRevision") or {}).get("commit")
            for m in store.manifests()
            if m["kind"] == "ImplementationRevision"
        }
    finally:
        store.close()
    assert {commits[0], commits[8], commits[3], commits[6]} <= revisions


def test_the_report_reads_each_groups_newest_verdict():
    from dagster import AssetMaterialization, MetadataValue

    from kernelindex_pipeline.defs.bisection_job import latest_verdicts

    with DagsterInstance.ephemeral() as instance:
        for group, label in (("g-a", "ambiguous"), ("g-b", "not reproduced"), ("g-a", "confirmed abc")):
            instance.report_runless_asset_event(
                AssetMaterialization(
                    VERDICT_KEY, metadata={"group": group, "bisection": MetadataValue.json({"label": label})}
                )
            )
        assert latest_verdicts(instance) == {"g-a": {"label": "confirmed abc"}, "g-b": {"label": "not reproduced"}}


def test_a_step_whose_commit_does_not_build_is_skipped_and_said(bench, sqlite_url):
    from tests.support.liger_git import git

    repo, commits = bench["repo"].path, bench["repo"].commits
    # a commit beside the history whose setup.py fails, as the good end of a group
    git(repo, "checkout", "-q", "-b", "broken-build", commits[0])
    (repo / "setup.py").write_text("raise RuntimeError('stand-in: setup.py cannot compute the dependencies')\n")
    git(repo, "add", "setup.py")
    git(repo, "commit", "-q", "-m", "a build that fails")
    broken = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "main")
    report = bench["root"] / "broken.json"
    report.write_text(json.dumps(report_of(commits, before_ref=broken, after_ref=commits[8])))
    with DagsterInstance.ephemeral() as instance:
        result = bisection_job.execute_in_process(
            run_config={"ops": {"bisect_group": {"config": {"group": GROUP, "regressions_file": str(report)}}}},
            instance=instance,
            resources=resources(bench, sqlite_url),
        )
        assert result.success  # the bisection ran; its verdict says what happened
        metadata = instance.get_latest_materialization_event(VERDICT_KEY).asset_materialization.metadata
        assert metadata["verdict"].value == "not reproduced"
        (step,) = metadata["bisection"].value["steps"]
        assert step["outcome"] == "skipped" and "does not build" in step["reason"]
        assert "stand-in: setup.py cannot compute the dependencies" in step["reason"]
        (run,) = instance.get_runs(RunsFilter(tags={"kernelindex/bisection": GROUP}))
        assert run.status == DagsterRunStatus.FAILURE and run.tags["dagster/partition"] == commit_partition_key(
            H100, broken
        )


def test_a_bisection_needs_two_rounds(bench, sqlite_url):
    with DagsterInstance.ephemeral() as instance:
        result = bisection_job.execute_in_process(
            run_config={
                "ops": {"bisect_group": {"config": {"group": GROUP, "regressions_file": str(bench["report"])}}}
            },
            instance=instance,
            resources={**resources(bench, sqlite_url), "runner": BenchmarkRunnerResource(rounds=1)},
            raise_on_error=False,
        )
        assert not result.success
        (failure,) = [e for e in result.all_events if e.is_step_failure]
        assert "needs 2 rounds or more" in str(failure.step_failure_data.user_failure_data.description)


def trigger_report(commits):
    """Three groups: the test's (three suspects, a 1.3x Liger step), one with a single suspect, and one whose
    worst Liger step is larger, so it comes first."""
    report = report_of(commits, before_ref=commits[0][:7], after_ref=commits[8][:7])
    (group,) = report["groups"]
    lone = {**group, "id": "g-lone", "suspects": {"commits": [{"sha": commits[6]}]}}
    worse = {**group, "id": "g-worse", "series": [{**group["series"][0], "magnitude": 2.5}]}
    return {**report, "groups": [group, lone, worse]}


def evaluate_trigger(instance, cursor=None, **settings):
    from dagster import build_sensor_context

    from kernelindex_pipeline.defs.bisection_job import bisection_trigger_sensor
    from kernelindex_pipeline.defs.resources import BisectionTriggerResource

    context = build_sensor_context(
        instance=instance, cursor=cursor, resources={"bisection_trigger": BisectionTriggerResource(**settings)}
    )
    return bisection_trigger_sensor(context), context


def test_the_nightly_trigger_bisects_new_groups_with_suspects_within_its_daily_budget(tmp_path, monkeypatch):
    from dagster import AssetMaterialization, DefaultSensorStatus, MetadataValue, SkipReason

    from kernelindex_pipeline.defs.bisection_job import TRIGGER_TAG, bisection_trigger_sensor
    from kernelindex_pipeline.home import SITE_DIR

    assert bisection_trigger_sensor.default_status == DefaultSensorStatus.STOPPED  # off until turned on
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    commits = [f"{i:040x}" for i in range(9)]
    with DagsterInstance.ephemeral() as instance:
        result, _ = evaluate_trigger(instance)
        assert isinstance(result, SkipReason) and "catalogue_report writes it" in result.skip_message
        (tmp_path / SITE_DIR).mkdir()
        (tmp_path / SITE_DIR / "regressions.json").write_text(json.dumps(trigger_report(commits)))
        # a budget for one bisection a day: the worst group first, the one-suspect group never
        result, context = evaluate_trigger(instance, daily_gpu_seconds=1000, per_group_gpu_seconds=600)
        (request,) = result.run_requests
        config = request.run_config["ops"]["bisect_group"]["config"]
        assert config["group"] == "g-worse" and config["budget_gpu_seconds"] == 600
        assert request.tags[TRIGGER_TAG] == "g-worse" and request.tags["kernelindex/gpu_pool"] == H100
        # the same day, its cursor says the budget is spent
        result, _ = evaluate_trigger(instance, result.cursor, daily_gpu_seconds=1000, per_group_gpu_seconds=600)
        assert result.run_requests == [] and "1 waiting for budget" in result.skip_reason.skip_message
        # a day later (a cursor of another day) the next group; a group bisected already is not started again
        instance.report_runless_asset_event(
            AssetMaterialization(VERDICT_KEY, metadata={"group": "g-worse", "bisection": MetadataValue.json({})})
        )
        stale = json.dumps({"day": "2000-01-01", "started": 1000})
        result, _ = evaluate_trigger(instance, stale, daily_gpu_seconds=1000, per_group_gpu_seconds=600)
        assert [r.run_config["ops"]["bisect_group"]["config"]["group"] for r in result.run_requests] == [GROUP]
        # with min_suspects 1 the lone group qualifies too
        result, _ = evaluate_trigger(instance, min_suspects=1, daily_gpu_seconds=10_000)
        assert [r.tags[TRIGGER_TAG] for r in result.run_requests] == [GROUP, "g-lone"]


def test_the_trigger_passes_over_a_damaged_report(tmp_path, monkeypatch):
    from dagster import SkipReason

    from kernelindex_pipeline.home import SITE_DIR

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    (tmp_path / SITE_DIR).mkdir()
    (tmp_path / SITE_DIR / "regressions.json").write_text('{"groups": [')
    with DagsterInstance.ephemeral() as instance:
        result, _ = evaluate_trigger(instance)
    assert isinstance(result, SkipReason) and "cannot read" in result.skip_message


@pytest.mark.slow  # a daemon, a launch that loads the code location, four sweep runs: a minute or two
def test_launched_as_the_launchpad_launches_it_the_queued_run_bisects_the_group(
    bench, sqlite_url, tmp_path, monkeypatch
):
    """The job as a user starts it from the UI: `dagster job launch` of the workspace's code location with the
    group's id (and the host's runner settings) as run config, queued on the instance under DAGSTER_HOME and
    run by dagster-daemon in a process of its own; the verdict and the step runs are on that instance."""
    from kernelindex_pipeline.defs.instance import local_instance
    from kernelindex_pipeline.defs.run_control import LOCATION, TERMINAL, launch, queue_daemon
    from kernelindex_pipeline.home import CATALOGUE_URL_ENV, LIGER_GIT_ENV
    from tests.support.ui_support import wait_for

    commits, root = bench["repo"].commits, bench["root"]
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # the daemon and the run's process inherit these
    monkeypatch.setenv(CATALOGUE_URL_ENV, sqlite_url)
    monkeypatch.setenv(LIGER_GIT_ENV, str(bench["repo"].path))
    runner = resources(bench, sqlite_url)["runner"]
    runner_config = {
        field: getattr(runner, field)
        for field in (
            "work_root",
            "env_cache_dir",
            "build_cache_dir",
            "wheel_dir",
            "script_timeout_s",
            "rounds",
            "extra_pythonpath",
            "extra_env",
        )
    }
    run_config = {
        "ops": {"bisect_group": {"config": {"group": GROUP, "regressions_file": str(bench["report"])}}},
        "resources": {"runner": {"config": runner_config}, "releases": {"config": {"cache_dir": str(root / "rel")}}},
    }
    with local_instance(home) as instance:
        with queue_daemon(instance, home, verbose=False, log=print) as daemon:
            run_id = launch(instance, home, "bisection_job", {}, verbose=False, run_config=run_config)

            def ended():
                if daemon.exited() is not None:
                    raise AssertionError(f"dagster-daemon exited ({daemon.exited()}); its log: {daemon.log_path}")
                run = instance.get_run_by_id(run_id)
                return run if run is not None and run.status in TERMINAL else None

            run = wait_for(f"bisection_job run {run_id} to end", ended, timeout_s=1200, interval_s=1.0)
        assert run.status == DagsterRunStatus.SUCCESS, [e.message for e in instance.all_logs(run_id)][-20:]
        assert run.remote_job_origin is not None and run.remote_job_origin.location_name == LOCATION
        metadata = instance.get_latest_materialization_event(VERDICT_KEY).asset_materialization.metadata
        assert metadata["verdict"].value == "confirmed" and metadata["culprit"].value == commits[6]
        steps = instance.get_runs(RunsFilter(tags={"kernelindex/parent_run": run_id}))
        assert sorted(r.tags["dagster/partition"] for r in steps) == sorted(
            commit_partition_key(H100, c) for c in (commits[0], commits[8], commits[3], commits[6])
        )
