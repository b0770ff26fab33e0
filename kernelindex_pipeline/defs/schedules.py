"""The nightly GPU sweep: each configured GPU pool measures the newest Liger release at 02:00 UTC."""


from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)
from packaging.version import Version

from kernelindex_pipeline.defs.jobs import gpu_sweep_job
from kernelindex_pipeline.defs.partitions import GPU_DIMENSION, VERSION_DIMENSION, benchmark_partition_key
from kernelindex_pipeline.defs.resources import GpuFleetResource

GPU_POOL_TAG = "kernelindex/gpu_pool"


@schedule(
    name="nightly_gpu_sweep",
    job=gpu_sweep_job,
    cron_schedule="0 2 * * *",
    execution_timezone="UTC",
    default_status=DefaultScheduleStatus.STOPPED,
    description="One sweep per configured GPU pool over the newest Liger version, nightly at 02:00 UTC.",
)
def nightly_gpu_sweep(context: ScheduleEvaluationContext, fleet: GpuFleetResource):
    pools = fleet.pools()
    if not pools:
        return SkipReason("no GPU pool configured (set KERNELINDEX_GPU_POOLS, e.g. nvidia-h100-80gb-hbm3)")
    versions = context.instance.get_dynamic_partitions(VERSION_DIMENSION)
    if not versions:
        return SkipReason("no liger_version partition yet: let liger_release_sensor run first")
    newest = max(versions, key=Version)
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    missing_gpus = [pool for pool in pools if pool not in set(context.instance.get_dynamic_partitions(GPU_DIMENSION))]
    if missing_gpus:
        context.instance.add_dynamic_partitions(GPU_DIMENSION, missing_gpus)
    return [
        RunRequest(
            run_key=f"sweep:{day}:{pool}|{newest}",
            partition_key=benchmark_partition_key(pool, newest),
            # dagster.yaml allows one run per value of this tag: a GPU pool never runs two sweeps at once.
            tags={GPU_POOL_TAG: pool},
        )
        for pool in pools
    ]
