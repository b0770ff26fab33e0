"""Blocking checks on a chain's records, evaluated in the step that builds them.

Each check recomputes from the records themselves rather than trusting the library's own validation,
so a record corrupted anywhere between construction and publication is caught before it reaches the
catalogue. One step may build many partitions (a history or CI backfill runs as one run), so each check
gathers its problems by partition and reports them once for the step; a failed blocking check stops
that step's publication.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetKey

from kernelindex_pipeline.liger.report import skip_totals
from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.records.schema import validate_manifest

RUN_REFERENCES = ("implementationDigest", "workloadDigest", "protocolDigest", "environmentDigest")
_SHOWN = 20  # problems listed in metadata; the count is always complete

RECORD_CHECKS = {
    "records_schema_valid": "Every manifest of the partition validates against the project's strict schema.",
    "record_digests_recompute": "Every record's digest equals sha256 over the RFC 8785 JSON of {apiVersion, kind, spec}.",
    "run_references_resolve": "Each run's four digests name records in this set or already in the catalogue.",
    "rows_conserved": "Rows read = runs + every skipped row + every issue: no row is lost.",
}


def record_check_specs(asset_key: AssetKey, partitions_def=None) -> list[AssetCheckSpec]:
    return [
        AssetCheckSpec(name, asset=asset_key, blocking=True, partitions_def=partitions_def, description=description)
        for name, description in RECORD_CHECKS.items()
    ]


def check_result(asset_key: AssetKey, name: str, problems: Mapping[str, list[str]], checked: int) -> AssetCheckResult:
    """One evaluation of check `name` over the problems found per partition."""
    listed = [f"{partition}: {problem}" for partition, found in problems.items() for problem in found]
    return AssetCheckResult(
        check_name=name,
        asset_key=asset_key,
        passed=not listed,
        severity=AssetCheckSeverity.ERROR,
        metadata={
            "checked": checked,
            "problems": len(listed),
            "partitions_with_problems": sorted(partition for partition, found in problems.items() if found),
            "first_problems": "\n".join(listed[:_SHOWN]) or "none",
        },
    )


def schema_problems(manifests: Mapping[str, dict]) -> list[str]:
    return [str(problem) for manifest in manifests.values() for problem in validate_manifest(manifest)]


def digest_problems(manifests: Mapping[str, dict]) -> list[str]:
    problems = []
    for digest, manifest in manifests.items():
        try:
            actual = digest_of(manifest)
        except Exception as error:  # a manifest that cannot even be canonicalised fails the check
            actual = f"<{error}>"
        if actual != digest:
            problems.append(
                f"{manifest.get('kind')}/{manifest.get('metadata', {}).get('name')}: stored as {digest}, recomputes to {actual}"
            )
    return problems


def reference_problems(manifests: Mapping[str, dict], published: Callable[[Iterable[str]], set[str]]) -> list[str]:
    runs = [m for m in manifests.values() if m.get("kind") == "BenchmarkRun"]
    wanted = {m["spec"].get(field) for m in runs for field in RUN_REFERENCES} - set(manifests) - {None}
    found = published(wanted) if wanted else set()
    problems = []
    for run in runs:
        for field in RUN_REFERENCES:
            ref = run["spec"].get(field)
            if ref not in manifests and ref not in found:
                problems.append(f"BenchmarkRun/{run['metadata'].get('name')}: {field} {ref} resolves to no record")
    return problems


def conservation_problems(report: Mapping) -> list[str]:
    skipped_rows = sum(skip_totals(report).values())
    accounted = report["runs"] + skipped_rows + len(report["issues"])
    if accounted == report["rowsRead"]:
        return []
    return [
        f"rows read {report['rowsRead']} but runs {report['runs']} + skipped {skipped_rows} + issues {len(report['issues'])} = {accounted}"
    ]
