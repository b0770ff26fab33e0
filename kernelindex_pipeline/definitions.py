"""The code location: every asset, check, job, sensor, schedule and resource, assembled once."""

from __future__ import annotations

import os

from dagster import (
    AssetSelection,
    AutomationConditionSensorDefinition,
    DefaultSensorStatus,
    Definitions,
    EnvVar,
    in_process_executor,
)

from kernelindex_pipeline.defs import catalogue_assets
from kernelindex_pipeline.defs.chain import IO_MANAGER_KEY, ChainValuesIOManager
from kernelindex_pipeline.defs.resources import (
    CATALOGUE_URL_ENV,
    LIGER_GIT_ENV,
    BenchmarkRunnerResource,
    CatalogueResource,
    GpuFleetResource,
    LigerGitResource,
    LigerReleaseResource,
    RegressionSettingsResource,
)
from kernelindex_pipeline.defs.schedules import nightly_gpu_sweep
from kernelindex_pipeline.defs.sensors import liger_ci_sensor, liger_history_sensor
from kernelindex_pipeline.defs.sources import CHAINS, CI_FILES_ENV, LigerCiResource

# On by default: after any chain publishes, the catalogue-wide assets refresh once `dagster dev` (its
# daemon) runs; the import commands run the daemon too while they work.
catalogue_automation = AutomationConditionSensorDefinition(
    "catalogue_automation",
    target=AssetSelection.assets(*catalogue_assets.ALL),
    default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=15,
    description="Refreshes the catalogue-wide assets (export, regressions, coverage, report) after publications.",
)


def _from_env(name: str):
    """EnvVar when the variable is set (the UI then shows its name, never its value), else the default."""
    return EnvVar(name) if os.environ.get(name) else ""


def build_definitions() -> Definitions:
    return Definitions(
        assets=[*(asset for chain in CHAINS.values() for asset in chain.assets), *catalogue_assets.ALL],
        asset_checks=catalogue_assets.CHECKS,
        jobs=[chain.job for chain in CHAINS.values()],
        sensors=[liger_history_sensor, liger_ci_sensor, catalogue_automation],
        schedules=[nightly_gpu_sweep],
        # One process per run: a run that imports many partitions pays Dagster's start-up once, not per step.
        executor=in_process_executor,
        resources={
            IO_MANAGER_KEY: ChainValuesIOManager(),
            "ci": LigerCiResource(list_file=_from_env(CI_FILES_ENV)),
            "catalogue": CatalogueResource(url=_from_env(CATALOGUE_URL_ENV)),
            "releases": LigerReleaseResource(
                cache_dir=_from_env("KERNELINDEX_CACHE_DIR"), history_release=_from_env("KERNELINDEX_HISTORY_RELEASE")
            ),
            "runner": BenchmarkRunnerResource(
                runner=os.environ.get("KERNELINDEX_SWEEP_RUNNER") or "subprocess",
                image=_from_env("KERNELINDEX_SWEEP_IMAGE"),
                namespace=os.environ.get("KERNELINDEX_SWEEP_NAMESPACE") or "kernelindex",
                cache_volume_claim=os.environ.get("KERNELINDEX_SWEEP_CACHE_CLAIM") or "",
            ),
            "fleet": GpuFleetResource(gpu_pools=_from_env("KERNELINDEX_GPU_POOLS")),
            "regression_settings": RegressionSettingsResource(),
            "liger_git": LigerGitResource(path=_from_env(LIGER_GIT_ENV)),
        },
    )


defs = build_definitions()
