"""The CI chain: Liger-Kernel's own CI result files (https URLs or local paths, listed), each partition
gathering the parts of every file that names it, and the sensor that turns changed files into runs
(one per partition whose files changed; run keys are content digests, as for the history)."""

from __future__ import annotations

import os
from pathlib import Path

from dagster import (
    AssetExecutionContext,
    ConfigurableResource,
    Definitions,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    sensor,
)
from pydantic import Field as PydanticField

from kernelindex_pipeline.defs.chain import (
    SOURCE_SENSOR_SETTINGS,
    ChainSpec,
    SourceRead,
    absent_partitions,
    build_chain,
)
from kernelindex_pipeline.defs.import_plan import changed_partitions, ci_digests, content_run_key
from kernelindex_pipeline.defs.partitions import benchmark_partition_key, register_partitions, split_partition_key
from kernelindex_pipeline.home import dagster_home
from kernelindex_pipeline.imports.fetch import MAX_FILE_BYTES, fetch
from kernelindex_pipeline.liger import ci as liger_ci

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


def _read_ci(context: AssetExecutionContext, partitions: list[str]) -> SourceRead:
    gathered = context.resources.ci.gather()
    parts = {key: gathered.parts.get(split_partition_key(key), []) for key in partitions}
    missing = [key for key in partitions if not parts[key]]
    if missing:
        known = [benchmark_partition_key(*pair) for pair in gathered.parts]
        raise absent_partitions(f"the {len(gathered.files)} listed Liger CI files", missing, known)
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
        how_to_import=(
            "Import it with `kernelindex-pipeline import-ci LOCATOR...` (Liger CI result CSVs: https URLs or local "
            "paths), or list them and turn on liger_ci_sensor."
        ),
    )
)


@sensor(
    name="liger_ci_sensor",
    job=CI.job,
    **SOURCE_SENSOR_SETTINGS,
    description=(
        "Reads every listed Liger CI results file, registers the GPU x version pairs they name and requests an "
        "import run for each partition whose files changed (run keys are content digests of its parts)."
    ),
)
def liger_ci_sensor(context: SensorEvaluationContext, ci: LigerCiResource):
    gathered = ci.gather()
    added = register_partitions(context.instance, "ci", gathered.parts)
    digests = ci_digests(gathered)
    runs = [
        RunRequest(run_key=content_run_key("ci", key, digests[key]), partition_key=key)
        for key in changed_partitions(context.instance, CI.publication, digests)
    ]
    context.log.info(f"{len(gathered.files)} CI files: {len(runs)} partitions ({len(added)} new)")
    return SensorResult(run_requests=runs)


def defs() -> Definitions:
    """The CI chain's assets, job and sensor."""
    return Definitions(assets=CI.assets, jobs=[CI.job], sensors=[liger_ci_sensor])
