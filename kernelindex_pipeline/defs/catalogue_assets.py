"""Catalogue-wide assets downstream of the three chains' publications (`ALL`): the export, regressions,
coverage, the site (`catalogue_report`) and the efficiency table. They refresh by themselves (declarative automation, CATALOGUE_AUTOMATION) once any
chain has published, and never wait for a partition that has not run."""

import dataclasses
from pathlib import Path

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AutomationCondition,
    Config,
    MaterializeResult,
    MetadataValue,
    Output,
    asset,
    asset_check,
)
from pydantic import Field

from kernelindex_pipeline.catalogue.export import export_kernelindex, remove_kernelindex_files
from kernelindex_pipeline.catalogue.kernelindex import (
    check_source_ref,
    snapshots_of_publications,
    source_commit_of_publications,
)
from kernelindex_pipeline.catalogue.origins import publication_origins
from kernelindex_pipeline.catalogue.parts import RUNS_DATASET, export_parts
from kernelindex_pipeline.catalogue.run_table import RunTable, run_table_beside
from kernelindex_pipeline.defs.import_plan import FINGERPRINT
from kernelindex_pipeline.defs.resources import (
    CatalogueResource,
    EfficiencySettingsResource,
    LigerGitResource,
    RegressionSettingsResource,
)
from kernelindex_pipeline.defs.sources import CHAINS
from kernelindex_pipeline.detection import RegressionReport, acknowledgements
from kernelindex_pipeline.detection.attribution import check_message, group_changes
from kernelindex_pipeline.detection.document import regressions_json
from kernelindex_pipeline.home import SITE_DIR, dagster_home, site_url
from kernelindex_pipeline.imports.coverage import CoverageTable
from kernelindex_pipeline.liger.attribution import detect_and_attribute
from kernelindex_pipeline.reporting.efficiency import (
    place_sidecar,
    table_markdown,
)
from kernelindex_pipeline.reporting.efficiency_parts import update_efficiency
from kernelindex_pipeline.reporting.site import build_catalogue_site


class OutputDirConfig(Config):
    out_dir: str = Field(default="", description="Where to write; empty: a folder under DAGSTER_HOME.")


class CatalogueExportConfig(OutputDirConfig):
    kernelindex_memory_runs: bool = Field(
        default=False,
        description="Include peak-memory runs in the KernelIndex files. Off: KernelIndex ranks every primary value "
        "as a latency (docs/reference/exports.md: Publishing in KernelIndex).",
    )
    kernelindex_source_commit: str = Field(
        default="",
        description="The Liger commit (or tag) the KernelIndex files' operations link their benchmark script at. "
        "Empty: v<version> of the newest history release the catalogue holds (none without a history).",
    )
    kernelindex_files: bool = Field(
        default=True,
        description="Write the KernelIndex files on each refresh. They are written whole from the catalogue, not per "
        "part (5.2 s on the eleven CI files' 22,624 runs, linear in runs): off, a refresh writes the parts only and "
        "removes earlier KernelIndex files; `kernelindex-pipeline export --kernelindex` writes them on demand.",
    )
    rebuild: bool = Field(
        default=False,
        description="Write every part of the export afresh (the same bytes as the incremental export gives) instead "
        "of only the publications since the last one (docs/reference/exports.md).",
    )


class EfficiencyTableConfig(OutputDirConfig):
    rebuild: bool = Field(
        default=False,
        description="Derive every publication's figures afresh (the same bytes as the incremental derivation gives) "
        "instead of only the publications since the last one (docs/concepts/efficiency.md).",
    )


class RegressionsConfig(Config):
    rebuild: bool = Field(
        default=False,
        description="Read every publication's runs into the run table again and detect afresh, not keeping the "
        "previous result (the same report: docs/concepts/detection.md, The run table).",
    )


GROUP = "catalogue"
# Each catalogue-wide materialization says how much it recomputed and why (issue 33), in this metadata entry.
RECOMPUTED = "recomputed"
PUBLICATIONS = [chain.publication for chain in CHAINS.values()]
# Dagster's eager condition without "any dependency missing": the publications are partitioned and a
# sweep partition may never have run, which must not hold back the catalogue-wide assets. And a dependency
# counts as updated only when its data version changed: a publication's data version is the catalogue's
# content fingerprint (defs/chain.py), so an import that published nothing refreshes nothing.
CONTENT_CHANGED = AutomationCondition.any_deps_match(
    AutomationCondition.data_version_changed() | AutomationCondition.will_be_requested()
).with_label("any_deps_content_changed")
CATALOGUE_AUTOMATION = (
    AutomationCondition.eager()
    .without(~AutomationCondition.any_deps_missing())
    .replace("any_deps_updated", CONTENT_CHANGED)
)
CATALOGUE_WIDE = {"group_name": GROUP, "deps": PUBLICATIONS, "automation_condition": CATALOGUE_AUTOMATION}


def _out(config: OutputDirConfig, name: str) -> Path:
    path = Path(config.out_dir) if config.out_dir else dagster_home() / name
    path.mkdir(parents=True, exist_ok=True)
    return path


@asset(**CATALOGUE_WIDE)
def catalogue_export(
    context: AssetExecutionContext, config: CatalogueExportConfig, catalogue: CatalogueResource, efficiency_table: str
) -> MaterializeResult:
    """The catalogue as files, one part per publication that brought records (catalogue/parts.py): its records as
    JSON Lines (one canonical manifest per line), its rows of the Parquet tables (runs as a dataset partitioned by
    source / GPU / Liger version), and a manifest (kernelindex-catalogue.parts.json) listing every part and file with
    its sha256. A refresh writes the parts of the publications since the last one and the manifest, and keeps the
    rest (checked by size; a missing or damaged part is rewritten, with a warning); `rebuild` writes every part
    (the same bytes). Beside them: the derived efficiency figures (efficiency.jsonl as `efficiency_table` wrote
    it, never in the records) and the two files KernelIndex's own publication code takes
    (kernelindex-submission.yaml, kernelindex-import-bundle.json; peak-memory runs only with
    `kernelindex_memory_runs`), still written whole (`kernelindex_files` off: not written). One file of the whole catalogue (kernelindex-catalogue.jsonl,
    the YAML bundle): `kernelindex-pipeline export --out DIR`."""
    out = _out(config, "exports")
    with catalogue.open() as store:
        # read first: the export holds at least this content (the import commands' --wait compares it)
        fingerprint = store.content_fingerprint()
        parts = export_parts(store, out, rebuild=config.rebuild, log=context.log.warning)
        sidecar = place_sidecar(Path(efficiency_table), out)
        kernelindex = None
        if config.kernelindex_files:
            publications = store.publications()
            kernelindex = export_kernelindex(
                store.manifests(),
                out,
                snapshots=snapshots_of_publications(publications),
                include_memory=config.kernelindex_memory_runs,
                order="time",
                source_commit=check_source_ref(config.kernelindex_source_commit)
                if config.kernelindex_source_commit
                else source_commit_of_publications(publications),
            )
        else:
            remove_kernelindex_files(out)  # they would describe an older catalogue
    context.log.info(f"exported {parts.records} records to {out}: {parts.recomputed()}")
    if kernelindex is None:
        written = {}
        recomputed = f"{parts.recomputed()}; no KernelIndex files (kernelindex_files off)"
    else:
        written = {
            "kernelindex_submission": MetadataValue.path(str(kernelindex.submission.path)),
            "kernelindex_import_bundles": MetadataValue.json([str(bundle.path) for bundle in kernelindex.bundles]),
            "kernelindex_runs": kernelindex.submission.records_by_kind["BenchmarkRun"],
            "kernelindex_notes": MetadataValue.json(kernelindex.notes),
        }
        recomputed = (
            f"{parts.recomputed()}; the KernelIndex files written whole "
            f"({kernelindex.submission.records_by_kind['BenchmarkRun']} runs: not per part)"
        )
    return MaterializeResult(
        metadata={
            "records": parts.records,
            FINGERPRINT: fingerprint,
            "manifest": MetadataValue.path(str(parts.manifest_path)),
            "parts": len(parts.parts),
            "parts_written": MetadataValue.json(parts.written + sorted(parts.repaired)),
            "export_warnings": MetadataValue.json(parts.warnings),
            "runs_dataset": MetadataValue.path(str(out / RUNS_DATASET)),
            "table_rows": MetadataValue.json(parts.table_rows),
            "efficiency_sidecar": MetadataValue.path(str(sidecar)),
            **written,
            RECOMPUTED: recomputed,
        }
    )


@asset(**CATALOGUE_WIDE)
def benchmark_regressions(
    context: AssetExecutionContext,
    config: RegressionsConfig,
    catalogue: CatalogueResource,
    regression_settings: RegressionSettingsResource,
    liger_git: LigerGitResource,
) -> Output[RegressionReport]:
    """Change points over every run of each series (kernel, mode, provider, workload, GPU, metric), with
    whole-run host effects taken out, and a cause per change ranked with its evidence (detection, then
    Liger's attribution: `liger.attribution.detect_and_attribute`; docs/concepts/detection.md). Series without
    enough runs are counted as insufficient, never as 'no regression'. The runs are read from the catalogue's
    run table (catalogue/run_table.py), which each refresh brings up to date from the publications since.

    Detected once, here: the result is this asset's value (stored by the IO manager), which its check and
    the report read, so the alert, the check and the page always show one judgement with one settings. A
    refresh judges afresh only the series whose inputs changed since the last one (the judgement store of
    `regression_settings`; metadata `series_rejudged` / `series_reused`)."""
    with catalogue.open() as store:
        table = RunTable(run_table_beside(store))
        made_before = regression_settings.previous_result_path().exists()
        update = table.update(store, rebuild=config.rebuild, made_before=made_before)  # the publications since
        for warning in update.warnings:
            context.log.warning(warning)
        context.log.info(update.line())
        result, notes = detect_and_attribute(
            table.facts(store),
            regression_settings.settings(),
            liger_git.clone() or None,
            judgement_store=regression_settings.judgement_store_path(),
            marks=store.acknowledgements(),
            previous=None if config.rebuild else regression_settings.previous_result_path(),
        )
    for note in notes:
        context.log.warning(note)
    context.log.info(result.summary())
    context.log.info(result.judgements.line())
    return Output(
        result,
        metadata={
            "regressions": len(result.slowdowns),
            "speedups": len(result.speedups),
            "pending": len(result.pending),  # steps at a series' newest run, awaiting a second run
            "series_judged": len(result.trends),
            # judged afresh (their inputs changed) and reused from the previous refresh (detection/judgements.py)
            "series_rejudged": result.judgements.rejudged,
            "series_reused": result.judgements.reused,
            RECOMPUTED: f"{update.line()}; "
            + (
                f"the previous result kept whole ({len(result.trends)} series): nothing it depends on changed "
                "(runs, records, settings, acknowledgements, the clone's refs, the code)"
                if result.judgements.kept_whole
                else f"{result.judgements.rejudged} series judged afresh (their inputs changed), "
                f"{result.judgements.reused} reused from the judgement store; every run's facts read from the run "
                "table, and every GPU's host effects estimated again to find out (not yet only the GPUs the "
                "night touched)"
            ),
            "run_table": MetadataValue.path(str(table.path)),
            "host_effects": len(result.host_effects),
            "insufficient_data": len(result.insufficient),
            "settings": MetadataValue.json(regressions_json(result)["settings"]),
            "table": MetadataValue.md(result.markdown()),
            "by_commit": check_message(group_changes(result.changes)),
        },
    )


@asset_check(
    asset=benchmark_regressions,
    description="Fails when a comparable series got slower and no one has acknowledged it yet.",
)
def no_regressions(benchmark_regressions: RegressionReport) -> AssetCheckResult:
    """Reads the asset's stored result: never a second detection. A slowdown not acknowledged fails it
    with severity ERROR, so the asset and its group show red in the UI until someone looks (the check
    blocks nothing); nothing judged fails it as a warning saying why, so a catalogue without runs
    enough never shows a green "Passed"."""
    result = benchmark_regressions
    if not result.trends:
        why = (
            f"{len(result.insufficient)} series have fewer than {2 * result.settings.min_segment} runs"
            if result.insufficient
            else "the catalogue has no runs"
        )
        description = (
            f"Nothing judged: {why}. Import more runs of the same series (Liger's CI results: "
            "`kernelindex-pipeline import-ci`, docs/operate/imports.md) and refresh."
        )
    else:
        # "N slowdowns from M commits: <sha> <subject> (n); ..." then the rest by cause
        description = check_message(group_changes(result.changes), markdown=True) + ". " + result.summary()
    open_slowdowns = acknowledgements.unacknowledged(result, result.slowdowns)
    if result.trends and len(open_slowdowns) < len(result.slowdowns):
        description += f" {len(result.slowdowns) - len(open_slowdowns)} slowdowns acknowledged, not counted."
    return AssetCheckResult(
        passed=bool(result.trends) and not open_slowdowns,
        severity=AssetCheckSeverity.ERROR if open_slowdowns else AssetCheckSeverity.WARN,
        description=description,
        metadata={
            "regressions": len(open_slowdowns),
            "acknowledged": len(result.slowdowns) - len(open_slowdowns),
            "pending": len(result.pending),
            "insufficient_data": len(result.insufficient),
        },
    )


@asset(**CATALOGUE_WIDE)
def catalogue_report(
    context: AssetExecutionContext,
    config: OutputDirConfig,
    catalogue: CatalogueResource,
    benchmark_regressions: RegressionReport,
    efficiency_table: str,
) -> MaterializeResult:
    """The catalogue as an interactive static site (reporting/site.py): a landing page (what changed since the
    previous build, the coverage pivot of the latest import of every partition and file, efficiency, the
    regressions), a page per kernel drawn in the browser from that kernel's data, the regressions page (the
    `benchmark_regressions` result, as stored), efficiency as `efficiency_table` derived it. Built on the previous
    build in its folder: only the kernels the publications since then touched are rebuilt, from their runs
    alone (`build_catalogue_site`; metadata `recomputed` says which and why), and only files whose content
    changed are rewritten."""
    from kernelindex_pipeline.defs.bisection_job import latest_verdicts

    out = _out(config, SITE_DIR)
    # the groups' bisections (bisection_job's verdicts) are shown with them; detection itself is the stored one
    regressions = dataclasses.replace(benchmark_regressions, bisections=latest_verdicts(context.instance))
    with catalogue.open() as store:
        coverage = CoverageTable.of(r for reports in _latest_reports(store.publications()).values() for r in reports)
        site = build_catalogue_site(
            store,
            out,
            coverage=coverage.cells,
            regressions=regressions,
            publication_origins=publication_origins(store),
            efficiency_sidecar=efficiency_table,
        )
    if site.full_rebuild is not None:
        context.log.warning(f"site: every kernel rebuilt: {site.full_rebuild}")
    context.log.info(f"site: {site.recomputed}")
    c = site.counts
    changed = ", ".join(f"{k} ({v})" for k, v in sorted(site.changed.items())) or "nothing"
    context.log.info(
        f"site written to {site.path}: {c['pagesRewritten']} pages rewritten ({c['rewritten']} of {c['kernels']} "
        f"kernel pages), {c['pagesKept']} kept unchanged"
    )
    summary = (
        "| kernels | series | runs | slowdowns | speed-ups | pending | kernel pages rewritten |\n"
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n"
        f"| {c['kernels']} | {c['series']} | {c['runs']} | {c['slowdowns']} | {c['speedups']} | {c['pending']} "
        f"| {c['rewritten']} |\n\nChanged since the previous build: {changed}."
    )
    return MaterializeResult(
        metadata={
            # over HTTP (`kernelindex-pipeline serve`): browsers refuse the UI's file:// links
            "report": MetadataValue.url(site_url() if not config.out_dir else site.path.resolve().as_uri()),
            "path": MetadataValue.path(str(site.path)),
            "summary": MetadataValue.md(summary),
            "kernels_rewritten": c["rewritten"],
            "pages_rewritten": c["pagesRewritten"],
            "pages_kept": c["pagesKept"],
            "kernels_rebuilt": len(site.rebuilt),
            RECOMPUTED: f"{site.recomputed}; {c['rewritten']} of {c['kernels']} kernel pages rewritten (their data "
            "changed)",
        }
    )


def _latest_reports(publications: list[dict]) -> dict[str, list[dict]]:
    """Source -> the import report of the latest publication of each (partition, input file): a
    re-import replaces its earlier report instead of counting twice."""
    latest = {}
    for publication in publications:  # oldest first
        if publication["report"] is not None:
            locator = (publication["snapshot"] or {}).get("locator")
            latest[(publication["partition"], locator)] = publication["report"]
    by_source: dict[str, list[dict]] = {}
    for (partition, _locator), report in latest.items():
        by_source.setdefault(partition.split(":", 1)[0] if ":" in partition else "other", []).append(report)
    return by_source


@asset(**CATALOGUE_WIDE)
def benchmark_coverage(context: AssetExecutionContext, catalogue: CatalogueResource) -> MaterializeResult:
    """What became of every upstream row, per kernel x provider x mode x GPU x version x metric: rows
    seen, runs made, rows skipped by reason, over the latest import of each partition and file of
    every source (the import reports' coverage cells, `imports/coverage.py`'s `CoverageTable`)."""
    with catalogue.open() as store:
        by_source = _latest_reports(store.publications())
    table = CoverageTable.of(report for reports in by_source.values() for report in reports)
    context.log.info(f"coverage: {len(table.cells)} cells from {sum(map(len, by_source.values()))} imports")
    return MaterializeResult(
        metadata={
            "cells": len(table.cells),
            "by_metric": MetadataValue.json(table.by_metric()),
            "by_source": MetadataValue.json(
                {source: CoverageTable.of(reports).by_metric() for source, reports in sorted(by_source.items())}
            ),
            "cells_losing_most_rows": MetadataValue.md(f"```\n{table.text(limit=40)}\n```"),
            RECOMPUTED: f"all {len(table.cells)} cells, summed afresh from the latest report of each of "
            f"{sum(map(len, by_source.values()))} imports",
        }
    )


@asset(**CATALOGUE_WIDE)
def efficiency_table(
    context: AssetExecutionContext,
    config: EfficiencyTableConfig,
    catalogue: CatalogueResource,
    efficiency_settings: EfficiencySettingsResource,
) -> Output[str]:
    """Percent of peak of every latency run in the catalogue (its workload's minimum bytes or FLOPs per
    second against the GPU's datasheet peak and a sweep's measured ceiling, reporting/efficiency.py),
    written as the efficiency.jsonl sidecar, and the least efficient (kernel, pass) per GPU. Derived once per
    publication (reporting/efficiency_parts.py): a refresh derives the publications since the last one (and a
    part whose host's ceiling moved), sums the parts' counts and merges their lines; the value is the sidecar's
    path, which the export copies and the site reads."""
    out = _out(config, "efficiency")
    with catalogue.open() as store:
        done = update_efficiency(store, out, low_threshold=efficiency_settings.low_threshold, rebuild=config.rebuild)
    for warning in done.warnings:
        context.log.warning(warning)
    counts = done.counts
    context.log.info(f"efficiency of {counts.get('ok', 0)} runs in {done.sidecar}: {done.recomputed()}")
    return Output(
        str(done.sidecar),
        metadata={
            "runs_with_figures": counts.get("ok", 0),
            "no_cost_model": counts.get("no cost model", 0),
            "no_peak": counts.get("no peak", 0),
            "low_efficiency": counts.get("low-efficiency", 0),
            "implausible": done.implausible,
            "sidecar": MetadataValue.path(str(done.sidecar)),
            "least_efficient": MetadataValue.md(table_markdown(done.rows)),  # implausible readings last, flagged
            "low_threshold": done.low_threshold,
            "parts_derived": MetadataValue.json(done.written),
            RECOMPUTED: done.recomputed(),
        },
    )


ALL = [catalogue_export, benchmark_regressions, benchmark_coverage, catalogue_report, efficiency_table]
CHECKS = [no_regressions]
