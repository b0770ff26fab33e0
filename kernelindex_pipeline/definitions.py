"""The code location: every asset, check, job, sensor, schedule and resource, assembled once."""

from __future__ import annotations

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
    Definitions,
    in_process_executor,
)

from kernelindex_pipeline.defs import catalogue_assets, ci_chain, history_chain, sweep_chain
from kernelindex_pipeline.defs.environment_resources import resources_from_environment

# On by default: after any chain publishes, the catalogue-wide assets refresh once `dagster dev` (its
# daemon) runs; the import commands run the daemon too while they work.
catalogue_automation = AutomationConditionSensorDefinition(
    "catalogue_automation",
    target=AssetSelection.assets(*catalogue_assets.ALL),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=15,
    description="Refreshes the catalogue-wide assets (export, regressions, coverage, report) after publications.",
)


def build_definitions() -> Definitions:
    """Each chain's own definitions, the catalogue-wide assets and what the whole location shares."""
    return Definitions.merge(
        history_chain.defs(),
        ci_chain.defs(),
        sweep_chain.defs(),
        Definitions(
            assets=catalogue_assets.ALL,
            asset_checks=catalogue_assets.CHECKS,
            sensors=[catalogue_automation],
            # One process per run: a run that imports many partitions pays Dagster's start-up once, not per step.
            executor=in_process_executor,
            resources=resources_from_environment(),
        ),
    )


defs = build_definitions()
