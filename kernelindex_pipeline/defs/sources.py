"""The three sources and their chains: what differs is only how a partition's parts are read."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import AssetCheckResult, AssetCheckSeverity, AssetExecutionContext, ConfigurableResource, Field
from pydantic import Field as PydanticField

from kernelindex_pipeline.defs.chain import Chain, ChainSpec, SourceRead, build_chain
from kernelindex_pipeline.defs.partitions import split_partition_key
from kernelindex_pipeline.home import dagster_home
from kernelindex_pipeline.imports.fetch import MAX_FILE_BYTES, fetch
from kernelindex_pipeline.liger import ci as liger_ci
from kernelindex_pipeline.liger import partition as liger_partition

HISTORY_RELEASE_TAG = "kernelindex/history_release"
CI_FILES_ENV = "KERNELINDEX_CI_FILES"


class LigerCiResource(ConfigurableResource):
    """Where Liger's CI result files are listed: https URLs or local paths, in `locators` and/or a list file."""

    locators: list[str] = PydanticField(default_factory=list, description="CI files (https URLs or local paths).")
    list_file: str = PydanticField(
        default="",
        description=f"A file of locators, one per line ('#' comments); empty: ${CI_FILES_ENV} or DAGSTER_HOME/liger-ci-files.txt.",
    )
    max_bytes: int = PydanticField(default=MAX_FILE_BYTES, description="Largest CI file accepted, in bytes.")

    def list_path(self) -> Path:
        return Path(self.list_file or os.environ.get(CI_FILES_ENV) or dagster_home() / "liger-ci-files.txt")

    def all_locators(self) -> list[str]:
        listed = liger_ci.read_locator_list(self.list_path())
        return list(dict.fromkeys([*self.locators, *listed]))

    def gather(self) -> liger_ci.CiPartitions:
        return liger_ci.gather(fetch(locator, max_bytes=self.max_bytes) for locator in self.all_locators())


def _read_history(context: AssetExecutionContext, partitions: list[str]) -> SourceRead:
    releases = context.resources.releases
    # Sensors and the import commands pin the release in a tag, so a run never asks the index again.
    version = context.run.tags.get(HISTORY_RELEASE_TAG) or releases.history_version()
    artifact = releases.fetch(version)
    parts = {}
    for key in partitions:
        gpu, liger_version = split_partition_key(key)
        parts[key] = [liger_partition.history_partition_csv(artifact, gpu, liger_version)]
    return SourceRead(
        parts, metadata={"history_release": version, "sdist_sha256": artifact.sha256, "sdist": artifact.locator}
    )


def _read_ci(context: AssetExecutionContext, partitions: list[str]) -> SourceRead:
    gathered = context.resources.ci.gather()
    parts = {key: gathered.parts.get(split_partition_key(key), []) for key in partitions}
    for locator, rows in gathered.unattributable.items():
        context.log.warning(
            f"{locator}: {len(rows)} rows name no usable GPU or version (first: {rows[:10]}); they belong to no partition"
        )
    return SourceRead(
        parts,
        metadata={
            "files_listed": len(gathered.files),
            "unattributable_rows": sum(map(len, gathered.unattributable.values())),
        },
    )


def _read_sweep(context: AssetExecutionContext, partitions: list[str]) -> SourceRead:
    from kernelindex_pipeline.defs.sweep import run_sweep_through_pipes, sweep_metadata

    (key,) = partitions  # one partition per sweep run (no single-run backfill policy)
    gpu, version = split_partition_key(key)
    kernels = list(context.op_execution_context.op_config.get("kernels") or [])
    part = run_sweep_through_pipes(context, gpu, version, kernels, context.resources.releases, context.resources.runner)
    failed = part.sweep.failed
    check = AssetCheckResult(
        check_name="sweep_scripts_succeeded",
        passed=not failed,
        severity=AssetCheckSeverity.WARN,
        metadata={"scripts": len(part.sweep.outcomes), "failed": "\n".join(o.summary() for o in failed) or "none"},
    )
    return SourceRead({key: [part]}, metadata=sweep_metadata(part.sweep), checks=[check])


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
    )
)

CI = build_chain(
    ChainSpec(
        source="ci",
        description=(
            "Per partition, the rows of every listed Liger CI results file (https URL or local path) that name this "
            "GPU and Liger version: one part per file, so weekly runs of one version land side by side."
        ),
        read=_read_ci,
        job_name="ci_import_job",
        job_description="Import Liger-Kernel's own CI benchmark results (listed CSV files) and publish them.",
        resources=frozenset({"ci"}),
        single_run=True,
    )
)

SWEEP = build_chain(
    ChainSpec(
        source="sweep",
        description=(
            "The rows the partition's Liger release's own benchmark scripts just measured on a GPU of this type, "
            "run through Dagster Pipes in a process (or pod) of its own; per-script outcomes in the metadata."
        ),
        read=_read_sweep,
        job_name="gpu_sweep_job",
        job_description="Run the release's benchmark scripts on a GPU of the partition's type and publish what was measured.",
        resources=frozenset({"releases", "runner"}),
        single_run=False,
        source_checks=(
            (
                "sweep_scripts_succeeded",
                "Every benchmark script of the sweep ended ok (a warning: the good rows still go on).",
            ),
        ),
        config_schema={
            "kernels": Field([str], default_value=[], description="Kernels to sweep (empty: every script).")
        },
    )
)

CHAINS: dict[str, Chain] = {chain.spec.source: chain for chain in (HISTORY, CI, SWEEP)}
