"""Sensors: discover new Liger releases, and import the history partitions whose content changed."""


from dagster import (
    AddDynamicPartitionsRequest,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)
from packaging.version import InvalidVersion, Version

from kernelindex_pipeline.defs.assets import HISTORY_RELEASE_TAG
from kernelindex_pipeline.defs.jobs import history_import_job
from kernelindex_pipeline.defs.partitions import (
    GPU_DIMENSION,
    VERSION_DIMENSION,
    benchmark_partition_key,
    checked_partition_value,
)
from kernelindex_pipeline.defs.resources import LigerReleaseResource
from kernelindex_pipeline.liger.partition import slice_history
from kernelindex_pipeline.liger.release import read_history_csv

# Releases older than this ship no benchmark history worth a partition of their own.
FIRST_TRACKED_RELEASE = Version("0.1.0")


def _new_values(context: SensorEvaluationContext, dimension: str, values) -> list[str]:
    existing = set(context.instance.get_dynamic_partitions(dimension))
    return [value for value in values if value not in existing]


@sensor(
    name="liger_release_sensor",
    minimum_interval_seconds=6 * 3600,
    default_status=DefaultSensorStatus.STOPPED,
    description="Adds a liger_version partition for every liger-kernel release the package index publishes.",
)
def liger_release_sensor(context: SensorEvaluationContext, releases: LigerReleaseResource):
    versions = []
    for version in releases.versions():
        try:
            if Version(version) >= FIRST_TRACKED_RELEASE:
                versions.append(checked_partition_value(VERSION_DIMENSION, version))
        except InvalidVersion:
            context.log.warning(f"ignoring release {version!r}: not a PEP 440 version")
    new = _new_values(context, VERSION_DIMENSION, versions)
    if not new:
        return SkipReason(f"no new release among {len(versions)} on the index")
    context.log.info(f"new liger-kernel releases: {', '.join(new)}")
    return SensorResult(dynamic_partitions_requests=[AddDynamicPartitionsRequest(VERSION_DIMENSION, new)])


@sensor(
    name="liger_history_sensor",
    job=history_import_job,
    minimum_interval_seconds=3600,
    default_status=DefaultSensorStatus.STOPPED,
    description=(
        "Reads the newest release's history CSV, adds the GPU and version partitions it names and requests "
        "an import run for each partition whose rows changed (run keys are content digests)."
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
    requests = []
    for dimension, values in ((GPU_DIMENSION, slices.gpus), (VERSION_DIMENSION, slices.versions)):
        new = _new_values(context, dimension, values)
        if new:
            requests.append(AddDynamicPartitionsRequest(dimension, new))
    runs = [
        RunRequest(
            # Same rows, same key: Dagster launches a run key once, so re-evaluation launches nothing.
            run_key=f"history:{part.gpu}|{part.liger_version}:{part.content_digest}",
            partition_key=benchmark_partition_key(part.gpu, part.liger_version),
            tags={HISTORY_RELEASE_TAG: version},
        )
        for part in slices.partitions.values()
    ]
    context.log.info(f"history of liger-kernel {version}: {slices.rows_read} rows in {len(runs)} partitions")
    return SensorResult(run_requests=runs, dynamic_partitions_requests=requests)
