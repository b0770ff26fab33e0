"""The code location: every asset, check, job, sensor, schedule and resource, assembled once."""

from __future__ import annotations

import os

from dagster import Definitions, EnvVar

from kernelindex_pipeline.defs import assets, catalogue_assets
from kernelindex_pipeline.defs.jobs import gpu_sweep_job, history_import_job
from kernelindex_pipeline.defs.resources import (
    CATALOGUE_URL_ENV,
    BenchmarkRunnerResource,
    CatalogueResource,
    GpuFleetResource,
    LigerReleaseResource,
)
from kernelindex_pipeline.defs.schedules import nightly_gpu_sweep
from kernelindex_pipeline.defs.sensors import liger_history_sensor, liger_release_sensor


def _from_env(name: str):
    """EnvVar when the variable is set (the UI then shows its name, never its value), else the default."""
    return EnvVar(name) if os.environ.get(name) else ""


def build_definitions() -> Definitions:
    return Definitions(
        assets=[
            assets.liger_release,
            assets.benchmark_csv,
            assets.benchmark_rows,
            assets.kernelindex_records,
            assets.catalogue_publication,
            *catalogue_assets.ALL,
        ],
        asset_checks=catalogue_assets.CHECKS,
        jobs=[history_import_job, gpu_sweep_job],
        sensors=[liger_release_sensor, liger_history_sensor],
        schedules=[nightly_gpu_sweep],
        resources={
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
        },
    )


defs = build_definitions()
