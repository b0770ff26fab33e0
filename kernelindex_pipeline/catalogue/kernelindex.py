"""Exports that KernelIndex's own publication code accepts as they are (docs/reference/exports.md).

Two routes into KernelIndex (SamMausberg/KernelIndex apps/web/src/server/catalog):

* **Submission document** (`submission_document`, written as ONE YAML document): the shape
  `bundleFromSubmission(text)` reads for a PR or web submission, published under KernelIndex's
  `community` source:

      projects:        [SoftwareProject manifest, ...]
      operations:      [OperationSpec manifest, ...]
      workloads:       [WorkloadCase manifest, ...]
      implementations: [{projectSlug: <project slug>, manifest: ImplementationRevision}, ...]
      runs:            [{run: BenchmarkRun, protocol: BenchmarkProtocol, environment: ExecutionEnvironment}, ...]

* **Importer bundle** (`import_bundle`, written as JSON): `ImportBundle` of catalog/publication.ts, what an
  importer hands to `publishBundle(db, bundle, {publish: true})`; it keeps the source's provenance:

      {source: {slug, kind, name, policy?},
       snapshots: [{locator, contentDigest, parserName, parserVersion, observedAt, fetchedAt, sizeBytes?, mediaType?}],
       projects: [{manifest, slug, externalId?}],
       operations: [{manifest, slug, externalId?}],
       workloads: [{manifest, externalId?}],
       implementations: [{manifest, slug, projectSlug, externalId?}],
       runs: [{manifest, protocol, environment, externalId?, artifacts?: [BundleArtifact]}]}

  `observedAt`/`fetchedAt` are ISO 8601 strings (JSON has no dates): the caller turns them into `Date`s.
  externalIds are the ones KernelIndex's own Liger importer writes (`<kernel>` for an operation,
  `<kernel>/<case key>` for a workload, `<kernel>/<provider>` for an implementation, the run's
  sourceNative.externalId for a run), so both routes land in the same source_links rows.

Both: a run we measured (a sweep's) goes without spec.sourceNative (`ranked_by_interval`), so KernelIndex ranks
it by its confidence95; Liger's history and CI runs go as they are.

Both: every manifest in KernelIndex's normal form (records/units.py), each implementation linked to its
project (read from its runs' externalIds and the provider catalogue, else its own name; the project's
SoftwareProject is added from the catalogue when the records lack it), a WorkloadCase's tensors in the
order of its operation's inputs (KernelIndex summarises a workload by its first tensor; our records are
stored in canonical key order), runs in publication order (as given: an import's row order; KernelIndex
breaks ties of equal observedAt by insertion order when it derives record events), and **peak-memory runs
only with include_memory=True**: KernelIndex's pages rank every primary value lower-is-better and put a
memory table first for two operations, so our memory runs would read as the headline and rank the
largest footprint as worst-is-best. They stay in our catalogue and other exports.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml

from kernelindex_pipeline.liger import identity
from kernelindex_pipeline.liger.catalogue import Catalogue
from kernelindex_pipeline.records.metrics import PEAK_MEMORY, run_metric
from kernelindex_pipeline.records.names import kebab
from kernelindex_pipeline.records.units import normal_form

# KernelIndex's Liger source (apps/web/src/server/import/liger/types.ts LIGER_SOURCE), so history and CI
# runs published through the importer route join the rows KernelIndex's own importer makes.
LIGER_SOURCE = {
    "slug": "liger-kernel-bench",
    "kind": "benchmark",
    "name": "Liger-Kernel benchmarks",
    "policy": {
        "license": "BSD-2-Clause",
        "attribution": "LinkedIn Liger-Kernel",
        "url": "https://github.com/linkedin/Liger-Kernel",
        "terms": "Redistribution permitted with copyright notice retention.",
        "verified": "2026-08-14",
        "freshnessDays": 30,
    },
}
# Our own measurements (sweeps and their sentinel) are not Liger's rows: they publish under a source of ours.
PIPELINE_SOURCE = {
    "slug": "kernelindex-pipeline-sweeps",
    "kind": "benchmark",
    "name": "kernelindex-pipeline GPU sweeps of Liger-Kernel releases",
}
PARSER = {"parserName": "kernelindex-pipeline", "parserVersion": "1"}
SUBMISSION_GROUPS = ("projects", "operations", "workloads", "implementations", "runs")
LIGER_SCRIPT_URL = "https://github.com/linkedin/Liger-Kernel/blob/{commit}/benchmark/scripts/benchmark_{kernel}.py"
SENTINEL_PREFIX = "sentinel_"  # liger/sentinel.py benchmarks: sentinel_<operation>/<position>
# Evidence KernelIndex can fetch: an https URL (an artifact store with a public base URL) or object storage.
# A local store's content names (ni:///sha-256;...) name bytes no one else can fetch: left out of the bundle.
FETCHABLE_SCHEMES = ("https", "s3", "gs", "gcs", "az", "abfs")


class KernelIndexExportError(ValueError):
    """The records cannot be exported for KernelIndex as they are (the message names the record)."""


@dataclass
class KernelIndexExport:
    """The records grouped for KernelIndex, with what each route needs beyond the manifests."""

    projects: list[dict[str, Any]] = field(default_factory=list)
    operations: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    implementations: list[dict[str, Any]] = field(default_factory=list)
    runs: list[dict[str, Any]] = field(default_factory=list)  # {manifest, protocol, environment}
    # manifest digest -> its externalIds in first-seen order: KernelIndex's importer links every source
    # name of a record, and two kernels can share one operation, case or implementation
    external_ids: dict[str, list[str]] = field(default_factory=dict)
    # implementation digest -> project slug per externalId (None: the implementation's own)
    project_of: dict[str, dict[str | None, str]] = field(default_factory=dict)

    def add_external_id(self, digest: str, external_id: str) -> None:
        known = self.external_ids.setdefault(digest, [])
        if external_id not in known:
            known.append(external_id)

    def first_project(self, digest: str) -> str:
        return next(iter(self.project_of[digest].values()))

    memory_runs_left_out: int = 0
    # measured runs written without spec.sourceNative (`ranked_by_interval`): KernelIndex's digest of each is
    # that of the form exported, not our catalogue's
    runs_ranked_by_interval: int = 0
    # the sweep's sentinel runs: calibration of a sweep's environment, not kernels to rank (KernelIndex's ADR
    # 0003 keeps calibration apart from catalogue operations); they stay in our catalogue
    sentinel_runs_left_out: int = 0


@functools.cache
def _descriptions() -> dict[str, dict[str, str]]:
    """KernelIndex's descriptions of Liger kernels and providers (data/kernelindex-liger-descriptions.yaml)."""
    text = (
        resources.files("kernelindex_pipeline").joinpath("data/kernelindex-liger-descriptions.yaml").read_text("utf-8")
    )
    return yaml.safe_load(text)


def _with_editorial(manifest: dict[str, Any], external_id: str | None, source_commit: str | None) -> dict[str, Any]:
    """Metadata KernelIndex's own Liger importer writes and our records leave out (never digested): an
    operation's and an implementation's description, an operation's link to its benchmark script at
    the source's commit. Only where the record has none and its source name is a Liger one."""
    if external_id is None:
        return manifest
    metadata = dict(manifest["metadata"])
    descriptions = _descriptions()
    if manifest["kind"] == "OperationSpec":
        description = descriptions["kernels"].get(external_id)
        if source_commit and "sourceRefs" not in metadata and description is not None:
            metadata["sourceRefs"] = [{"url": LIGER_SCRIPT_URL.format(commit=source_commit, kernel=external_id)}]
    else:
        description = descriptions["providers"].get(external_id.rpartition("/")[2])
    if description is not None and "description" not in metadata:
        metadata["description"] = description
    return manifest if metadata == manifest["metadata"] else {**manifest, "metadata": metadata}


def _origin(environment: dict[str, Any] | None) -> str:
    """ "measured" for a run on an environment with software facts (our sweeps), else "upstream"."""
    return "measured" if environment is not None and (environment["spec"].get("software") or {}) else "upstream"


def _is_sentinel_run(run: dict[str, Any]) -> bool:
    return str((run["spec"].get("sourceNative") or {}).get("benchmark", "")).startswith(SENTINEL_PREFIX)


def ranked_by_interval(run: dict[str, Any]) -> dict[str, Any]:
    """A run we measured, as KernelIndex is given it: without `spec.sourceNative`. KernelIndex ranks a cohort
    any of whose runs has sourceNative under its `source_native` profile, which keeps the source's order and
    ties only equal values (policy/ranking.ts, ranking-v1); without it the cohort is `strict_exact`, where
    two runs whose `timing.latencyNs.confidence95` overlap share a rank. A sweep's run has that interval (its
    rounds, or its raw samples); what sourceNative held stays in our catalogue: its externalId is the bundle
    entry's externalId, its metrics (the script's ms_50/ms_20/ms_80) are the run's median and p20/p80."""
    spec = {key: value for key, value in run["spec"].items() if key != "sourceNative"}
    return {**run, "spec": spec}


def _is_memory_run(run: dict[str, Any]) -> bool:
    return run_metric(run["spec"]) == PEAK_MEMORY


def _ordered_tensors(workload: dict[str, Any], operation: dict[str, Any] | None) -> dict[str, Any]:
    """The workload with its tensors in the order of its operation's inputs (then any others)."""
    tensors = workload["spec"].get("tensors") or {}
    if operation is None:
        return workload
    order = [
        argument["name"] for argument in operation["spec"].get("inputs", []) + operation["spec"].get("outputs", [])
    ]
    ranked = sorted(tensors, key=lambda name: order.index(name) if name in order else len(order))
    return {**workload, "spec": {**workload["spec"], "tensors": {name: tensors[name] for name in ranked}}}


def _project_of_provider(catalogue: Catalogue, provider: str) -> str | None:
    """The provider catalogue's project of a CSV provider name (an A/B `<p>-base`/`<p>-pr` is its `<p>`'s)."""
    found = catalogue.providers.get(provider)
    if found is None and provider.rpartition("-")[2] in ("base", "pr"):
        found = catalogue.providers.get(provider.rpartition("-")[0])
    return found.project if found is not None else None


def _primary_value(run: dict[str, Any]) -> float:
    """The value KernelIndex ranks a run by (its primary measurement), for ordering only."""
    spec = run["spec"]
    timing = spec.get("timing")
    if timing:
        latency = timing.get("latencyNs") or {}
        value = latency.get("mean") if timing.get("primaryStatistic") == "mean" else latency.get("median")
        return float(value if value is not None else latency.get("median", latency.get("mean", 0)))
    measurements = spec.get("measurements") or [{}]
    return float(measurements[0].get("value", 0))


def publication_order(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Runs by observedAt, and among runs observed at one instant the better (lower) primary value
    first: KernelIndex derives record events by observedAt, then insertion order, so this publishes
    no "record" for a run that was never the best at any instant. For records whose source order is
    lost (a catalogue or records.jsonl lists runs by name); an import's own row order is kept as given."""
    return sorted(runs, key=_publication_key)


def _publication_key(run: dict[str, Any]) -> tuple[str, float]:
    return (run["spec"].get("observedAt", ""), _primary_value(run))


def group_for_kernelindex(
    manifests: Iterable[dict[str, Any]] | PreparedRecords,
    catalogue: Catalogue,
    *,
    include_memory: bool = False,
    order: str = "given",
    source_commit: str | None = None,
    runs_from: str | None = None,
) -> KernelIndexExport:
    """Group records for either route, runs in the order given (`order="given"`: an import's row order)
    or in `publication_order` (`order="time"`: records whose source order is lost); raises
    KernelIndexExportError when a run references a record that is missing or an implementation has no
    project. `source_commit`: the Liger commit the records' CSV was read at (operations then link their
    benchmark script there, as KernelIndex's importer does). `runs_from`: only runs Liger measured
    ("upstream": history and CI, whose environments carry no software facts) or we did ("measured":
    sweeps, whose environments do), and what they reference; None: all."""
    prepared = manifests if isinstance(manifests, PreparedRecords) else prepare_records(manifests, order=order)
    if prepared.order != order:
        raise ValueError(f"records prepared in {prepared.order!r} order, asked for {order!r}")
    by_digest, seen, run_digests = prepared.by_digest, prepared.seen, prepared.run_digests
    out = KernelIndexExport()
    used = _add_runs(out, catalogue, by_digest, run_digests, include_memory=include_memory, runs_from=runs_from)
    _named_provider_first(out, by_digest)
    _add_used_records(out, catalogue, by_digest, seen, used, source_commit)
    out.projects = _projects_of_implementations(out, catalogue, by_digest)
    return out


@dataclass(frozen=True)
class PreparedRecords:
    """Records in normal form by digest, the digests in the order first given, and the runs' digests in the
    order asked: what every `group_for_kernelindex` of one export shares (the export groups three times, all
    runs and each origin's), so normal form and digests are computed once."""

    by_digest: dict[str, dict[str, Any]]
    seen: list[str]
    run_digests: list[str]
    order: str


def prepare_records(manifests: Iterable[dict[str, Any]], *, order: str = "given") -> PreparedRecords:
    """`manifests` ready for `group_for_kernelindex` (which takes them in place of manifests)."""
    if order not in ("given", "time"):
        raise ValueError(f"order is 'given' or 'time', not {order!r}")
    by_digest, seen = _distinct_records(manifests)
    run_digests = [digest for digest in seen if by_digest[digest]["kind"] == "BenchmarkRun"]
    if order == "time":  # publication_order's key; sorted is stable, so the order of the runs it would give
        run_digests = sorted(run_digests, key=lambda digest: _publication_key(by_digest[digest]))
    return PreparedRecords(by_digest, seen, run_digests, order)


def _distinct_records(manifests: Iterable[dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Each record once, in normal form, by digest; and the digests in the order first given."""
    from kernelindex_pipeline.records.canonical import digest_of

    by_digest: dict[str, dict[str, Any]] = {}
    seen: list[str] = []
    for manifest in manifests:
        manifest = normal_form(manifest)
        digest = digest_of(manifest)
        if digest not in by_digest:
            by_digest[digest] = manifest
            seen.append(digest)
    return by_digest, seen


def _add_runs(
    out: KernelIndexExport,
    catalogue: Catalogue,
    by_digest: dict[str, dict[str, Any]],
    run_digests: list[str],
    *,
    include_memory: bool,
    runs_from: str | None,
) -> set[str]:
    """Add the runs (of `runs_from`'s origin; peak-memory ones only with include_memory) with their
    protocol and environment, link each; returns the digests of the implementations, workloads and
    operations they use."""
    from kernelindex_pipeline.records.canonical import digest_of

    used: set[str] = set()
    for digest in run_digests:
        run = by_digest[digest]
        spec = run["spec"]
        if runs_from is not None and _origin(by_digest.get(spec.get("environmentDigest", ""))) != runs_from:
            continue
        if _is_sentinel_run(run):
            out.sentinel_runs_left_out += 1
            continue
        if _is_memory_run(run) and not include_memory:
            out.memory_runs_left_out += 1
            continue
        referenced = _referenced_records(run, by_digest)
        operation_digest = referenced["WorkloadCase"]["spec"]["operationSpecDigest"]
        used.update([spec["implementationDigest"], spec["workloadDigest"], operation_digest])
        exported = run
        if _origin(referenced["ExecutionEnvironment"]) == "measured" and "sourceNative" in spec:
            exported = ranked_by_interval(run)
            out.runs_ranked_by_interval += 1
        out.runs.append(
            {
                "manifest": exported,
                "protocol": referenced["BenchmarkProtocol"],
                "environment": referenced["ExecutionEnvironment"],
            }
        )
        _link_run(out, catalogue, digest_of(exported), run, spec, operation_digest)
    return used


def _referenced_records(run: dict[str, Any], by_digest: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The records a run references, by kind; KernelIndexExportError naming the first that is missing."""
    spec = run["spec"]
    referenced = {}
    for key, kind in (
        ("protocolDigest", "BenchmarkProtocol"),
        ("environmentDigest", "ExecutionEnvironment"),
        ("implementationDigest", "ImplementationRevision"),
        ("workloadDigest", "WorkloadCase"),
    ):
        target = by_digest.get(spec.get(key, ""))
        if target is None or target["kind"] != kind:
            raise KernelIndexExportError(
                f"run {run['metadata']['name']}: its {kind} {spec.get(key)} is not in the records; export them together"
            )
        referenced[kind] = target
    return referenced


def _add_used_records(
    out: KernelIndexExport,
    catalogue: Catalogue,
    by_digest: dict[str, dict[str, Any]],
    seen: list[str],
    used: set[str],
    source_commit: str | None,
) -> None:
    """Add the operations, workloads and implementations the added runs use, in the order first given."""
    for digest in seen:
        manifest = by_digest[digest]
        kind = manifest["kind"]
        first_id = (out.external_ids.get(digest) or [None])[0]
        if kind == "OperationSpec" and digest in used:
            out.operations.append(_with_editorial(manifest, first_id, source_commit))
        elif kind == "WorkloadCase" and digest in used:
            out.workloads.append(_ordered_tensors(manifest, by_digest.get(manifest["spec"]["operationSpecDigest"])))
        elif kind == "ImplementationRevision" and digest in used:
            if digest not in out.project_of:
                out.project_of[digest] = {None: _project_by_name(manifest, catalogue)}
            out.implementations.append(_with_editorial(manifest, first_id, source_commit))


def _projects_of_implementations(
    out: KernelIndexExport, catalogue: Catalogue, by_digest: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """The software projects of the added implementations, from the records or else the provider catalogue."""
    from kernelindex_pipeline.liger.builders import software_project
    from kernelindex_pipeline.records.canonical import digest_of

    present = {kebab(m["metadata"]["name"]) for m in by_digest.values() if m["kind"] == "SoftwareProject"}
    needed = list(
        dict.fromkeys(project for m in out.implementations for project in out.project_of[digest_of(m)].values())
    )
    projects = {kebab(m["metadata"]["name"]): m for m in by_digest.values() if m["kind"] == "SoftwareProject"}
    for slug in needed:
        if slug not in present:
            if slug not in catalogue.projects:
                raise KernelIndexExportError(
                    f"project {slug!r} is neither in the records nor in the provider catalogue"
                )
            projects[slug] = software_project(catalogue, slug)
    return [projects[slug] for slug in needed]


def _link_run(
    out: KernelIndexExport, catalogue: Catalogue, digest: str, run: dict, spec: dict, operation_digest: str
) -> None:
    """externalIds of the run and what it references, and its implementation's project."""
    external_id = (spec.get("sourceNative") or {}).get("externalId")
    if not external_id:
        return
    out.add_external_id(digest, external_id)
    found = identity.parse_external_id(external_id)
    if found is None:
        return
    project = _project_of_provider(catalogue, found.provider)
    implementation_id = f"{found.kernel}/{found.provider}"
    if project is not None:
        out.project_of.setdefault(spec["implementationDigest"], {}).setdefault(implementation_id, project)
    out.add_external_id(operation_digest, found.kernel)
    out.add_external_id(spec["workloadDigest"], f"{found.kernel}/{found.case_key}")
    out.add_external_id(spec["implementationDigest"], implementation_id)


def _named_provider_first(out: KernelIndexExport, by_digest: dict[str, dict[str, Any]]) -> None:
    """An implementation two providers share (one digest: `megatron_rms_norm`'s `torch` and `megatron`, of
    projects pytorch and megatron-lm) is filed under the provider its own name names, whatever the order of
    the runs: KernelIndex's importer files it under the provider of the first CSV row that makes it (the
    first bundle entry of a digest makes the row), and our record's name is that row's
    (`liger-bench-<kernel>-<provider>`, first name wins). That entry goes first; the others still link."""
    for digest, external_ids in out.external_ids.items():
        manifest = by_digest.get(digest)
        if manifest is None or manifest["kind"] != "ImplementationRevision" or len(external_ids) < 2:
            continue
        named = _external_id_named_by(manifest["metadata"]["name"], external_ids)
        if named is None or named == external_ids[0]:
            continue
        out.external_ids[digest] = [named, *(i for i in external_ids if i != named)]
        projects = out.project_of.get(digest, {})
        if named in projects:
            out.project_of[digest] = {named: projects[named], **projects}


def _external_id_named_by(name: str, external_ids: list[str]) -> str | None:
    """The `<kernel>/<provider>` whose `liger-bench-<kernel>-<provider>` is the name (or, for a name that goes
    on, e.g. with a revision, its longest such start); None when none is."""
    best: tuple[int, str] | None = None
    for external_id in external_ids:
        kernel, _, provider = external_id.partition("/")
        stem = kebab(f"liger-bench-{kernel}-{provider}")
        if name == stem:
            return external_id
        if name.startswith(stem + "-") and (best is None or len(stem) > best[0]):
            best = (len(stem), external_id)
    return best[1] if best else None


def _project_by_name(implementation: dict[str, Any], catalogue: Catalogue) -> str:
    """The project of an implementation none of whose runs name a provider: from its name's provider (a
    pinned revision's name ends in its revision, `-v0-8-5`, which is not the provider's)."""
    name = implementation["metadata"]["name"]
    pinned = identity.revision_label(implementation["spec"].get("projectRevision"))
    if pinned and name.endswith("-" + kebab(pinned)):
        name = name[: -len(kebab(pinned)) - 1]
    matches = [
        (len(provider_name), provider.project)
        for provider_name, provider in catalogue.providers.items()
        if name.endswith("-" + kebab(provider_name))
    ]
    if matches:
        return max(matches)[1]  # the longest provider name: "-liger-fp32-accum" before "-accum"
    raise KernelIndexExportError(f"implementation {name}: no project (no run names its provider, nor does its name)")


def submission_document(grouped: KernelIndexExport) -> dict[str, Any]:
    """The one document `bundleFromSubmission` reads."""
    from kernelindex_pipeline.records.canonical import digest_of

    return {
        "projects": grouped.projects,
        "operations": grouped.operations,
        "workloads": grouped.workloads,
        "implementations": [
            {"projectSlug": grouped.first_project(digest_of(m)), "manifest": m} for m in grouped.implementations
        ],
        "runs": [
            {"run": r["manifest"], "protocol": r["protocol"], "environment": r["environment"]} for r in grouped.runs
        ],
    }


def _is_fetchable(uri: str) -> bool:
    from urllib.parse import urlsplit

    return urlsplit(uri).scheme in FETCHABLE_SCHEMES


def unfetchable_evidence(grouped: KernelIndexExport) -> int:
    """How many evidence references of the grouped runs `import_bundle` leaves out (no fetchable URI)."""
    return sum(not _is_fetchable(ref["uri"]) for entry in grouped.runs for ref in _evidence_refs(entry["manifest"]))


def _evidence_refs(run: dict[str, Any]) -> list[dict[str, Any]]:
    spec = run["spec"]
    evidence = spec.get("evidence") or {}
    refs = [evidence.get("rawSamples") or (spec.get("timing") or {}).get("rawSamples"), evidence.get("logs")]
    return [ref for ref in refs if ref]


def _artifacts(run: dict[str, Any]) -> list[dict[str, Any]]:
    """BundleArtifacts of a run's evidence (raw samples, logs), content-addressed by their digests; only those
    KernelIndex can fetch (`FETCHABLE_SCHEMES`). The run's manifest keeps every reference (its digest)."""
    spec = run["spec"]
    evidence = spec.get("evidence") or {}
    found = []
    for role, kind, media_type, ref in (
        (
            "raw_samples",
            "raw_samples",
            "application/json",
            evidence.get("rawSamples") or (spec.get("timing") or {}).get("rawSamples"),
        ),
        ("logs", "log", "text/plain", evidence.get("logs")),
    ):
        if ref and _is_fetchable(ref["uri"]):
            found.append(
                {
                    "role": role,
                    "kind": kind,
                    "mediaType": media_type,
                    "digest": ref["digest"],
                    "uri": ref["uri"],
                    "storage": "object",
                }
            )
    return found


def import_bundle(
    grouped: KernelIndexExport,
    *,
    source: dict[str, Any] | None = None,
    snapshots: Iterable[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The `ImportBundle` of catalog/publication.ts (JSON: dates as ISO strings)."""
    from kernelindex_pipeline.records.canonical import digest_of

    def linked(entry: dict[str, Any], digest: str) -> list[dict[str, Any]]:
        """One entry per externalId of the record (KernelIndex links each; the first entry makes the row)."""
        external_ids = grouped.external_ids.get(digest)
        return [{**entry, "externalId": external_id} for external_id in external_ids] if external_ids else [entry]

    implementations = []
    for manifest in grouped.implementations:
        digest = digest_of(manifest)
        projects = grouped.project_of[digest]
        for entry in linked({"manifest": manifest, "slug": kebab(manifest["metadata"]["name"])}, digest):
            implementations.append(
                {**entry, "projectSlug": projects.get(entry.get("externalId"), grouped.first_project(digest))}
            )
    runs = []
    for entry in grouped.runs:
        [bundled] = linked(dict(entry), digest_of(entry["manifest"]))  # a run has one source name
        artifacts = _artifacts(entry["manifest"])
        if artifacts:
            bundled["artifacts"] = artifacts
        runs.append(bundled)
    return {
        "source": dict(source or LIGER_SOURCE),
        "snapshots": [{**PARSER, **snapshot} for snapshot in snapshots],
        "projects": [{"manifest": m, "slug": kebab(m["metadata"]["name"])} for m in grouped.projects],
        "operations": [
            e
            for m in grouped.operations
            for e in linked({"manifest": m, "slug": kebab(m["metadata"]["name"])}, digest_of(m))
        ],
        "workloads": [e for m in grouped.workloads for e in linked({"manifest": m}, digest_of(m))],
        "implementations": implementations,
        "runs": runs,
    }


def snapshot_of_bytes(locator: str, data: bytes, fetched_at: str, media_type: str = "text/csv") -> dict[str, Any]:
    """A source snapshot entry (without its body) for a file the records were made from."""
    import hashlib

    return {
        "locator": locator,
        "contentDigest": "sha256:" + hashlib.sha256(data).hexdigest(),
        "mediaType": media_type,
        "sizeBytes": len(data),
        "observedAt": fetched_at,
        "fetchedAt": fetched_at,
    }


SOURCE_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # a commit sha or a tag: one URL path segment


def check_source_ref(ref: str) -> str:
    """`ref` if it can stand for a Liger commit or tag in a URL path (a sha, `v0.8.5`), else ValueError."""
    if not SOURCE_REF.fullmatch(ref):
        raise ValueError(f"{ref!r} is not a commit or tag (letters, digits, '.', '_', '-'; at most 100)")
    return ref


def source_commit_of_publications(publications: Iterable[dict[str, Any]]) -> str | None:
    """The revision of Liger's history a catalogue was imported from: the release tag (`v<version>`) of the
    newest sdist whose history CSV it published (the history chain's snapshots name `<sdist>#<release
    root>/benchmark/data/all_benchmark_data.csv` and the release's version). None without a history."""
    from packaging.version import InvalidVersion, Version

    from kernelindex_pipeline.liger.release import HISTORY_CSV

    versions = []
    for publication in publications:
        snapshot = publication.get("snapshot") or {}
        locator, version = str(snapshot.get("locator") or ""), snapshot.get("resolvedVersion")
        if isinstance(version, str) and locator.partition("#")[2].endswith("/" + HISTORY_CSV):
            try:
                versions.append((Version(version), version))
            except InvalidVersion:
                continue
    return f"v{max(versions)[1]}" if versions else None


def kernelindex_locator(locator: str, sha256: str) -> str | None:
    """A snapshot's locator as KernelIndex is given it: an https URL as it is; a local file (a path or a file://
    URI: CI files given as paths, the shipped CI snapshot unpacked) by the gh-pages URL it was published at
    when it is a file of the shipped snapshot with the bytes published there (liger/ci_snapshot.py), else by
    its file:// URI; None for anything else (a sweep's `sweep:` working directory stays in our catalogue)."""
    from pathlib import Path
    from urllib.parse import unquote, urlsplit

    from kernelindex_pipeline.liger.ci_snapshot import upstream_locator

    parts = urlsplit(locator)
    if parts.scheme == "https":
        return locator
    if parts.scheme not in ("", "file"):
        return None
    path = Path(unquote(parts.path) if parts.scheme == "file" else locator)
    if not path.is_absolute():
        return None
    return upstream_locator(path, sha256) or path.as_uri()


def snapshots_of_publications(publications: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Source snapshot entries of a catalogue's publication log (CatalogueStore.publications()): those
    with a sha256 and a locator KernelIndex is given (`kernelindex_locator`: https, or a local file's), so
    every CI run, from a URL or a local file, keeps the snapshot of the file it came from (its digest and
    size are the file's own). A sweep's snapshots stay in our catalogue."""
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for publication in publications:
        snapshot = publication.get("snapshot") or {}
        locator, sha256 = snapshot.get("locator"), snapshot.get("sha256")
        if not isinstance(locator, str) or not isinstance(sha256, str):
            continue
        locator = kernelindex_locator(locator, sha256)
        if locator is None:
            continue
        fetched = snapshot.get("fetchedAt") or publication.get("startedAt")
        entry = {"locator": locator, "contentDigest": f"sha256:{sha256}", "observedAt": fetched, "fetchedAt": fetched}
        if isinstance(snapshot.get("sizeBytes"), int):
            entry["sizeBytes"] = snapshot["sizeBytes"]
        found.setdefault((locator, sha256), entry)
    return list(found.values())
