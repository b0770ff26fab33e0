"""The main job: import every partition of the newest upstream history through Dagster.

Used by `kernelindex-pipeline import-history` (the README's first command) and by the
benchmark. Runs go into the Dagster instance under DAGSTER_HOME, so `dagster dev` shows
them afterwards, with their materializations, checks and metadata.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from dagster import DagsterInstance, build_resources

from kernelindex_pipeline.defs.assets import HISTORY_RELEASE_TAG
from kernelindex_pipeline.defs.partitions import GPU_DIMENSION, VERSION_DIMENSION, benchmark_partition_key
from kernelindex_pipeline.liger.partition import slice_history
from kernelindex_pipeline.liger.release import read_history_csv


class UnknownPartitions(ValueError):
    """Partitions asked for that the history does not have; raised before any of them runs."""


@dataclass
class HistoryImportSummary:
    history_release: str = ""
    partitions: int = 0
    failed_partitions: list[str] = field(default_factory=list)
    rows_read: int = 0
    runs: int = 0
    skipped_by_reason: Counter = field(default_factory=Counter)
    issues: int = 0
    inserted: int = 0
    already_present: int = 0
    catalogue_by_kind: dict = field(default_factory=dict)
    catalogue_url: str = ""
    seconds: float = 0.0

    def lines(self) -> list[str]:
        out = [
            f"history of liger-kernel {self.history_release}: {self.partitions} partitions "
            f"({len(self.failed_partitions)} failed) in {self.seconds:.1f}s",
            f"rows read {self.rows_read}, runs {self.runs}, issues {self.issues}",
            "skipped rows by reason: " + (", ".join(f"{k} {v}" for k, v in sorted(self.skipped_by_reason.items())) or "none"),
            f"publication: {self.inserted} new, {self.already_present} already present",
            f"catalogue {self.catalogue_url}: {sum(self.catalogue_by_kind.values())} records by kind ("
            + ", ".join(f"{k} {v}" for k, v in sorted(self.catalogue_by_kind.items())) + ")",
        ]
        if self.failed_partitions:
            out.append("failed partitions: " + ", ".join(self.failed_partitions))
        return out


def register_history_partitions(instance: DagsterInstance, history_bytes: bytes):
    """Add the GPU and version partitions the history names; return its slices."""
    slices = slice_history(history_bytes)
    for dimension, values in ((GPU_DIMENSION, slices.gpus), (VERSION_DIMENSION, slices.versions)):
        existing = set(instance.get_dynamic_partitions(dimension))
        new = [value for value in values if value not in existing]
        if new:
            instance.add_dynamic_partitions(dimension, new)
    return slices


def import_history(
    instance: DagsterInstance,
    *,
    partitions: list[tuple[str, str]] | None = None,
    log: Callable[[str], None] = print,
) -> HistoryImportSummary:
    """Run `history_import_job` for every (or the given) partition of the newest history, in this process."""
    from kernelindex_pipeline.definitions import defs
    from kernelindex_pipeline.liger.partition import skip_totals

    started = time.perf_counter()
    with build_resources({name: defs.resources[name] for name in ("releases", "catalogue")}) as resources:
        releases, catalogue = resources.releases, resources.catalogue
    version = releases.history_version()
    data, _snapshot = read_history_csv(releases.fetch(version))
    slices = register_history_partitions(instance, data)
    unknown = [f"{gpu}|{v}" for gpu, v in partitions or [] if (gpu, v) not in slices.partitions]
    if unknown:
        known = sorted(f"{gpu}|{v}" for gpu, v in slices.partitions)
        raise UnknownPartitions(
            f"--partition {', '.join(map(repr, unknown))}: not in the history of liger-kernel {version} "
            f"({len(known)} partitions, e.g. {', '.join(known[:3])})"
        )
    wanted = partitions or list(slices.partitions)
    job = defs.resolve_job_def("history_import_job")
    summary = HistoryImportSummary(history_release=version, catalogue_url=catalogue.safe_url)
    for index, (gpu, liger_version) in enumerate(wanted, start=1):
        key = benchmark_partition_key(gpu, liger_version)
        result = job.execute_in_process(
            partition_key=key, instance=instance, raise_on_error=False, tags={HISTORY_RELEASE_TAG: version}
        )
        summary.partitions += 1
        if not result.success:
            summary.failed_partitions.append(str(key))
            log(f"[{index}/{len(wanted)}] {key}: FAILED (run {result.run_id}): {_failure_reason(result)}")
            continue
        records = result.output_for_node("kernelindex_records")
        report = records.report.to_dict()
        summary.rows_read += report["rowsRead"]
        summary.runs += report["runs"]
        summary.issues += len(report["issues"])
        summary.skipped_by_reason.update(skip_totals(report))
        publication = _publication_metadata(result)
        summary.inserted += publication.get("inserted", 0)
        summary.already_present += publication.get("already_present", 0)
        log(f"[{index}/{len(wanted)}] {key}: {report['rowsRead']} rows, {report['runs']} runs, {publication.get('summary', '')}")
    with catalogue.open() as store:
        summary.catalogue_by_kind = store.counts_by_kind()
    summary.seconds = time.perf_counter() - started
    return summary


def _publication_metadata(result) -> dict:
    for materialization in result.asset_materializations_for_node("catalogue_publication"):
        if materialization.asset_key.path == ["catalogue_publication"]:
            return {key: value.value for key, value in materialization.metadata.items()}
    return {}


def _failure_reason(result) -> str:
    for event in result.all_events:
        if event.event_type_value == "STEP_FAILURE":
            error = event.event_specific_data.error
            return f"{event.step_key}: {error.message.strip() if error else 'failed'}"
    failed_checks = [e.check_name for e in result.get_asset_check_evaluations() if not e.passed]
    return f"blocking checks failed: {', '.join(failed_checks)}" if failed_checks else "see the run's logs"
