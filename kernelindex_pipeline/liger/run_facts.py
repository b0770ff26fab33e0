"""Liger's adapter for regression detection: the RunFacts of a run this project's Liger import wrote.

The identity comes from the run's externalId (`liger/identity.py` builds and parses it); the version
label is ``metadata.labels.liger_version``; the benchmark script of a Liger run is its kernel's
(`benchmark/scripts/benchmark_<kernel>.py`). `LigerRunFacts` is registered in `detection.run_facts.SOURCE_ADAPTERS` for the
source names `runs.RUN_SOURCE` and `sentinel.SOURCE` (the sweep sentinel's runs use the same formats).
"""

from __future__ import annotations

from typing import Any

from kernelindex_pipeline.detection.run_facts import UNLABELLED, RunFacts, measured_run
from kernelindex_pipeline.records.canonical import digest_of

from . import identity
from .builders import LIGER_REPOSITORY, series_implementation_digest
from .runs import CODE_REF_LABEL

VERSION_LABEL = "liger_version"
# where a Liger run was measured (RunFacts.origin): the rows Liger committed to its repository (developers'
# machines), Liger's CI (a run that names its commit), our own sweeps (a pinned release)
HISTORY, CI, SWEEP = "history", "ci", "sweep"


class LigerRunFacts:
    """The adapter of one detection. A sweep's implementation pinned to the release it measured is, across
    releases, the series of its unpinned form (`builders.series_implementation_digest`): the pinned
    ImplementationRevisions are seen before their runs, and a run's implementation digest is the one its
    series follows.

    The code measured (`code_ref`): a records file named by a CI run directory (``2845fe8``,
    ``7644a0f-v0.7.0``: a commit) or a release tag (``v0.6.3``), see `identity.code_ref_of_label`; a
    sweep's run: the release its pinned ImplementationRevision names (``projectRevision.version``); a run of
    Liger's CI in a catalogue: its label `runs.CODE_REF_LABEL`, set from the file's run directory. With
    Liger's clone (`history`) a run's place on the run timeline (`order`) is its commit's time, so a manual
    CI run of an older commit, measured later, sits where its code belongs; a run whose commit the clone
    lacks (or whose code is not known) keeps its measured place among them (detection places it after the
    latest-placed run measured before it), and `unplaced` names those refs for a note."""

    def __init__(self, history: Any = None) -> None:
        self.series_implementation: dict[str, str] = {}
        self.history = history  # a LigerSourceHistory, or None
        self.software_recorded: set[str] = set()  # environment digests whose records name torch, triton, ...
        self._code_ref: str | None = None
        self._order: float | None = None
        self._orders: dict[str, float | None] = {}
        self.release_of: dict[str, str] = {}  # pinned implementation digest -> the release tag it measured
        self.unplaced: set[str] = set()  # code refs the clone cannot place (its runs keep their measured place)

    def enter_source(self, label: str | None) -> None:
        from .identity import code_ref_of_label

        self._code_ref = code_ref_of_label(label) if label else None
        self._order = self._order_of(self._code_ref)

    def _order_of(self, ref: str | None) -> float | None:
        """The commit time of the code (None: unknown code, or no clone that has it)."""
        if ref is None or self.history is None:
            return None
        if ref not in self._orders:
            sha = self.history.resolve(ref)
            self._orders[ref] = float(self.history.commit_time(sha)) if sha else None
            if sha is None:
                self.unplaced.add(ref)
        return self._orders[ref]

    def see(self, manifest: dict[str, Any]) -> None:
        if manifest.get("kind") == "ExecutionEnvironment" and ((manifest.get("spec") or {}).get("software") or {}):
            self.software_recorded.add(digest_of(manifest))  # attribution: these runs say what they ran
        if manifest.get("kind") == "ImplementationRevision" and (manifest.get("spec") or {}).get("projectRevision"):
            digest = digest_of(manifest)
            self.series_implementation[digest] = series_implementation_digest(manifest)
            revision = manifest["spec"]["projectRevision"]
            if (
                isinstance(revision, dict)
                and revision.get("repository") == LIGER_REPOSITORY
                and revision.get("version")
            ):
                self.release_of[digest] = str(revision["version"])  # a sweep names the release it measured

    def facts(self, manifest: dict[str, Any]) -> RunFacts | str:
        own = self.own_facts(manifest)
        return own if isinstance(own, str) else self.complete(own)

    @staticmethod
    def own_facts(manifest: dict[str, Any]) -> RunFacts | str:
        """`run_facts`, with `code_ref` the commit the run's label names (`runs.CODE_REF_LABEL`, a CI run in a
        catalogue), or None: what a run table keeps (detection.run_facts.RunFactsTable)."""
        facts = run_facts(manifest)
        if isinstance(facts, str):
            return facts
        labelled = ((manifest.get("metadata") or {}).get("labels") or {}).get(CODE_REF_LABEL)
        return facts._replace(code_ref=labelled if isinstance(labelled, str) and labelled else None)

    completes_from = ("code_ref", "order", "origin", "implementation_digest")  # what `complete` reads and sets

    def complete(self, facts: RunFacts) -> RunFacts:
        """The facts of a run that `own_facts` read, once the records it refers to were seen: its origin, the
        code it measured and its place on the run timeline, its implementation as its series follows it."""
        labelled = facts.code_ref
        pinned = self.release_of.get(facts.implementation_digest)
        origin = SWEEP if pinned else CI if (self._code_ref or labelled) else HISTORY
        if self._code_ref is not None:
            facts = facts._replace(code_ref=self._code_ref, order=self._order, origin=origin)
        elif labelled:  # a CI run in a catalogue: the commit its file named
            facts = facts._replace(code_ref=labelled, order=self._order_of(labelled), origin=origin)
        elif pinned:
            facts = facts._replace(code_ref=pinned, order=self._order_of(pinned), origin=origin)
        else:
            facts = facts._replace(origin=origin)
        if facts.implementation_digest not in self.series_implementation:
            return facts
        return facts._replace(implementation_digest=self.series_implementation[facts.implementation_digest])


def run_facts(manifest: dict[str, Any]) -> RunFacts | str:
    """The run facts of one Liger run by itself (its implementation digest as recorded)."""
    spec = manifest.get("spec") or {}
    measured = measured_run(spec, manifest.get("metadata") or {})
    if isinstance(measured, str):
        return measured
    found = identity.parse_external_id(str((spec.get("sourceNative") or {}).get("externalId") or ""))
    if found is None:
        return "no Liger external id (sourceNative.externalId)"
    if found.metric != measured.metric:
        return "externalId and measurement disagree on the metric"
    return RunFacts(
        found.kernel,
        found.mode,
        found.provider,
        found.gpu_slug,
        found.case_key,
        measured.metric,
        measured.value,
        measured.observed_at,
        str(measured.labels.get(VERSION_LABEL) or UNLABELLED),
        measured.implementation_digest,
        measured.workload_digest,
        measured.protocol_digest,
        measured.environment_digest,
        found.kernel,
    )
