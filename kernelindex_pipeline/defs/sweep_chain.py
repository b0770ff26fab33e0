"""The sweep chain: the rows a release's own benchmark scripts measure on one of our GPUs (through
Dagster Pipes, defs/sweep.py), one partition per run, and the nightly schedule: each configured GPU
pool measures the newest Liger release at 02:00 UTC."""

from __future__ import annotations

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    DefaultScheduleStatus,
    Definitions,
    Field,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from kernelindex_pipeline.defs.chain import ChainSpec, SourceRead, build_chain
from kernelindex_pipeline.defs.partitions import benchmark_partition_key, register_partitions, split_partition_key
from kernelindex_pipeline.defs.resources import GpuFleetResource, LigerReleaseResource

GPU_POOL_TAG = "kernelindex/gpu_pool"


def _read_sweep(context: AssetExecutionContext, partitions: list[str]) -> SourceRead:
    from kernelindex_pipeline.defs.sweep import run_sweep_through_pipes, sweep_metadata

    (key,) = partitions  # one partition per sweep run (no single-run backfill policy)
    gpu, version = split_partition_key(key)
    kernels = list(context.op_execution_context.op_config.get("kernels") or [])
    part = run_sweep_through_pipes(context, gpu, version, kernels, context.resources.releases, context.resources.runner)
    failed = part.sweep.failed
    check = AssetCheckResult(
        check_name="sweep_scripts_succeeded",
        passed=not failed,
        severity=AssetCheckSeverity.WARN,
        metadata={"scripts": len(part.sweep.outcomes), "failed": "\n".join(o.summary() for o in failed) or "none"},
    )
    return SourceRead({key: [part]}, metadata=sweep_metadata(part.sweep), checks=[check])


SWEEP = build_chain(
    ChainSpec(
        source="sweep",
        description=(
            "The rows the partition's Liger release's own benchmark scripts just measured on a GPU of this type, "
            "run through Dagster Pipes in a process (or pod) of its own; per-script outcomes in the metadata."
        ),
        read=_read_sweep,
        job_name="gpu_sweep_job",
        job_description="Run the release's benchmark scripts on a GPU of the partition's type and publish what was measured.",
        resources=frozenset({"releases", "runner"}),
        single_run=False,
        how_to_import=(
            "Set KERNELINDEX_GPU_POOLS and turn on the nightly_gpu_sweep schedule, or add a partition (GPU|VERSION) "
            "to sweep_partitions and launch gpu_sweep_job for it."
        ),
        source_checks=(
            (
                "sweep_scripts_succeeded",
                "Every benchmark script of the sweep ended ok (a warning: the good rows still go on).",
            ),
        ),
        config_schema={
            "kernels": Field([str], default_value=[], description="Kernels to sweep (empty: every script).")
        },
    )
)


@schedule(
    name="nightly_gpu_sweep",
    job=SWEEP.job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.STOPPED,
    description="One sweep per configured GPU pool over the newest Liger release, nightly at 02:00 UTC.",
)
def nightly_gpu_sweep(context: ScheduleEvaluationContext, fleet: GpuFleetResource, releases: LigerReleaseResource):
    pools = fleet.pools()
    if not pools:
        return SkipReason("no GPU pool configured (set KERNELINDEX_GPU_POOLS, e.g. nvidia-h100-80gb-hbm3)")
    newest = releases.history_version()
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    # A sweep partition exists once it is asked for: the pools' pairs with the newest release.
    register_partitions(context.instance, "sweep", [(pool, newest) for pool in pools])
    return [
        RunRequest(
            run_key=f"sweep:{day}:{pool}|{newest}",
            partition_key=benchmark_partition_key(pool, newest),
            # dagster.yaml allows one run per value of this tag: a GPU pool never runs two sweeps at once.
            tags={GPU_POOL_TAG: pool},
        )
        for pool in pools
    ]


def defs() -> Definitions:
    """The sweep chain's assets, job and schedule."""
    return Definitions(assets=SWEEP.assets, jobs=[SWEEP.job], schedules=[nightly_gpu_sweep])
