"""Sensors: the history and CI sources turn new or changed rows into partition runs.

Each sensor registers the (GPU, version) pairs its source has, in version order, and requests one run
per partition whose content changed: the run key carries the partition's content digest, and Dagster
launches a run key once, so re-evaluating unchanged input launches nothing.
"""

from __future__ import annotations

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SensorResult, sensor

from kernelindex_pipeline.defs.partitions import benchmark_partition_key, register_partitions
from kernelindex_pipeline.defs.resources import LigerReleaseResource
from kernelindex_pipeline.defs.sources import CI, HISTORY, HISTORY_RELEASE_TAG, LigerCiResource
from kernelindex_pipeline.liger.partition import slice_history
from kernelindex_pipeline.liger.release import read_history_csv


@sensor(
    name="liger_history_sensor",
    job=HISTORY.job,
    minimum_interval_seconds=3600,
    default_status=DefaultSensorStatus.STOPPED,
    description=(
        "Reads the newest release's history CSV, registers the GPU x version pairs it has and requests an "
        "import run for each partition whose rows changed (run keys are content digests)."
    ),
)
def liger_history_sensor(context: SensorEvaluationContext, releases: LigerReleaseResource):
    version = releases.history_version()
    data, _snapshot = read_history_csv(releases.fetch(version))
    slices = slice_history(data)
    if slices.unattributable_rows:
        context.log.warning(
            f"{len(slices.unattributable_rows)} rows of the {version} history name no usable GPU or version "
            f"(first rows: {slices.unattributable_rows[:10]}); they belong to no partition"
        )
    added = register_partitions(context.instance, "history", slices.partitions)
    runs = [
        RunRequest(
            # Same rows, same key: Dagster launches a run key once, so re-evaluation launches nothing.
            run_key=f"history:{part.gpu}|{part.liger_version}:{part.content_digest}",
            partition_key=benchmark_partition_key(part.gpu, part.liger_version),
            tags={HISTORY_RELEASE_TAG: version},
        )
        for part in slices.partitions.values()
    ]
    context.log.info(
        f"history of liger-kernel {version}: {slices.rows_read} rows in {len(runs)} partitions ({len(added)} new)"
    )
    return SensorResult(run_requests=runs)


@sensor(
    name="liger_ci_sensor",
    job=CI.job,
    minimum_interval_seconds=3600,
    default_status=DefaultSensorStatus.STOPPED,
    description=(
        "Reads every listed Liger CI results file, registers the GPU x version pairs they name and requests an "
        "import run for each partition whose files changed (run keys are content digests of its parts)."
    ),
)
def liger_ci_sensor(context: SensorEvaluationContext, ci: LigerCiResource):
    gathered = ci.gather()
    added = register_partitions(context.instance, "ci", gathered.parts)
    runs = [
        RunRequest(
            run_key=f"ci:{gpu}|{version}:{gathered.digest((gpu, version))}",
            partition_key=benchmark_partition_key(gpu, version),
        )
        for gpu, version in gathered.parts
    ]
    context.log.info(f"{len(gathered.files)} CI files: {len(runs)} partitions ({len(added)} new)")
    return SensorResult(run_requests=runs)
