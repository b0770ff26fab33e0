"""The sweep chain: the rows a release's own benchmark scripts measure on one of our GPUs (through
Dagster Pipes, defs/sweep.py), one partition per run, and the nightly schedule: each configured GPU
pool measures the newest Liger release at 02:00 UTC."""

from __future__ import annotations

import re

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
# A partition of Liger at one commit (a bisection step): GPU|git-<12 hex>, so the partition list shows what
# was swept at which commit beside the releases (the version part sorts after every release).
COMMIT_PREFIX = "git-"
COMMIT_KEY_HEX = 12


def commit_partition_key(gpu: str, commit: str) -> str:
    """The sweep partition of Liger built at `commit` (a full or short sha) on `gpu`."""
    return benchmark_partition_key(gpu, COMMIT_PREFIX + commit[:COMMIT_KEY_HEX].lower())


def commit_of_version(version: str) -> str | None:
    """The short sha a partition's version part names (`git-<hex>`), None for a release."""
    if version.startswith(COMMIT_PREFIX) and re.fullmatch(r"[0-9a-f]{7,40}", version[len(COMMIT_PREFIX) :]):
        return version[len(COMMIT_PREFIX) :]
    return None


def _read_sweep(context: AssetExecutionContext, partitions: list[str]) -> SourceRead:
    from kernelindex_pipeline.defs.sweep import run_commit_sweep_through_pipes, run_sweep_through_pipes, sweep_metadata

    (key,) = partitions  # one partition per sweep run (no single-run backfill policy)
    gpu, version = split_partition_key(key)
    config = context.op_execution_context.op_config
    kernels = list(config.get("kernels") or [])
    commit = commit_of_version(version)
    if commit is not None:
        part = run_commit_sweep_through_pipes(
            context,
            gpu,
            commit,
            kernels,
            config.get("harness") or "",
            context.resources.liger_git,
            context.resources.runner,
        )
    else:
        part = run_sweep_through_pipes(
            context, gpu, version, kernels, context.resources.releases, context.resources.runner
        )
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
        resources=frozenset({"releases", "runner", "liger_git"}),
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
            "kernels": Field([str], default_value=[], description="Kernels to sweep (empty: every script)."),
            "harness": Field(
                str,
                default_value="",
                description="A partition of a commit (GPU|git-<sha>): the commit whose benchmark scripts run "
                "(a bisection holds it fixed); empty: the partition's own commit.",
            ),
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
