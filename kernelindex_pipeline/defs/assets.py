"""The benchmark assets, per partition gpu x liger_version, and the catalogue-wide ones after them.

Data flows one way: liger_release -> benchmark_csv -> benchmark_rows -> kernelindex_records
(+ blocking checks) -> catalogue_publication -> catalogue_export / catalogue_report. Each body
calls the plain-Python domain and turns its result into metadata.
"""


import time
from typing import Literal

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetDep,
    AssetExecutionContext,
    Config,
    MaterializeResult,
    MetadataValue,
    MultiToSingleDimensionPartitionMapping,
    Output,
    asset,
)
from pydantic import Field

from kernelindex_pipeline.defs.checks import (
    RECORD_CHECK_SPECS,
    check_conservation,
    check_digests,
    check_references,
    check_schema,
)
from kernelindex_pipeline.defs.partitions import (
    VERSION_DIMENSION,
    benchmark_partitions,
    liger_version_partitions,
    split_partition_key,
)
from kernelindex_pipeline.defs.resources import BenchmarkRunnerResource, CatalogueResource, LigerReleaseResource
from kernelindex_pipeline.liger import partition as liger_partition
from kernelindex_pipeline.liger.partition import PartitionCsv

GROUP = "kernelindex"
HISTORY_RELEASE_TAG = "kernelindex/history_release"


def _table(counts: dict) -> MetadataValue:
    rows = "\n".join(f"| {key} | {value} |" for key, value in sorted(counts.items())) or "| (none) | 0 |"
    return MetadataValue.md(f"| what | count |\n| --- | --- |\n{rows}")


@asset(partitions_def=liger_version_partitions, group_name=GROUP)
def liger_release(context: AssetExecutionContext, releases: LigerReleaseResource) -> MaterializeResult:
    """The liger-kernel sdist of one release from the package index: sha256-verified, kept in a
    content-addressed cache. It ships the release's benchmark scripts and its committed history CSV."""
    artifact = releases.fetch(context.partition_key)
    context.log.info(f"liger-kernel {context.partition_key}: {artifact.path} ({artifact.size} bytes)")
    return MaterializeResult(
        metadata={
            "sha256": artifact.sha256,
            "size_bytes": artifact.size,
            "locator": artifact.locator,
            "path": MetadataValue.path(str(artifact.path)),
        }
    )


class BenchmarkCsvConfig(Config):
    mode: Literal["history", "execute"] = Field(
        default="history",
        description="history: the rows Liger-Kernel committed; execute: run the release's scripts on this GPU.",
    )
    kernels: list[str] = Field(default_factory=list, description="execute: kernels to sweep (empty: every script).")


@asset(
    partitions_def=benchmark_partitions,
    group_name=GROUP,
    deps=[AssetDep(liger_release, partition_mapping=MultiToSingleDimensionPartitionMapping(VERSION_DIMENSION))],
    check_specs=[
        AssetCheckSpec(
            "sweep_scripts_succeeded",
            asset="benchmark_csv",
            partitions_def=benchmark_partitions,
            description="Every benchmark script of an execute-mode sweep ended ok (history mode runs none).",
        )
    ],
)
def benchmark_csv(
    context: AssetExecutionContext,
    config: BenchmarkCsvConfig,
    releases: LigerReleaseResource,
    runner: BenchmarkRunnerResource,
):
    """The partition's raw Liger benchmark CSV with its source snapshot: in history mode the rows of
    the newest release's committed history CSV for this GPU and Liger version; in execute mode the
    rows the release's own scripts just measured on a GPU of this type."""
    gpu, version = split_partition_key(context.partition_key)
    if config.mode == "execute":
        from kernelindex_pipeline.defs.sweep import run_sweep_through_pipes

        partition_csv = run_sweep_through_pipes(context, gpu, version, config.kernels, releases, runner)
    else:
        # Sensors and the history import pin the release in a tag, so a run never asks the index again.
        history_release = context.run.tags.get(HISTORY_RELEASE_TAG) or releases.history_version()
        partition_csv = liger_partition.history_partition_csv(releases.fetch(history_release), gpu, version)
        context.log.info(f"{gpu} x {version}: {partition_csv.snapshot.get('rows', 0)} rows from {partition_csv.snapshot['locator']}")
    metadata = {
        "mode": partition_csv.mode,
        "rows": partition_csv.snapshot.get("rows", 0),
        "content_digest": partition_csv.content_digest,
        "source": MetadataValue.json(partition_csv.snapshot),
    }
    if partition_csv.sweep:
        metadata.update(partition_csv.sweep["metadata"])
    yield Output(partition_csv, metadata=metadata)
    failed = [o for o in (partition_csv.sweep or {}).get("outcomes", []) if o["status"] != "ok"]
    yield AssetCheckResult(
        check_name="sweep_scripts_succeeded",
        passed=not failed,
        severity=AssetCheckSeverity.WARN,
        metadata={
            "mode": partition_csv.mode,
            "scripts": len((partition_csv.sweep or {}).get("outcomes", [])),
            "failed": "\n".join(f"{o['script']}: {o['status']} {o.get('error_line') or ''}" for o in failed) or "none",
        },
    )


@asset(partitions_def=benchmark_partitions, group_name=GROUP)
def benchmark_rows(context: AssetExecutionContext, benchmark_csv: PartitionCsv):
    """The partition's CSV parsed into upstream rows (all 15 columns as strings), with parse issues
    (row number and problem) and header drift warnings; nothing is dropped silently."""
    parsed = liger_partition.parse_partition_csv(benchmark_csv)
    context.log.info(f"parsed {parsed.rows_read} rows, {len(parsed.issues)} issues, {len(parsed.drift_warnings)} drift warnings")
    return Output(
        parsed,
        metadata={
            "rows_read": parsed.rows_read,
            "parse_issues": len(parsed.issues),
            "drift_warnings": MetadataValue.json(list(parsed.drift_warnings)),
        },
    )


@asset(partitions_def=benchmark_partitions, group_name=GROUP, check_specs=RECORD_CHECK_SPECS)
def kernelindex_records(
    context: AssetExecutionContext,
    benchmark_csv: PartitionCsv,
    benchmark_rows,
    catalogue: CatalogueResource,
    releases: LigerReleaseResource,
):
    """The partition's kernelindex.dev/v1alpha1 records (seven kinds, one object per digest) and the
    import report: rows read, records by kind, skipped rows by reason, issues. Four blocking checks
    gate publication. The releases resource's `profile` picks the Liger catalogue profile."""
    started = time.perf_counter()
    result = liger_partition.build_records(benchmark_rows, benchmark_csv, profile=releases.profile)
    report = result.report.to_dict()
    context.log.info(
        f"{report['rowsRead']} rows -> {report['runs']} runs, {len(result.manifests)} records in {time.perf_counter() - started:.2f}s"
    )
    yield Output(
        result,
        metadata={
            "profile": report["profile"],
            "rows_read": report["rowsRead"],
            "speed_rows": report["speedRows"],
            "runs": report["runs"],
            "records_by_kind": _table(report["records"]),
            "skipped_by_reason": _table(liger_partition.skip_totals(report)),
            "issues": len(report["issues"]),
            "report": MetadataValue.json(report),
        },
    )
    with catalogue.open() as store:
        yield check_schema(result.manifests)
        yield check_digests(result.manifests)
        yield check_references(result.manifests, store.present_digests)
        yield check_conservation(report)


@asset(partitions_def=benchmark_partitions, group_name=GROUP)
def catalogue_publication(
    context: AssetExecutionContext,
    benchmark_csv: PartitionCsv,
    kernelindex_records,
    catalogue: CatalogueResource,
) -> MaterializeResult:
    """The partition's records as published into the KernelIndex catalogue: one transaction,
    idempotent (objects keyed by digest, runs also unique on source and externalId)."""
    with catalogue.open() as store:
        published = store.publish(
            kernelindex_records.manifests,
            partition=str(context.partition_key),
            source=benchmark_csv.snapshot,
            report=kernelindex_records.report.to_dict(),
        )
        total = store.counts_by_kind()
    context.log.info(f"{context.partition_key}: {published.summary()} ({catalogue.safe_url})")
    return MaterializeResult(
        metadata={
            "inserted": published.new,
            "already_present": published.already_present,
            "summary": published.summary(),
            "inserted_by_kind": _table(published.new_by_kind),
            "conflicts": len(published.conflicts),
            "catalogue": catalogue.safe_url,
            "catalogue_size": sum(total.values()),
        }
    )
