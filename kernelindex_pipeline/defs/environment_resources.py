"""The code location's resources, configured from the environment: built here once, for the
Definitions (`definitions.py`) and for the import commands (`defs/launch.py`), so nothing under
`defs/` needs to import the root `definitions` module."""

from __future__ import annotations

import os

from dagster import EnvVar

from kernelindex_pipeline.defs.chain_values import IO_MANAGER_KEY, ChainValuesIOManager
from kernelindex_pipeline.defs.ci_chain import CI_FILES_ENV, LigerCiResource
from kernelindex_pipeline.defs.resources import (
    BenchmarkRunnerResource,
    BisectionTriggerResource,
    CatalogueResource,
    EfficiencySettingsResource,
    GpuFleetResource,
    LigerGitResource,
    LigerReleaseResource,
    RegressionSettingsResource,
)
from kernelindex_pipeline.home import CATALOGUE_URL_ENV, LIGER_GIT_ENV


def _from_env(name: str):
    """EnvVar when the variable is set (the UI then shows its name, never its value), else the default."""
    return EnvVar(name) if os.environ.get(name) else ""


def resources_from_environment() -> dict:
    """Every resource by key, configured from the environment as it is now."""
    return {
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
        "efficiency_settings": EfficiencySettingsResource(),
        "liger_git": LigerGitResource(path=_from_env(LIGER_GIT_ENV)),
        "bisection_trigger": BisectionTriggerResource(),
    }
