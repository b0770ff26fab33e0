"""A snapshot of the code location's shape: assets, their dependencies and partitions, checks, jobs,
sensors and schedules. A change here is a change operators see in the UI, so it should be deliberate."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from dagster import AssetKey, instance_for_test

from kernelindex_pipeline.definitions import build_definitions
from kernelindex_pipeline.defs.chain import STAGES
from tests.support import ROOT

INSTANCE_YAML = ROOT / "kernelindex_pipeline" / "data" / "dagster.yaml"


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
    publications = ["ci/catalogue_publication", "history/catalogue_publication", "sweep/catalogue_publication"]
    assert _graph(defs) == {
        "history/benchmark_csv": {"deps": [], "partitioned": True},
        "history/benchmark_rows": {"deps": ["history/benchmark_csv"], "partitioned": True},
        "history/kernelindex_records": {
            "deps": ["history/benchmark_csv", "history/benchmark_rows"],
            "partitioned": True,
        },
        "history/catalogue_publication": {
            "deps": ["history/benchmark_csv", "history/kernelindex_records"],
            "partitioned": True,
        },
        "ci/benchmark_csv": {"deps": [], "partitioned": True},
        "ci/benchmark_rows": {"deps": ["ci/benchmark_csv"], "partitioned": True},
        "ci/kernelindex_records": {"deps": ["ci/benchmark_csv", "ci/benchmark_rows"], "partitioned": True},
        "ci/catalogue_publication": {"deps": ["ci/benchmark_csv", "ci/kernelindex_records"], "partitioned": True},
        "sweep/benchmark_csv": {"deps": [], "partitioned": True},
        "sweep/benchmark_rows": {"deps": ["sweep/benchmark_csv"], "partitioned": True},
        "sweep/kernelindex_records": {"deps": ["sweep/benchmark_csv", "sweep/benchmark_rows"], "partitioned": True},
        "sweep/catalogue_publication": {
            "deps": ["sweep/benchmark_csv", "sweep/kernelindex_records"],
            "partitioned": True,
        },
        # the export and the site read efficiency_table's one derivation of the efficiency figures
        "catalogue_export": {"deps": sorted([*publications, "efficiency_table"]), "partitioned": False},
        "benchmark_regressions": {"deps": publications, "partitioned": False},
        "benchmark_coverage": {"deps": publications, "partitioned": False},
        # the report shows the regressions asset's stored result (detected once)
        "catalogue_report": {
            "deps": sorted([*publications, "benchmark_regressions", "efficiency_table"]),
            "partitioned": False,
        },
        "efficiency_table": {"deps": publications, "partitioned": False},
        # what bisection_job records (its steps are runs of the sweep chain): observed, never refreshed
        "bisection_verdict": {"deps": [], "partitioned": False},
    }


def test_each_chain_has_its_own_partitions_group_and_backfill_policy(defs):
    graph = defs.resolve_asset_graph()
    for source, single_run in (("history", True), ("ci", True), ("sweep", False)):
        nodes = [graph.get(key) for key in graph.get_all_asset_keys() if key.path[0] == source]
        assert {node.partitions_def.name for node in nodes} == {f"{source}_partitions"}
        assert {node.group_name for node in nodes} == {source}
        policies = {node.backfill_policy.max_partitions_per_run if node.backfill_policy else 1 for node in nodes}
        assert policies == ({None} if single_run else {1})  # None: every partition in one run


def test_catalogue_wide_assets_refresh_by_automation_on_by_default(defs):
    graph = defs.resolve_asset_graph()
    wide = [
        key
        for key in graph.get_all_asset_keys()
        if graph.get(key).partitions_def is None and graph.get(key).is_materializable
    ]
    assert wide and all(graph.get(key).automation_condition is not None for key in wide)
    assert not graph.get(AssetKey("bisection_verdict")).is_materializable  # a bisection's verdict: bisection_job's
    (sensor,) = [s for s in defs.sensors if s.name == "catalogue_automation"]
    assert sensor.default_status.value == "RUNNING"


def test_loading_the_code_location_prints_no_warning():
    completed = subprocess.run(
        [
            sys.executable,
            "-W",
            "always",
            "-c",
            "from kernelindex_pipeline.definitions import defs; defs.resolve_asset_graph()",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0 and "Warning" not in completed.stderr, completed.stderr


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
        "partitions_registered": False,
    }
    per_asset = sorted(key.asset_key.to_user_string() for key in graph.asset_check_keys if key.name == "rows_conserved")
    assert per_asset == ["ci/kernelindex_records", "history/kernelindex_records", "sweep/kernelindex_records"]
    registered = sorted(
        key.asset_key.to_user_string() for key in graph.asset_check_keys if key.name == "partitions_registered"
    )
    assert registered == ["ci/benchmark_csv", "history/benchmark_csv", "sweep/benchmark_csv"]
    (sensor,) = [s for s in defs.sensors if s.name == "chain_partitions_sensor"]
    assert sensor.default_status.value == "RUNNING"  # a never-imported chain says so without anyone turning it on


def test_jobs_sensors_schedules(defs):
    assert sorted(job.name for job in defs.jobs) == [
        "bisection_job",
        "ci_import_job",
        "gpu_sweep_job",
        "history_import_job",
    ]
    assert sorted(sensor.name for sensor in defs.sensors) == [
        "bisection_trigger_sensor",
        "catalogue_automation",
        "chain_partitions_sensor",
        "liger_ci_sensor",
        "liger_history_sensor",
    ]
    (schedule,) = defs.schedules
    assert (schedule.name, schedule.cron_schedule, schedule.execution_timezone) == (
        "nightly_gpu_sweep",
        "0 2 * * *",
        "UTC",
    )


def test_dagster_yaml_limits_one_run_per_gpu_pool():
    config = yaml.safe_load(INSTANCE_YAML.read_text())
    assert config["telemetry"]["enabled"] is False
    (limit,) = config["concurrency"]["runs"]["tag_concurrency_limits"]
    assert limit == {"key": "kernelindex/gpu_pool", "value": {"applyLimitPerUniqueValue": True}, "limit": 1}


def test_workspace_yaml_loads_the_code_location(tmp_path):
    (tmp_path / "dagster.yaml").write_text(INSTANCE_YAML.read_text())
    completed = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-w", str(ROOT / "workspace.yaml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**__import__("os").environ, "DAGSTER_HOME": str(tmp_path)},
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_the_defs_package_never_imports_the_root_definitions_module():
    """`definitions.py` assembles `defs/`; an import the other way is a cycle (issue 16). Read from the
    source (every import statement, module level or inside a function) so a lazy import counts too."""
    import ast

    offenders = []
    for path in sorted((ROOT / "kernelindex_pipeline" / "defs").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            if any(name == "kernelindex_pipeline.definitions" for name in names):
                offenders.append(f"{path.name}:{node.lineno}")
    assert not offenders, f"defs/ imports kernelindex_pipeline.definitions at {offenders}"


def test_the_import_commands_get_the_same_resources_as_the_code_location(defs):
    from kernelindex_pipeline.defs.environment_resources import resources_from_environment

    assert sorted(resources_from_environment()) == sorted(defs.resources)


def test_each_chains_assets_are_labelled_with_their_chain(defs):
    """Issue 21: the lineage names a node by its key's last part, so the three chains' assets carry their
    chain as a kind (a label Dagster shows on each node): the three publications no longer look alike."""
    specs = {spec.key.to_user_string(): spec for spec in defs.resolve_all_asset_specs()}
    for source in ("history", "ci", "sweep"):
        for stage in STAGES:
            assert specs[f"{source}/{stage}"].kinds == {f"{source}-chain"}
    labels = {
        (spec.key.path[-1], frozenset(spec.kinds))
        for key, spec in specs.items()
        if key.endswith("/catalogue_publication")
    }
    assert len(labels) == 3
