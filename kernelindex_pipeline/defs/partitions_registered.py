"""`partitions_registered`: a chain's first asset says whether anything was ever imported into the chain.

Why a check, and why a warning: in Dagster 1.13 a dynamically partitioned asset with no registered
partition has nothing "missing", so the UI paints a never-imported chain green, and no definition
changes that colour (a partitioned node's colour comes from its partition counts alone). A failed
ERROR-severity check would turn the node red, "failed", which says something broke when nothing ran.
A failed WARN-severity check is the UI's own way to say "look at this" without claiming a failure: the
lineage node and the asset's Checks tab show it, and its description names the command that imports
the chain. It is not blocking: it gates nothing.

Who evaluates it: the chain's benchmark_csv step reports it with every materialization (its
partitions exist then), and `chain_partitions_sensor` (on by default, so it ticks in whichever daemon
runs, `dagster dev`'s or an import command's) reports it without a run whenever a chain's number of
registered partitions differs from what its latest evaluation said. A fresh instance shows every chain's
state at the daemon's first tick; a tick where nothing changed writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    DagsterInstance,
    DefaultSensorStatus,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from kernelindex_pipeline.defs.partitions import registered_keys

CHECK_NAME = "partitions_registered"
COUNT_KEY = "registered_partitions"  # the metadata key the sensor reads back to see whether anything changed
SENSOR_NAME = "chain_partitions_sensor"


def check_spec(asset_key: AssetKey) -> AssetCheckSpec:
    # Not partitioned even on the sweep chain: it is about the chain's set of partitions, not one of them.
    return AssetCheckSpec(
        CHECK_NAME,
        asset=asset_key,
        blocking=False,
        description="The chain has partitions registered (a warning, not a failure: the chain was never imported).",
    )


def _facts(source: str, count: int, how_to_import: str) -> dict:
    """What one evaluation says: passed, severity, description and metadata, for a run and a sensor alike."""
    if count:
        description = f"{count} partitions registered in the {source} chain"
    else:
        description = f"No partition registered: the {source} chain was never imported. {how_to_import}"
    return {
        "passed": bool(count),
        "severity": AssetCheckSeverity.WARN,
        "description": description,
        "metadata": {COUNT_KEY: count, "how_to_import": how_to_import},
    }


def check_result(instance: DagsterInstance, source: str, asset_key: AssetKey, how_to_import: str) -> AssetCheckResult:
    """The evaluation a chain's benchmark_csv step reports with its materialization."""
    count = len(registered_keys(instance, source))
    return AssetCheckResult(asset_key=asset_key, check_name=CHECK_NAME, **_facts(source, count, how_to_import))


def _last_reported_count(instance: DagsterInstance, asset_key: AssetKey) -> int | None:
    record = instance.get_latest_asset_check_evaluation_record(AssetCheckKey(asset_key, CHECK_NAME))
    if record is None or record.event is None or record.event.dagster_event is None:
        return None  # never evaluated (or only planned by a run that has not reported yet)
    evaluation = record.event.dagster_event.event_specific_data
    value = getattr(evaluation, "metadata", {}).get(COUNT_KEY)
    return None if value is None else value.value


def changed_evaluations(
    instance: DagsterInstance, chains: Iterable[tuple[str, AssetKey, str]]
) -> list[AssetCheckEvaluation]:
    """A runless evaluation for each (source, first asset, how to import) whose partition count changed."""
    evaluations = []
    for source, asset_key, how_to_import in chains:
        count = len(registered_keys(instance, source))
        if _last_reported_count(instance, asset_key) != count:
            evaluations.append(
                AssetCheckEvaluation(
                    asset_key=asset_key, check_name=CHECK_NAME, **_facts(source, count, how_to_import), blocking=False
                )
            )
    return evaluations


def chain_partitions_sensor(chains: list[tuple[str, AssetKey, str]]):
    """The sensor that keeps each chain's `partitions_registered` current without launching a run."""

    @sensor(
        name=SENSOR_NAME,
        minimum_interval_seconds=30,
        default_status=DefaultSensorStatus.RUNNING,
        description=(
            "Says on each chain's benchmark_csv whether the chain has any partition (a warning check, "
            "partitions_registered, naming the command that imports it); launches no run."
        ),
    )
    def _sensor(context: SensorEvaluationContext):
        evaluations = changed_evaluations(context.instance, chains)
        if not evaluations:
            return SkipReason("no chain's number of partitions changed")
        return SensorResult(asset_events=evaluations)

    return _sensor
