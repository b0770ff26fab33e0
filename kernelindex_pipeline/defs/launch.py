"""The import commands' application layer: `import-history` and `import-ci` as plans (defs/import_plan.py)
carried out by Dagster run control (defs/run_control.py) and shown by defs/import_summary.py.

Each registers its source's partitions, works out which partitions to import in which runs, launches
and follows those runs, and reports the summary. The catalogue automation refreshes the catalogue-wide
assets on its own; with `wait` the command waits for that refresh too (`--wait`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dagster import DagsterInstance

from kernelindex_pipeline.defs.import_plan import UnknownPartitions, changed_partitions, ci_digests, partition_runs
from kernelindex_pipeline.defs.import_summary import ImportSummary
from kernelindex_pipeline.defs.run_control import refresh_left_behind, run_import


def _resources(*names: str):
    from dagster import build_resources

    from kernelindex_pipeline.defs.environment_resources import resources_from_environment

    configured = resources_from_environment()
    return build_resources({name: configured[name] for name in names})


def _finish(summary: ImportSummary, catalogue) -> ImportSummary:
    with catalogue.open() as store:
        summary.catalogue_by_kind = store.counts_by_kind()
        summary.catalogue_fingerprint = store.content_fingerprint()
    summary.catalogue_url = catalogue.safe_url
    return summary


def import_history(
    instance: DagsterInstance,
    home: Path,
    *,
    partitions: list[tuple[str, str]] | None = None,
    verbose: bool = False,
    wait: bool = False,
    log: Callable[[str], None] = print,
    report: Callable[[ImportSummary], None] = lambda summary: None,
) -> ImportSummary:
    """Every (or the given) partition of the newest history through `history_import_job`."""
    from kernelindex_pipeline.defs.history_chain import HISTORY, HISTORY_RELEASE_TAG
    from kernelindex_pipeline.defs.partitions import benchmark_partition_key, register_partitions, registered_keys
    from kernelindex_pipeline.liger.partition import slice_history
    from kernelindex_pipeline.liger.release import read_history_csv

    with _resources("releases", "catalogue") as resources:
        version = resources.releases.history_version()
        data, _snapshot = read_history_csv(resources.releases.fetch(version))
        slices = slice_history(data)
        if slices.unattributable_rows:
            log(
                f"{len(slices.unattributable_rows)} rows of the {version} history name no usable GPU or version "
                f"(first rows: {slices.unattributable_rows[:10]}); they belong to no partition"
            )
        register_partitions(instance, "history", slices.partitions)
        unknown = [f"{gpu}|{v}" for gpu, v in partitions or [] if (gpu, v) not in slices.partitions]
        if unknown:
            known = sorted(f"{gpu}|{v}" for gpu, v in slices.partitions)
            raise UnknownPartitions(
                f"--partition {', '.join(map(repr, unknown))}: not in the history of liger-kernel {version} "
                f"({len(known)} partitions, e.g. {', '.join(known[:3])})"
            )
        keys = [benchmark_partition_key(*pair) for pair in (partitions or slices.partitions)]
        summary = ImportSummary("history", f"history of liger-kernel {version}", keys)
        tags = partition_runs(keys, registered_keys(instance, "history"), {HISTORY_RELEASE_TAG: version})
        run_import(
            instance,
            home,
            summary=summary,
            job=HISTORY.job.name,
            run_tags=tags,
            verbose=verbose,
            wait=wait,
            log=log,
            report=lambda done: report(_finish(done, resources.catalogue)),
        )
        return summary


def import_ci(
    instance: DagsterInstance,
    home: Path,
    locators: list[str],
    *,
    verbose: bool = False,
    wait: bool = False,
    log: Callable[[str], None] = print,
    report: Callable[[ImportSummary], None] = lambda summary: None,
) -> ImportSummary:
    """Add `locators` to the CI file list, then import every partition whose listed files changed."""
    from kernelindex_pipeline.defs.ci_chain import CI
    from kernelindex_pipeline.defs.partitions import register_partitions, registered_keys
    from kernelindex_pipeline.imports.fetch import fetch
    from kernelindex_pipeline.liger import ci as liger_ci

    with _resources("ci", "catalogue") as resources:
        # Fetch first: a locator that cannot be read never reaches the list.
        named = liger_ci.gather(fetch(locator, max_bytes=resources.ci.max_bytes) for locator in locators)
        added = liger_ci.add_to_locator_list(resources.ci.list_path(), locators)
        gathered = resources.ci.gather()
        pairs = [pair for pair in gathered.parts if pair in named.parts]
        register_partitions(instance, "ci", pairs)
        changed = changed_partitions(instance, CI.publication, ci_digests(gathered, pairs))
        detail = f"{len(locators)} CI files ({len(added)} newly listed in {resources.ci.list_path()})"
        summary = ImportSummary("ci", detail, changed)
        unchanged = len(pairs) - len(changed)
        if unchanged:
            summary.notes.append(f"{unchanged} partitions unchanged since their last import: nothing to do for them")
        for locator, rows in named.unattributable.items():
            summary.notes.append(
                f"{locator}: {len(rows)} rows name no usable GPU or version; they belong to no partition"
            )
        if changed:
            tags = partition_runs(changed, registered_keys(instance, "ci"), {})
            run_import(
                instance,
                home,
                summary=summary,
                job=CI.job.name,
                run_tags=tags,
                verbose=verbose,
                wait=wait,
                log=log,
                report=lambda done: report(_finish(done, resources.catalogue)),
            )
        else:
            report(_finish(summary, resources.catalogue))
            if pairs:  # published before: a refresh an earlier import left to the automation may be due
                refresh_left_behind(instance, home, summary, verbose=verbose, wait=wait, log=log)
        return summary
