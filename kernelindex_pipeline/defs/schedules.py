"""The nightly GPU sweep: each configured GPU pool measures the newest Liger release at 02:00 UTC."""

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from kernelindex_pipeline.defs.partitions import benchmark_partition_key, register_partitions
from kernelindex_pipeline.defs.resources import GpuFleetResource, LigerReleaseResource
from kernelindex_pipeline.defs.sources import SWEEP

GPU_POOL_TAG = "kernelindex/gpu_pool"


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
