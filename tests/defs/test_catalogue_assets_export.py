"""The catalogue_export asset through Dagster: a refresh after a new publication writes its part and keeps the rest,
and says so; the KernelIndex files can be left out of the nightly refresh (`kernelindex_files`)."""

from __future__ import annotations

import json
from pathlib import Path

from dagster import DagsterInstance, materialize

from kernelindex_pipeline.catalogue.export import SUBMISSION_NAME
from kernelindex_pipeline.catalogue.parts import MANIFEST_NAME
from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.defs.catalogue_assets import catalogue_export, efficiency_table
from kernelindex_pipeline.defs.resources import CatalogueResource, EfficiencySettingsResource
from tests.support import factories


def _refresh(instance, sqlite_url: str, out: Path, **export_config):
    result = materialize(
        [efficiency_table, catalogue_export],
        instance=instance,
        resources={"catalogue": CatalogueResource(url=sqlite_url), "efficiency_settings": EfficiencySettingsResource()},
        run_config={
            "ops": {
                "efficiency_table": {"config": {"out_dir": str(out / "efficiency")}},
                "catalogue_export": {"config": {"out_dir": str(out / "exports"), **export_config}},
            }
        },
    )
    assert result.success
    (materialization,) = result.asset_materializations_for_node("catalogue_export")
    return materialization.metadata


def test_a_refresh_writes_the_new_publications_part_and_keeps_the_rest(tmp_path, sqlite_url):
    seeds = factories.seed_manifests()
    with CatalogueStore.open(sqlite_url) as store:
        store.publish(seeds, partition="history-0.6")
    with DagsterInstance.ephemeral() as instance:
        first = _refresh(instance, sqlite_url, tmp_path)
        assert first["recomputed"].value.startswith("the 1 part written (no manifest: a first export)")
        assert "the KernelIndex files written whole" in first["recomputed"].value
        assert (tmp_path / "exports" / SUBMISSION_NAME).is_file()
        with CatalogueStore.open(sqlite_url) as store:
            store.publish(factories.cloned_runs(seeds, 5), partition="sweep-1")
        night = _refresh(instance, sqlite_url, tmp_path, kernelindex_files=False)
    assert night["recomputed"].value == (
        "1 of 2 parts written (new publications 2), 1 kept; manifest rewritten; no KernelIndex files "
        "(kernelindex_files off)"
    )
    assert night["parts_written"].value == [2] and night["records"].value == len(seeds) + 5
    assert night["table_rows"].value["runs"] == sum(m["kind"] == "BenchmarkRun" for m in seeds.values()) + 5
    assert "kernelindex_submission" not in night and not (tmp_path / "exports" / SUBMISSION_NAME).exists()
    described = json.loads(Path(night["manifest"].value).read_text())
    assert [p["partition"] for p in described["parts"]] == ["history-0.6", "sweep-1"]
    assert Path(night["manifest"].value).name == MANIFEST_NAME
