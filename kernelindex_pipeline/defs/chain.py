"""One chain per source, built by one factory so the three stay alike.

    <source>/benchmark_csv -> <source>/benchmark_rows -> <source>/kernelindex_records (+ 4 blocking checks)
    -> <source>/catalogue_publication

for the sources `history` (rows Liger committed), `ci` (Liger's CI results) and `sweep` (our GPU
sweeps). Each chain has its own partitions (defs/partitions.py), its own job and its own asset group,
so a failed sweep never colours the history chain. Only the first asset differs between sources: a
`read` function gives each partition its parts (one PartitionCsv per input file; a CI partition may
gather several files). History and CI backfill many partitions in one run (BackfillPolicy.single_run);
sweeps run one partition per run. Values travel between the steps as {partition key: value} through
defs/chain_values.py, which keeps each partition's value as data files of its own. Every
materialization's metadata holds its own partition's figures (`context.add_asset_metadata` per
partition), never the run's totals.
"""

import json
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetSelection,
    BackfillPolicy,
    BetaWarning,
    DataVersion,
    DefaultSensorStatus,
    Failure,
    MaterializeResult,
    MetadataValue,
    Output,
    PreviewWarning,
    asset,
    define_asset_job,
    in_process_executor,
)

from kernelindex_pipeline.defs import partitions_registered
from kernelindex_pipeline.defs.chain_values import IO_MANAGER_KEY, PartRecords, parse_summary
from kernelindex_pipeline.defs.checks import (
    check_result,
    conservation_problems,
    digest_problems,
    record_check_specs,
    reference_problems,
    schema_problems,
)
from kernelindex_pipeline.defs.import_plan import CONTENT_DIGESTS, FINGERPRINT
from kernelindex_pipeline.defs.partitions import source_partitions
from kernelindex_pipeline.home import dagster_home
from kernelindex_pipeline.liger import partition as liger_partition
from kernelindex_pipeline.liger.partition import PartitionCsv
from kernelindex_pipeline.liger.report import skip_totals

STAGES = ("benchmark_csv", "benchmark_rows", "kernelindex_records", "catalogue_publication")
PROGRESS_PREFIX = "partition done: "


# How a source's sensor polls (`liger_history_sensor`, `liger_ci_sensor`): hourly, and off until an
# operator turns it on (an import command or a backfill is the usual way in).
SOURCE_SENSOR_SETTINGS = {"minimum_interval_seconds": 3600, "default_status": DefaultSensorStatus.STOPPED}


# -------------------------------------------------------------------------------------- progress


def progress_message(stage: str, partition: str, info: dict) -> str:
    """The log line a chain step writes when it has finished one partition (read by `parse_progress`)."""
    return f"{PROGRESS_PREFIX}{stage} {partition} {json.dumps(info, sort_keys=True)}"


def parse_progress(message: str) -> tuple[str, str, dict] | None:
    """(stage, partition, info) of a `progress_message` line, else None."""
    if not message.startswith(PROGRESS_PREFIX):
        return None
    stage, partition, info = message[len(PROGRESS_PREFIX) :].split(" ", 2)
    return stage, partition, json.loads(info)


def no_runs_reason(report: dict) -> str:
    """Why a partition made no runs, from its import report(s)."""
    if not report["rowsRead"]:
        return "no rows upstream"
    reasons = {**skip_totals(report)}
    if report["issues"]:
        reasons["rows with issues"] = len(report["issues"])
    listed = ", ".join(f"{reason} {count}" for reason, count in sorted(reasons.items()) if count)
    return f"every row skipped: {listed}" if listed else "no speed rows"


# ----------------------------------------------------------------------------------------- chain


@dataclass
class SourceRead:
    """What a source's first step found: each partition's parts, plus metadata and checks of its own."""

    parts: dict[str, list[PartitionCsv]]
    metadata: dict = field(default_factory=dict)
    checks: list[AssetCheckResult] = field(default_factory=list)


def absent_partitions(source: str, missing: list[str], known: Iterable[str]) -> Failure:
    """The failure of a run asked for partitions its source does not hold (a pair added by hand in the
    UI's "Add a partition"): raised before anything is read further, so nothing is published and no
    catalogue refresh follows. Not retried: another try reads the same source."""
    shown = sorted(known)
    return Failure(
        description=(
            f"{', '.join(map(repr, missing))}: not in {source} ({len(shown)} partitions there"
            + (f", e.g. {', '.join(shown[:3])}" if shown else "")
            + "). Nothing was published. Remove the partition (the asset's Partitions tab) or import what the "
            "source holds."
        ),
        allow_retries=False,
    )


@dataclass(frozen=True)
class ChainSpec:
    source: str
    description: str  # of the source's benchmark_csv asset
    read: Callable[[AssetExecutionContext, list[str]], SourceRead]
    job_name: str
    job_description: str
    resources: frozenset[str]
    single_run: bool  # many partitions per run (history, ci) or one (sweep)
    how_to_import: str  # named by the partitions_registered check while the chain has no partition
    source_checks: tuple[tuple[str, str], ...] = ()  # (name, description) of non-blocking checks the read step reports
    config_schema: dict | None = None


@dataclass(frozen=True)
class Chain:
    spec: ChainSpec
    assets: list
    job: object
    keys: dict[str, AssetKey]

    @property
    def publication(self) -> AssetKey:
        return self.keys["catalogue_publication"]


def _table(header: tuple[str, ...], rows: list[tuple]) -> MetadataValue:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |" for row in rows]
    return MetadataValue.md("\n".join(lines))


def _merged_report(reports: list[dict]) -> dict:
    """Totals of a partition's import reports (report.json, one per part): what the summary and the table show."""
    merged = {"rowsRead": 0, "runs": 0, "issues": [], "skipped": {}}
    for report in reports:
        merged["rowsRead"] += report["rowsRead"]
        merged["runs"] += report["runs"]
        merged["issues"] += report["issues"]
        for reason, count in skip_totals(report).items():
            merged["skipped"][reason] = merged["skipped"].get(reason, 0) + count
    return merged


@dataclass(frozen=True)
class _Layout:
    """What every asset of one chain shares."""

    spec: ChainSpec
    keys: dict[str, AssetKey]
    common: dict  # partitions_def, group_name, backfill_policy
    check_partitions: object  # the checks' partitions_def: None for a single-run chain


def chain_kind(source: str) -> str:
    """The label every asset of a source's chain carries in the UI (its Dagster kind)."""
    return f"{source}-chain"


def build_chain(spec: ChainSpec) -> Chain:
    # Two deliberate choices are marked beta/preview in Dagster 1.13: single-run backfills (the point of
    # the history and CI chains) and partitioned checks (a sweep's checks belong to its partition). The
    # notices are for this code's author, not for the operator who starts `dagster dev`.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BetaWarning)
        warnings.simplefilter("ignore", PreviewWarning)
        return _build_chain(spec)


def _build_chain(spec: ChainSpec) -> Chain:
    source = spec.source
    partitions_def = source_partitions[source]
    keys = {stage: AssetKey([source, stage]) for stage in STAGES}
    policy = BackfillPolicy.single_run() if spec.single_run else None  # None: one run per partition
    layout = _Layout(
        spec,
        keys,
        {
            "partitions_def": partitions_def,
            "group_name": source,
            "backfill_policy": policy,
            # Dagster 1.13's lineage names a node by its key's last part only (three chains show three
            # `catalogue_publication` nodes); a kind is the label it shows on every node by default.
            "kinds": {chain_kind(source)},
        },
        # A single-run step covers many partitions, so its checks are evaluated once per step; a sweep
        # step covers one partition and its checks belong to it.
        None if spec.single_run else partitions_def,
    )
    assets = [_csv_asset(layout), _rows_asset(layout), _records_asset(layout), _publication_asset(layout)]
    job = define_asset_job(
        spec.job_name,
        selection=AssetSelection.assets(*keys.values()),
        description=spec.job_description,
        tags={"kernelindex/source": source},
        executor_def=in_process_executor,
    )
    return Chain(spec, assets, job, keys)


def _csv_asset(layout: _Layout):
    spec, key = layout.spec, layout.keys["benchmark_csv"]

    @asset(
        key=key,
        description=spec.description,
        io_manager_key=IO_MANAGER_KEY,
        required_resource_keys=set(spec.resources),
        config_schema=spec.config_schema,
        check_specs=[
            *(
                AssetCheckSpec(name, asset=key, partitions_def=layout.check_partitions, description=description)
                for name, description in spec.source_checks
            ),
            partitions_registered.check_spec(key),
        ],
        **layout.common,
    )
    def benchmark_csv(context: AssetExecutionContext):
        partitions = list(context.partition_keys)
        read = spec.read(context, partitions)
        for partition in partitions:
            parts = read.parts[partition]
            rows = sum(part.snapshot.get("rows", 0) for part in parts)
            context.log.info(progress_message("benchmark_csv", partition, {"parts": len(parts), "rows": rows}))
            table = [
                (part.snapshot.get("locator"), part.snapshot.get("rows", 0), part.content_digest) for part in parts
            ]
            context.add_asset_metadata(
                {"rows": rows, "parts": _table(("file", "rows", "sha256"), table or [("(none)", 0, "")])},
                partition_key=partition,
            )
        yield Output(read.parts, metadata={"source": spec.source, **read.metadata})
        yield from read.checks
        yield partitions_registered.check_result(context.instance, spec.source, key, spec.how_to_import)

    return benchmark_csv


def _rows_asset(layout: _Layout):
    @asset(
        key=layout.keys["benchmark_rows"],
        description=(
            "Each part's CSV parsed into upstream rows (all 15 columns as strings), with parse issues (row number "
            "and problem) and header drift warnings; nothing is dropped silently. Kept: what the parse found."
        ),
        io_manager_key=IO_MANAGER_KEY,
        ins={"benchmark_csv": AssetIn(layout.keys["benchmark_csv"])},
        **layout.common,
    )
    def benchmark_rows(context: AssetExecutionContext, benchmark_csv: dict):
        summaries = {}
        for partition in context.partition_keys:
            summaries[partition] = [
                parse_summary(liger_partition.parse_partition_csv(part)) for part in benchmark_csv[partition]
            ]
            rows = sum(summary["rowsRead"] for summary in summaries[partition])
            context.log.info(progress_message("benchmark_rows", partition, {"rows": rows}))
            context.add_asset_metadata(
                {
                    "rows_read": rows,
                    "parse_issues": sum(len(summary["issues"]) for summary in summaries[partition]),
                    "drift_warnings": MetadataValue.json(
                        sorted({w for summary in summaries[partition] for w in summary["driftWarnings"]})
                    ),
                },
                partition_key=partition,
            )
        return summaries

    return benchmark_rows


def _records_asset(layout: _Layout):
    keys = layout.keys

    @asset(
        key=keys["kernelindex_records"],
        description=(
            "Each part's kernelindex.dev/v1alpha1 records (seven kinds, one object per digest) and import report: "
            "rows read, records by kind, skipped rows by reason, issues. Four blocking checks gate publication."
        ),
        io_manager_key=IO_MANAGER_KEY,
        ins={"benchmark_csv": AssetIn(keys["benchmark_csv"]), "benchmark_rows": AssetIn(keys["benchmark_rows"])},
        required_resource_keys={"catalogue", "releases"},
        check_specs=record_check_specs(keys["kernelindex_records"], layout.check_partitions),
        **layout.common,
    )
    def kernelindex_records(context: AssetExecutionContext, benchmark_csv: dict, benchmark_rows: dict):
        profile = context.resources.releases.profile  # the Liger catalogue profile the records are built with
        results = {}
        for partition in context.partition_keys:
            # The rows step kept what its parse found; the records are built from the part's CSV parsed again.
            results[partition] = [
                liger_partition.build_records(liger_partition.parse_partition_csv(part), part, profile=profile)
                for part in benchmark_csv[partition]
            ]
            report = _merged_report([result.report.to_dict() for result in results[partition]])
            context.log.info(
                progress_message("kernelindex_records", partition, {"rows": report["rowsRead"], "runs": report["runs"]})
            )
            context.add_asset_metadata(_records_metadata(report), partition_key=partition)
        yield Output(
            {
                partition: [PartRecords(result.manifests, result.report.to_dict()) for result in items]
                for partition, items in results.items()
            },
            metadata={"profile": profile},
        )
        yield from _record_checks(context, keys["kernelindex_records"], results)

    return kernelindex_records


def _records_metadata(report: dict) -> dict:
    """One partition's kernelindex_records metadata, from its merged report."""
    metadata = {
        "rows_read": report["rowsRead"],
        "runs": report["runs"],
        "issues": len(report["issues"]),
        "skipped_by_reason": MetadataValue.json(report["skipped"]),
    }
    if not report["runs"]:
        metadata["why_no_runs"] = no_runs_reason(report)
    return metadata


def _record_checks(context: AssetExecutionContext, records_key: AssetKey, results: dict):
    """The four blocking checks over every partition's built records, one evaluation each for the step."""
    problems = {
        name: {}
        for name in ("records_schema_valid", "record_digests_recompute", "run_references_resolve", "rows_conserved")
    }
    checked = {name: 0 for name in problems}
    with context.resources.catalogue.open() as store:
        for partition, items in results.items():
            for result in items:
                report = result.report.to_dict()
                for name, found, count in (
                    ("records_schema_valid", schema_problems(result.manifests), len(result.manifests)),
                    ("record_digests_recompute", digest_problems(result.manifests), len(result.manifests)),
                    (
                        "run_references_resolve",
                        reference_problems(result.manifests, store.present_digests),
                        report["runs"],
                    ),
                    ("rows_conserved", conservation_problems(report), report["rowsRead"]),
                ):
                    problems[name].setdefault(partition, []).extend(found)
                    checked[name] += count
    for name, found in problems.items():
        yield check_result(records_key, name, found, checked[name])


def _publication_asset(layout: _Layout):
    source, keys = layout.spec.source, layout.keys

    @asset(
        key=keys["catalogue_publication"],
        description=(
            "Each partition's records as published into the KernelIndex catalogue: one transaction per part, "
            "idempotent (objects keyed by digest, runs also unique on source and externalId)."
        ),
        ins={
            "benchmark_csv": AssetIn(keys["benchmark_csv"]),
            "kernelindex_records": AssetIn(keys["kernelindex_records"]),
        },
        required_resource_keys={"catalogue"},
        **layout.common,
    )
    def catalogue_publication(
        context: AssetExecutionContext, benchmark_csv: dict, kernelindex_records: dict
    ) -> MaterializeResult:
        catalogue = context.resources.catalogue
        with catalogue.open() as store:
            for partition in context.partition_keys:
                parts = benchmark_csv[partition]
                info = _publish_partition(store, f"{source}:{partition}", parts, kernelindex_records[partition])
                context.log.info(progress_message("catalogue_publication", partition, info))
                context.add_asset_metadata(
                    {
                        "summary": (
                            f"{info['new']} new, {info['already_present']} already present: {info['runs']} runs "
                            f"from {info['rows']} rows in {info['parts']} parts"
                        ),
                        "inserted": info["new"],
                        "already_present": info["already_present"],
                        "conflicts": info["conflicts"],
                        "parts": info["parts"],
                        "runs": info["runs"],
                        # read back by import_plan.published_digest: what this partition's publication published
                        CONTENT_DIGESTS: MetadataValue.json({partition: liger_partition.parts_digest(parts)}),
                    },
                    partition_key=partition,
                )
            total = store.counts_by_kind()
            fingerprint = store.content_fingerprint()
        return MaterializeResult(
            # the catalogue's content fingerprint: the catalogue-wide assets refresh when it changes, not
            # whenever a chain ran (a backfill that published nothing leaves it as it was)
            data_version=DataVersion(fingerprint),
            metadata={  # the catalogue's state after this run: the same for every partition it published
                "catalogue": catalogue.safe_url,
                "catalogue_size": sum(total.values()),
                FINGERPRINT: fingerprint,
            },
        )

    return catalogue_publication


def _publish_partition(store, publication: str, parts: list[PartitionCsv], records: list[PartRecords]) -> dict:
    """Publish one partition's parts (one transaction each); its progress info (read by parse_progress)."""
    new = present = conflicts = 0
    for part, part_records in zip(parts, records, strict=True):
        published = store.publish(
            part_records.manifests, partition=publication, source=part.snapshot, report=part_records.report
        )
        new += published.new
        present += published.already_present
        conflicts += len(published.conflicts)
    report = _merged_report([part_records.report for part_records in records])
    issues = [
        {"file": str(part.snapshot.get("locator", "")), **issue}
        for part, part_records in zip(parts, records, strict=True)
        for issue in part_records.report["issues"]
    ]
    info = {
        "rows": report["rowsRead"],
        "runs": report["runs"],
        "new": new,
        "already_present": present,
        "conflicts": conflicts,
        "parts": len(parts),
        "skipped": report["skipped"],
        "issues": len(report["issues"]),
    }
    if issues:
        info["first_issues"] = [f"row {i['row']}: {i['problem']}" for i in issues[:FIRST_ISSUES]]
        info["issues_file"] = str(write_issues(publication, issues))
    if not report["runs"]:
        info["why_no_runs"] = no_runs_reason(report)
    return info


FIRST_ISSUES = 3  # the rows with issues an import's summary names; the file lists them all
ISSUES_DIR = "import-issues"  # under DAGSTER_HOME: <publication>.json per partition with issues


def write_issues(publication: str, issues: list[dict]) -> Path:
    """Every row with an issue of one partition's latest publication (file, row, problem), as JSON under
    DAGSTER_HOME/import-issues/ (written whole, then moved into place): what the summary points to."""
    folder = dagster_home() / ISSUES_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (re.sub(r"[^A-Za-z0-9._-]+", "_", publication) + ".json")
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps({"publication": publication, "issues": issues}, indent=1) + "\n")
    partial.replace(path)
    return path
