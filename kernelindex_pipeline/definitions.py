"""The code location: every asset, check, job, sensor, schedule and resource, assembled once."""

from __future__ import annotations

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
    Definitions,
    in_process_executor,
)

from kernelindex_pipeline.defs import catalogue_assets
from kernelindex_pipeline.defs.environment_resources import resources_from_environment
from kernelindex_pipeline.defs.schedules import nightly_gpu_sweep
from kernelindex_pipeline.defs.sensors import liger_ci_sensor, liger_history_sensor
from kernelindex_pipeline.defs.sources import CHAINS

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
    return Definitions(
        assets=[*(asset for chain in CHAINS.values() for asset in chain.assets), *catalogue_assets.ALL],
        asset_checks=catalogue_assets.CHECKS,
        jobs=[chain.job for chain in CHAINS.values()],
        sensors=[liger_history_sensor, liger_ci_sensor, catalogue_automation],
        schedules=[nightly_gpu_sweep],
        # One process per run: a run that imports many partitions pays Dagster's start-up once, not per step.
        executor=in_process_executor,
        resources=resources_from_environment(),
    )


defs = build_definitions()
