"""The history chain: the rows Liger-Kernel committed (its newest release's history CSV), read per
partition, and the sensor that turns new or changed rows into partition runs.

The sensor registers the (GPU, version) pairs the history has, in version order, and requests one run
per partition whose content changed, by the rule the import commands use (defs/import_plan.py: its
content digest differs from the one its last publication recorded). The run key carries that digest,
and Dagster launches a run key once, so re-evaluating unchanged input launches nothing either.
"""

from __future__ import annotations

from dagster import (
    AssetExecutionContext,
    Definitions,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)

from kernelindex_pipeline.defs.chain import (
    SOURCE_SENSOR_SETTINGS,
    ChainSpec,
    SourceRead,
    absent_partitions,
    build_chain,
)
from kernelindex_pipeline.defs.import_plan import changed_partitions, content_run_key, history_digests
from kernelindex_pipeline.defs.partitions import benchmark_partition_key, register_partitions, split_partition_key
from kernelindex_pipeline.defs.resources import LigerReleaseResource
from kernelindex_pipeline.liger import partition as liger_partition
from kernelindex_pipeline.liger.partition import slice_history
from kernelindex_pipeline.liger.release import read_history_csv

HISTORY_RELEASE_TAG = "kernelindex/history_release"


def _read_history(context: AssetExecutionContext, partitions: list[str]) -> SourceRead:
    releases = context.resources.releases
    # Sensors and the import commands pin the release in a tag, so a run never asks the index again.
    version = context.run.tags.get(HISTORY_RELEASE_TAG) or releases.history_version()
    artifact = releases.fetch(version)
    parts = {}
    for key in partitions:
        gpu, liger_version = split_partition_key(key)
        parts[key] = [liger_partition.history_partition_csv(artifact, gpu, liger_version)]
    missing = [key for key in partitions if not parts[key][0].snapshot["rows"]]  # a pair is in it by its rows
    if missing:
        known = [benchmark_partition_key(*pair) for pair in liger_partition.history_pairs(artifact)]
        raise absent_partitions(f"the history of liger-kernel {version}", missing, known)
    return SourceRead(
        parts, metadata={"history_release": version, "sdist_sha256": artifact.sha256, "sdist": artifact.locator}
    )


HISTORY = build_chain(
    ChainSpec(
        source="history",
        description=(
            "Per partition, the rows of the newest Liger release's committed history CSV for that GPU and Liger "
            "version (the release is pinned by the run's kernelindex/history_release tag)."
        ),
        read=_read_history,
        job_name="history_import_job",
        job_description="Import the rows Liger-Kernel committed (its newest release's history CSV) and publish them.",
        resources=frozenset({"releases"}),
        single_run=True,
        how_to_import="Import it with `kernelindex-pipeline import-history` (or turn on liger_history_sensor).",
    )
)


@sensor(
    name="liger_history_sensor",
    job=HISTORY.job,
    **SOURCE_SENSOR_SETTINGS,
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


def defs() -> Definitions:
    """The history chain's assets, job and sensor."""
    return Definitions(assets=HISTORY.assets, jobs=[HISTORY.job], sensors=[liger_history_sensor])
