"""The catalogue-wide assets refresh when the catalogue's content changed, not whenever a chain ran (issue 21
item 1): each publication's data version is the catalogue's content fingerprint, and their automation condition
(CATALOGUE_AUTOMATION) looks at that. Evaluated with Dagster's own evaluator on the history chain's job in
process. (In process, Dagster's plain eager condition does not re-request after the no-op run either, so the
middle step checks the fingerprint's stability more than the condition; the content-change step needs both.)"""

from __future__ import annotations

from dagster import Definitions, evaluate_automation_conditions

from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.defs.catalogue_assets import catalogue_export, efficiency_table
from kernelindex_pipeline.defs.history_chain import HISTORY
from kernelindex_pipeline.defs.import_plan import RANGE_END_TAG, RANGE_START_TAG
from kernelindex_pipeline.defs.partitions import registered_keys
from tests.defs.test_history_chain import CHAIN, instance, resources  # noqa: F401 (fixtures)
from tests.support.dagster_support import LocalReleases, build_history_sdist, history_rows, with_efficiency_settings

EXPORT = catalogue_export.key


def _import(dagster_instance, chain_resources):
    """One run of history_import_job over every registered partition, as import-history launches it."""
    keys = registered_keys(dagster_instance, "history")
    defs = Definitions(
        assets=[*CHAIN, catalogue_export, efficiency_table],
        jobs=[HISTORY.job],
        resources=with_efficiency_settings(chain_resources),
    )
    return defs.resolve_job_def(HISTORY.job.name).execute_in_process(
        instance=dagster_instance, tags={RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[-1]}
    )


def _publication(result) -> dict:
    """A run's publication over every partition: each partition's insertions added up, and the catalogue's
    fingerprint after the run (one materialization per partition, each with its own counts)."""
    events = result.asset_materializations_for_node("history__catalogue_publication")
    assert events
    metadata = [{key: value.value for key, value in event.metadata.items()} for event in events]
    (fingerprint,) = {each["catalogue_fingerprint"] for each in metadata}
    return {"inserted": sum(each["inserted"] for each in metadata), "catalogue_fingerprint": fingerprint}


def _requested(dagster_instance, chain_resources, cursor):
    """Whether the catalogue export is requested at this evaluation, and the cursor for the next one."""
    defs = Definitions(
        assets=[*CHAIN, catalogue_export, efficiency_table], resources=with_efficiency_settings(chain_resources)
    )
    result = evaluate_automation_conditions(defs=defs, instance=dagster_instance, cursor=cursor)
    return ({EXPORT} if result.get_num_requested(EXPORT) else set()), result.cursor


def test_only_a_change_of_content_refreshes_the_catalogue(instance, resources, tmp_path, sqlite_url):  # noqa: F811
    requested, cursor = _requested(instance, resources, None)
    assert requested == set()  # nothing published yet: nothing to refresh (the dependency is missing)

    first = _import(instance, resources)
    assert first.success and _publication(first)["inserted"] > 0
    requested, cursor = _requested(instance, resources, cursor)
    assert requested == {EXPORT}

    # the same rows again: the chain runs and publishes nothing; the fingerprint stays, no refresh
    with CatalogueStore.open(sqlite_url) as store:
        fingerprint = store.content_fingerprint()
    again = _import(instance, resources)
    assert again.success and _publication(again)["inserted"] == 0
    assert _publication(again)["catalogue_fingerprint"] == fingerprint
    requested, cursor = _requested(instance, resources, cursor)
    assert requested == set()

    # one new row upstream: new records, a new fingerprint, a refresh
    (tmp_path / "more").mkdir()
    more = dict(
        resources,
        releases=LocalReleases(
            sdist_path=str(build_history_sdist(tmp_path / "more", rows=history_rows(extra_h100_rows=1)))
        ),
    )
    changed = _import(instance, more)
    assert changed.success and _publication(changed)["inserted"] > 0
    assert _publication(changed)["catalogue_fingerprint"] != fingerprint
    requested, cursor = _requested(instance, resources, cursor)
    assert requested == {EXPORT}
