"""One chain per source, built by one factory so the three stay alike.

    <source>/benchmark_csv -> <source>/benchmark_rows -> <source>/kernelindex_records (+ 4 blocking checks)
    -> <source>/catalogue_publication

for the sources `history` (rows Liger committed), `ci` (Liger's CI results) and `sweep` (our GPU
sweeps). Each chain has its own partitions (defs/partitions.py), its own job and its own asset group,
so a failed sweep never colours the history chain. Only the first asset differs between sources: a
`read` function gives each partition its parts (one PartitionCsv per input file; a CI partition may
gather several files). History and CI backfill many partitions in one run (BackfillPolicy.single_run);
sweeps run one partition per run. Values travel between the steps as {partition key: value} through
ChainValuesIOManager, which stores one file per partition, so a run of many partitions still leaves
each partition's value on its own.
"""

import json
import pickle
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from dagster import (
    AssetCheckResult,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetIn,
    AssetKey,
    AssetSelection,
    BackfillPolicy,
    BetaWarning,
    ConfigurableIOManager,
    DataVersion,
    InputContext,
    MaterializeResult,
    MetadataValue,
    Output,
    OutputContext,
    PreviewWarning,
    asset,
    define_asset_job,
    in_process_executor,
)
from pydantic import Field

from kernelindex_pipeline.defs.checks import (
    check_result,
    conservation_problems,
    digest_problems,
    record_check_specs,
    reference_problems,
    schema_problems,
)
from kernelindex_pipeline.defs.partitions import source_partitions
from kernelindex_pipeline.home import dagster_home
from kernelindex_pipeline.liger import partition as liger_partition
from kernelindex_pipeline.liger.partition import PartitionCsv
from kernelindex_pipeline.liger.report import skip_totals

IO_MANAGER_KEY = "chain_values"
STAGES = ("benchmark_csv", "benchmark_rows", "kernelindex_records", "catalogue_publication")
PROGRESS_PREFIX = "partition done: "


# ------------------------------------------------------------------------------------------ values


class ChainValuesIOManager(ConfigurableIOManager):
    """Stores a chain step's {partition key: value} one pickle file per partition and loads the
    partitions a step asks for. Hand-written because Dagster's file IO managers refuse an output that
    covers several partitions, which is what a single-run backfill produces."""

    base_dir: str = Field(default="", description="Where values are kept; empty: DAGSTER_HOME/storage/chain-values.")

    def _path(self, asset_key: AssetKey, partition: str) -> Path:
        root = Path(self.base_dir) if self.base_dir else dagster_home() / "storage" / "chain-values"
        return root.joinpath(*asset_key.path) / f"{quote(partition, safe='')}.pickle"

    def handle_output(self, context: OutputContext, obj: dict) -> None:
        wanted = set(context.asset_partition_keys)
        if set(obj) != wanted:
            raise ValueError(
                f"{context.asset_key.to_user_string()}: values for {sorted(obj)}, expected {sorted(wanted)}"
            )
        for partition, value in obj.items():
            path = self._path(context.asset_key, partition)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
            tmp.replace(path)

    def load_input(self, context: InputContext) -> dict:
        values = {}
        for partition in context.asset_partition_keys:
            path = self._path(context.asset_key, partition)
            if not path.is_file():
                raise FileNotFoundError(
                    f"{context.asset_key.to_user_string()} has no stored value for partition {partition}: materialize it first"
                )
            values[partition] = pickle.loads(path.read_bytes())  # our own files, written by handle_output
        return values


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


@dataclass(frozen=True)
class ChainSpec:
    source: str
    description: str  # of the source's benchmark_csv asset
    read: Callable[[AssetExecutionContext, list[str]], SourceRead]
    job_name: str
    job_description: str
    resources: frozenset[str]
    single_run: bool  # many partitions per run (history, ci) or one (sweep)
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


def _merged_report(results) -> dict:
    """Totals of a partition's import reports (one per part): what the summary and the table show."""
    merged = {"rowsRead": 0, "runs": 0, "issues": [], "skipped": {}}
    for result in results:
        report = result.report.to_dict()
        merged["rowsRead"] += report["rowsRead"]
        merged["runs"] += report["runs"]
        merged["issues"] += report["issues"]
        for reason, count in skip_totals(report).items():
            merged["skipped"][reason] = merged["skipped"].get(reason, 0) + count
    return merged


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
    common = {"partitions_def": partitions_def, "group_name": source, "backfill_policy": policy}
    # A single-run step covers many partitions, so its checks are evaluated once per step; a sweep step
    # covers one partition and its checks belong to it.
    check_partitions = None if spec.single_run else partitions_def

    @asset(
        key=keys["benchmark_csv"],
        description=spec.description,
        io_manager_key=IO_MANAGER_KEY,
        required_resource_keys=set(spec.resources),
        config_schema=spec.config_schema,
        check_specs=[
            AssetCheckSpec(name, asset=keys["benchmark_csv"], partitions_def=check_partitions, description=description)
            for name, description in spec.source_checks
        ],
        **common,
    )
    def benchmark_csv(context: AssetExecutionContext):
        partitions = list(context.partition_keys)
        read = spec.read(context, partitions)
        rows = {key: sum(part.snapshot.get("rows", 0) for part in read.parts[key]) for key in partitions}
        for key in partitions:
            context.log.info(progress_message("benchmark_csv", key, {"parts": len(read.parts[key]), "rows": rows[key]}))
        yield Output(
            read.parts,
            metadata={
                "source": source,
                "partitions": len(partitions),
                "rows": sum(rows.values()),
                "parts": _table(
                    ("partition", "file", "rows", "sha256"),
                    [
                        (key, part.snapshot.get("locator"), part.snapshot.get("rows", 0), part.content_digest)
                        for key in partitions
                        for part in read.parts[key]
                    ]
                    or [("(none)", "", 0, "")],
                ),
                **read.metadata,
            },
        )
        yield from read.checks

    @asset(
        key=keys["benchmark_rows"],
        description=(
            "Each part's CSV parsed into upstream rows (all 15 columns as strings), with parse issues (row number "
            "and problem) and header drift warnings; nothing is dropped silently."
        ),
        io_manager_key=IO_MANAGER_KEY,
        ins={"benchmark_csv": AssetIn(keys["benchmark_csv"])},
        **common,
    )
    def benchmark_rows(context: AssetExecutionContext, benchmark_csv: dict):
        parsed = {
            key: [liger_partition.parse_partition_csv(part) for part in benchmark_csv[key]]
            for key in context.partition_keys
        }
        for key, items in parsed.items():
            context.log.info(progress_message("benchmark_rows", key, {"rows": sum(p.rows_read for p in items)}))
        yield Output(
            parsed,
            metadata={
                "rows_read": sum(p.rows_read for items in parsed.values() for p in items),
                "parse_issues": sum(len(p.issues) for items in parsed.values() for p in items),
                "drift_warnings": MetadataValue.json(
                    sorted({w for items in parsed.values() for p in items for w in p.drift_warnings})
                ),
            },
        )

    @asset(
        key=keys["kernelindex_records"],
        description=(
            "Each part's kernelindex.dev/v1alpha1 records (seven kinds, one object per digest) and import report: "
            "rows read, records by kind, skipped rows by reason, issues. Four blocking checks gate publication."
        ),
        io_manager_key=IO_MANAGER_KEY,
        ins={"benchmark_csv": AssetIn(keys["benchmark_csv"]), "benchmark_rows": AssetIn(keys["benchmark_rows"])},
        required_resource_keys={"catalogue", "releases"},
        check_specs=record_check_specs(keys["kernelindex_records"], check_partitions),
        **common,
    )
    def kernelindex_records(context: AssetExecutionContext, benchmark_csv: dict, benchmark_rows: dict):
        results, table = {}, []
        profile = context.resources.releases.profile  # the Liger catalogue profile the records are built with
        for key in context.partition_keys:
            parts = benchmark_csv[key]
            results[key] = [
                liger_partition.build_records(parsed, part, profile=profile)
                for parsed, part in zip(benchmark_rows[key], parts, strict=True)
            ]
            report = _merged_report(results[key])
            context.log.info(
                progress_message("kernelindex_records", key, {"rows": report["rowsRead"], "runs": report["runs"]})
            )
            table.append(
                (
                    key,
                    report["rowsRead"],
                    report["runs"],
                    len(report["issues"]),
                    no_runs_reason(report) if not report["runs"] else "",
                )
            )
        totals = _merged_report([r for items in results.values() for r in items])
        yield Output(
            results,
            metadata={
                "profile": profile,
                "rows_read": totals["rowsRead"],
                "runs": totals["runs"],
                "issues": len(totals["issues"]),
                "skipped_by_reason": MetadataValue.json(totals["skipped"]),
                "partitions": _table(
                    ("partition", "rows", "runs", "issues", "why no runs"), table or [("(none)", 0, 0, 0, "")]
                ),
            },
        )
        problems = {
            name: {}
            for name in ("records_schema_valid", "record_digests_recompute", "run_references_resolve", "rows_conserved")
        }
        checked = {name: 0 for name in problems}
        with context.resources.catalogue.open() as store:
            for key, items in results.items():
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
                        problems[name].setdefault(key, []).extend(found)
                        checked[name] += count
        for name, found in problems.items():
            yield check_result(keys["kernelindex_records"], name, found, checked[name])

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
        **common,
    )
    def catalogue_publication(
        context: AssetExecutionContext, benchmark_csv: dict, kernelindex_records: dict
    ) -> MaterializeResult:
        catalogue = context.resources.catalogue
        table, new, present, conflicts = [], 0, 0, 0
        with catalogue.open() as store:
            for key in context.partition_keys:
                parts = benchmark_csv[key]
                part_new = part_present = 0
                for part, result in zip(parts, kernelindex_records[key], strict=True):
                    published = store.publish(
                        result.manifests,
                        partition=f"{source}:{key}",
                        source=part.snapshot,
                        report=result.report.to_dict(),
                    )
                    part_new += published.new
                    part_present += published.already_present
                    conflicts += len(published.conflicts)
                report = _merged_report(kernelindex_records[key])
                info = {
                    "rows": report["rowsRead"],
                    "runs": report["runs"],
                    "new": part_new,
                    "already_present": part_present,
                    "parts": len(parts),
                    "skipped": report["skipped"],
                    "issues": len(report["issues"]),
                }
                if not report["runs"]:
                    info["why_no_runs"] = no_runs_reason(report)
                context.log.info(progress_message("catalogue_publication", key, info))
                table.append((key, len(parts), report["runs"], part_new, part_present))
                new, present = new + part_new, present + part_present
            total = store.counts_by_kind()
            fingerprint = store.content_fingerprint()
        return MaterializeResult(
            # the catalogue's content fingerprint: the catalogue-wide assets refresh when it changes, not
            # whenever a chain ran (a backfill that published nothing leaves it as it was)
            data_version=DataVersion(fingerprint),
            metadata={
                "inserted": new,
                "already_present": present,
                "conflicts": conflicts,
                "content_digests": MetadataValue.json(
                    {key: liger_partition.parts_digest(parts) for key, parts in benchmark_csv.items()}
                ),
                "partitions": _table(
                    ("partition", "parts", "runs", "new", "already present"), table or [("(none)", 0, 0, 0, 0)]
                ),
                "catalogue": catalogue.safe_url,
                "catalogue_size": sum(total.values()),
                "catalogue_fingerprint": fingerprint,
            },
        )

    job = define_asset_job(
        spec.job_name,
        selection=AssetSelection.assets(*keys.values()),
        description=spec.job_description,
        tags={"kernelindex/source": source},
        executor_def=in_process_executor,
    )
    return Chain(spec, [benchmark_csv, benchmark_rows, kernelindex_records, catalogue_publication], job, keys)
