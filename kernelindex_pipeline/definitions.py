"""The code location: every asset, check, job, sensor, schedule and resource, assembled once."""

from __future__ import annotations

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
    Definitions,
    in_process_executor,
)

from kernelindex_pipeline.defs import bisection_job, catalogue_assets, ci_chain, history_chain, sweep_chain
from kernelindex_pipeline.defs.environment_resources import resources_from_environment
from kernelindex_pipeline.defs.partitions_registered import chain_partitions_sensor
from kernelindex_pipeline.defs.sources import CHAINS

# On by default: after any chain publishes, the catalogue-wide assets refresh once `dagster dev` (its
# daemon) runs; the import commands run the daemon too while they work.
catalogue_automation = AutomationConditionSensorDefinition(
    "catalogue_automation",
    target=AssetSelection.assets(*catalogue_assets.ALL),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=15,
    description=(
        "Refreshes the catalogue-wide assets (export, regressions, coverage, site, efficiency table) after publications."
    ),
)


# On by default: a chain never imported shows a warning on its first asset, naming the command that imports it.
chain_partitions = chain_partitions_sensor(
    [(source, chain.keys["benchmark_csv"], chain.spec.how_to_import) for source, chain in CHAINS.items()]
)


def build_definitions() -> Definitions:
    """Each chain's own definitions, the catalogue-wide assets and what the whole location shares."""
    return Definitions.merge(
        history_chain.defs(),
        ci_chain.defs(),
        sweep_chain.defs(),
        bisection_job.defs(),
        Definitions(
            assets=catalogue_assets.ALL,
            asset_checks=catalogue_assets.CHECKS,
            sensors=[catalogue_automation, chain_partitions],
            # One process per run: a run that imports many partitions pays Dagster's start-up once, not per step.
            executor=in_process_executor,
            resources=resources_from_environment(),
        ),
    )


defs = build_definitions()
