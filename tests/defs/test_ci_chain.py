"""The CI chain through Dagster, in process: a partition added by hand ("Add a partition" in the UI) that no
listed CI file names fails its run with the pair and some the files hold, publishes nothing and sets off no
catalogue refresh (issue 30, feedback), as the history chain does (tests/defs/test_history_chain.py)."""

from __future__ import annotations

import shutil

import pytest
from dagster import DagsterInstance, Definitions, evaluate_automation_conditions, materialize

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.defs.catalogue_assets import catalogue_export, efficiency_table
from kernelindex_pipeline.defs.chain_values import IO_MANAGER_KEY, ChainValuesIOManager
from kernelindex_pipeline.defs.ci_chain import CI, LigerCiResource
from kernelindex_pipeline.defs.partitions import register_partitions
from kernelindex_pipeline.defs.resources import CatalogueResource
from tests.support import FIXTURES
from tests.support.dagster_support import LocalReleases, build_history_sdist, with_efficiency_settings

KNOWN = "nvidia-h200|0.5.10"
ABSENT = "nvidia-h200|9.9.9"


@pytest.fixture
def instance():
    with DagsterInstance.ephemeral() as instance:
        yield instance


@pytest.fixture
def resources(tmp_path, sqlite_url):
    files = [shutil.copy(FIXTURES / "liger-ci" / name, tmp_path / name) for name in ("0701bab.csv",)]
    return {
        "catalogue": CatalogueResource(url=sqlite_url),
        "releases": LocalReleases(sdist_path=str(build_history_sdist(tmp_path))),
        "ci": LigerCiResource(locators=[str(f) for f in files]),
        IO_MANAGER_KEY: ChainValuesIOManager(base_dir=str(tmp_path / "values")),
    }


def _counts(sqlite_url) -> dict:
    with CatalogueStore.open(sqlite_url) as store:
        return store.counts_by_kind()


def _export_requested(instance, resources, cursor):
    defs = Definitions(
        assets=[*CI.assets, catalogue_export, efficiency_table], resources=with_efficiency_settings(resources)
    )
    result = evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor)
    return bool(result.get_num_requested(catalogue_export.key)), result.cursor


def test_a_partition_added_by_hand_that_no_ci_file_names_fails_publishes_nothing_refreshes_nothing(
    instance, resources, sqlite_url
):
    register_partitions(instance, "ci", {tuple(KNOWN.split("|")): None})
    _requested, cursor = _export_requested(instance, resources, None)
    assert materialize(CI.assets, partition_key=KNOWN, instance=instance, resources=resources).success
    before = _counts(sqlite_url)
    assert sum(before.values()) > 0
    requested, cursor = _export_requested(instance, resources, cursor)
    assert requested  # the real partition's publication refreshes the catalogue ...
    requested, cursor = _export_requested(instance, resources, cursor)
    assert not requested  # ... once

    register_partitions(instance, "ci", {tuple(ABSENT.split("|")): None})  # what "Add a partition" does
    result = materialize(CI.assets, partition_key=ABSENT, instance=instance, resources=resources, raise_on_error=False)
    assert not result.success
    (failure,) = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key == "ci__benchmark_csv"
    message = failure.event_specific_data.error.message + str(failure.event_specific_data.user_failure_data)
    assert f"'{ABSENT}': not in the 1 listed Liger CI files" in message
    assert KNOWN in message  # the pairs the files do hold
    assert "Nothing was published" in message
    assert not result.asset_materializations_for_node("ci__catalogue_publication")
    assert _counts(sqlite_url) == before
    requested, cursor = _export_requested(instance, resources, cursor)
    assert not requested  # no refresh follows a run that published nothing
