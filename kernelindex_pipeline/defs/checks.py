"""Blocking checks on a partition's records, evaluated in the step that builds them.

Each check recomputes from the records themselves rather than trusting the library's
own validation, so a record corrupted anywhere between construction and publication is
caught before it reaches the catalogue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

from dagster import AssetCheckResult, AssetCheckSeverity, AssetCheckSpec, AssetKey

from kernelindex_pipeline.defs.partitions import benchmark_partitions
from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.records.schema import validate_manifest

RECORDS_ASSET = AssetKey("kernelindex_records")
RUN_REFERENCES = ("implementationDigest", "workloadDigest", "protocolDigest", "environmentDigest")
_SHOWN = 20  # problems listed in metadata; the count is always complete

RECORD_CHECK_SPECS = [
    AssetCheckSpec("records_schema_valid", asset=RECORDS_ASSET, blocking=True, partitions_def=benchmark_partitions,
                   description="Every manifest of the partition validates against the project's strict schema."),
    AssetCheckSpec("record_digests_recompute", asset=RECORDS_ASSET, blocking=True, partitions_def=benchmark_partitions,
                   description="Every record's digest equals sha256 over the RFC 8785 JSON of {apiVersion, kind, spec}."),
    AssetCheckSpec("run_references_resolve", asset=RECORDS_ASSET, blocking=True, partitions_def=benchmark_partitions,
                   description="Each run's four digests name records in this set or already in the catalogue."),
    AssetCheckSpec("rows_conserved", asset=RECORDS_ASSET, blocking=True, partitions_def=benchmark_partitions,
                   description="Rows read = runs + every skipped row + every issue: no row is lost."),
]


def _result(name: str, problems: list[str], checked: int) -> AssetCheckResult:
    return AssetCheckResult(
        check_name=name,
        asset_key=RECORDS_ASSET,
        passed=not problems,
        severity=AssetCheckSeverity.ERROR,
        metadata={"checked": checked, "problems": len(problems), "first_problems": "\n".join(problems[:_SHOWN]) or "none"},
    )


def check_schema(manifests: Mapping[str, dict]) -> AssetCheckResult:
    problems = [str(problem) for manifest in manifests.values() for problem in validate_manifest(manifest)]
    return _result("records_schema_valid", problems, len(manifests))


def check_digests(manifests: Mapping[str, dict]) -> AssetCheckResult:
    problems = []
    for digest, manifest in manifests.items():
        try:
            actual = digest_of(manifest)
        except Exception as error:  # a manifest that cannot even be canonicalised fails the check
            actual = f"<{error}>"
        if actual != digest:
            problems.append(f"{manifest.get('kind')}/{manifest.get('metadata', {}).get('name')}: stored as {digest}, recomputes to {actual}")
    return _result("record_digests_recompute", problems, len(manifests))


def check_references(manifests: Mapping[str, dict], published: Callable[[Iterable[str]], set[str]]) -> AssetCheckResult:
    runs = [m for m in manifests.values() if m.get("kind") == "BenchmarkRun"]
    wanted = {m["spec"].get(field) for m in runs for field in RUN_REFERENCES} - set(manifests) - {None}
    found = published(wanted) if wanted else set()
    problems = []
    for run in runs:
        for field in RUN_REFERENCES:
            ref = run["spec"].get(field)
            if ref not in manifests and ref not in found:
                problems.append(f"BenchmarkRun/{run['metadata'].get('name')}: {field} {ref} resolves to no record")
    return _result("run_references_resolve", problems, len(runs))


def check_conservation(report: Mapping) -> AssetCheckResult:
    skipped = report["skipped"]
    skipped_rows = sum(v if isinstance(v, int) else sum(v.values()) for v in skipped.values())
    accounted = report["runs"] + skipped_rows + len(report["issues"])
    problems = [] if accounted == report["rowsRead"] else [
        f"rows read {report['rowsRead']} but runs {report['runs']} + skipped {skipped_rows} + issues {len(report['issues'])} = {accounted}"
    ]
    return _result("rows_conserved", problems, report["rowsRead"])
