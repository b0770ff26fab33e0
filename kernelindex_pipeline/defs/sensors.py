"""Sensors: the history and CI sources turn new or changed rows into partition runs.

Each sensor registers the (GPU, version) pairs its source has, in version order, and requests one run
per partition whose content changed, by the rule the import commands use (defs/import_plan.py: its
content digest differs from the one its last publication recorded, so a partition `import-ci` already
imported is not imported again). The run key carries that digest, and Dagster launches a run key once,
so re-evaluating unchanged input launches nothing either.
"""

from __future__ import annotations

from dagster import DefaultSensorStatus, RunRequest, SensorEvaluationContext, SensorResult, sensor

from kernelindex_pipeline.defs.import_plan import changed_partitions, ci_digests, content_run_key, history_digests
from kernelindex_pipeline.defs.partitions import register_partitions
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
    digests = history_digests(slices.partitions)
    runs = [
        RunRequest(
            # Same rows, same key: Dagster launches a run key once, so re-evaluation launches nothing.
            run_key=content_run_key("history", key, digests[key]),
            partition_key=key,
            tags={HISTORY_RELEASE_TAG: version},
        )
        for key in changed_partitions(context.instance, HISTORY.publication, digests)
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
    digests = ci_digests(gathered)
    runs = [
        RunRequest(run_key=content_run_key("ci", key, digests[key]), partition_key=key)
        for key in changed_partitions(context.instance, CI.publication, digests)
    ]
    context.log.info(f"{len(gathered.files)} CI files: {len(runs)} partitions ({len(added)} new)")
    return SensorResult(run_requests=runs)
