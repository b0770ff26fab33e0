"""A snapshot of the code location's shape: assets, their dependencies and partitions, checks, jobs,
sensors and schedules. A change here is a change operators see in the UI, so it should be deliberate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dagster import instance_for_test

from kernelindex_pipeline.definitions import build_definitions

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def defs():
    # A fresh Definitions resolved under its own instance: earlier tests' instances are gone by now.
    with instance_for_test():
        definitions = build_definitions()
        definitions.resolve_asset_graph()
        yield definitions


def _graph(defs):
    graph = defs.resolve_asset_graph()
    return {
        key.to_user_string(): {
            "deps": sorted(parent.to_user_string() for parent in graph.get(key).parent_keys),
            "partitioned": graph.get(key).partitions_def is not None,
        }
        for key in graph.get_all_asset_keys()
    }


def test_asset_graph_snapshot(defs):
    assert _graph(defs) == {
        "liger_release": {"deps": [], "partitioned": True},
        "benchmark_csv": {"deps": ["liger_release"], "partitioned": True},
        "benchmark_rows": {"deps": ["benchmark_csv"], "partitioned": True},
        "kernelindex_records": {"deps": ["benchmark_csv", "benchmark_rows"], "partitioned": True},
        "catalogue_publication": {"deps": ["benchmark_csv", "kernelindex_records"], "partitioned": True},
        "catalogue_export": {"deps": ["catalogue_publication"], "partitioned": False},
        "benchmark_regressions": {"deps": ["catalogue_publication"], "partitioned": False},
        "catalogue_report": {"deps": ["catalogue_publication"], "partitioned": False},
    }


def test_every_asset_has_a_docstring_description(defs):
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        assert graph.get(key).description, f"{key.to_user_string()} has no description"


def test_record_checks_are_blocking_and_the_sweep_check_is_not(defs):
    graph = defs.resolve_asset_graph()
    blocking = {spec.key.name: spec.blocking for key in graph.asset_check_keys for spec in [graph.get_check_spec(key)]}
    assert blocking == {
        "records_schema_valid": True,
        "record_digests_recompute": True,
        "run_references_resolve": True,
        "rows_conserved": True,
        "sweep_scripts_succeeded": False,
        "no_regressions": False,
    }


def test_jobs_sensors_schedules(defs):
    assert sorted(job.name for job in defs.jobs) == ["gpu_sweep_job", "history_import_job"]
    assert sorted(sensor.name for sensor in defs.sensors) == ["liger_history_sensor", "liger_release_sensor"]
    (schedule,) = defs.schedules
    assert (schedule.name, schedule.cron_schedule, schedule.execution_timezone) == ("nightly_gpu_sweep", "0 2 * * *", "UTC")


def test_dagster_yaml_limits_one_run_per_gpu_pool():
    config = yaml.safe_load((ROOT / "dagster.yaml").read_text())
    assert config["telemetry"]["enabled"] is False
    (limit,) = config["concurrency"]["runs"]["tag_concurrency_limits"]
    assert limit == {"key": "kernelindex/gpu_pool", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}


def test_workspace_yaml_loads_the_code_location(tmp_path):
    (tmp_path / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())
    completed = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", str(ROOT / "workspace.yaml")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, env={**__import__("os").environ, "DAGSTER_HOME": str(tmp_path)},
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
