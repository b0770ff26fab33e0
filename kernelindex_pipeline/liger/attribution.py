"""Why a Liger series changed: causes ranked with their evidence, from Liger's git history, the
benchmark scripts' imports and the toolchain timeline.

For each change, at its boundary (last run before, first run after; each run knows its code, a commit
or a release tag), the candidates are:

- ``liger_kernel``: commits between the two commits that touch the kernel's files (`kernel_sources`:
  its module wrapper and every package module it imports, computed with `ast` at both ends);
- ``benchmark_script``: commits that touch its benchmark script, the shared utilities or the test
  modules the script times;
- ``environment``: the measured toolchain difference (environment digests differ), else, for runs
  whose environment records no software, the unpinned packages (setup.py at the later commit) with a
  release between the two runs (`toolchain`), plus commits to the benchmark workflow / Modal image;
- ``host``: detection found the whole class of the run moved the same way and stay there.

**Ranking by footprint.** Which candidate comes first follows from which series moved together at that
boundary, not from constants tuned to a data set:

- many benchmark scripts moved the same way at that run (at least half of those judged there, and at
  least three): something every script shares changed, so ``environment`` (then ``host``) first;
- only Liger's own providers of the script moved (its baselines, e.g. torch or Transformers, stayed):
  Liger's code is what differs, so ``liger_kernel`` first, then ``benchmark_script``;
- the baselines moved too (or the change is on a baseline): the measurement changed for every provider,
  so ``benchmark_script`` first, then ``environment``, then ``liger_kernel``.

Git is queried per boundary (one ``git log`` per pair of commits) and per commit (imports), never per
series; all answers are cached.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kernelindex_pipeline.reporting import attribution as attr

from .kernel_sources import ENVIRONMENT_PATHS, KernelPaths, KernelSources
from .source_history import Commit, LigerSourceHistory, SourceHistoryError
from .toolchain import ToolchainTimeline, requirements, unpinned_requirements

# a CI run directory / file: benchmarks/<sha>[-vX.Y.Z]/ (Liger's gh-pages), or a release tag
_CI_LABEL = re.compile(r"^(?P<sha>[0-9a-f]{7,40})(?:-(?P<tag>v\d+(?:\.\d+)*\S*))?$")
_TAG_LABEL = re.compile(r"^v\d+(?:\.\d+)+$")
WIDE_SHARE = 0.5  # "most scripts" (as detection's host rule: at least half of the groups judged there)
WIDE_MIN_SCRIPTS = 3


def code_ref_of_label(label: str) -> str | None:
    """The code a source run's label names: ``2845fe8`` and ``7644a0f-v0.7.0`` a commit, ``v0.6.3`` a tag."""
    name = label.rsplit("/", 1)[-1]
    for suffix in (".gz", ".jsonl", ".json", ".csv"):
        name = name.removesuffix(suffix)
    found = _CI_LABEL.match(name)
    if found:
        return found.group("sha")
    return name if _TAG_LABEL.match(name) else None


def is_liger_provider(provider: str) -> bool:
    """Liger's own implementations (their project is liger-kernel in the catalogue), not the baselines."""
    from .catalogue import default_catalogue

    known = default_catalogue("full").providers.get(provider)
    return known.project == "liger-kernel" if known is not None else provider.startswith("liger")


@dataclass(frozen=True)
class _Boundary:
    gpu: str
    before: int  # source run index
    after: int


class LigerAttributor:
    """Ranks the causes of a report's changes (sets each change's `causes` and `cause`)."""

    def __init__(
        self,
        history: LigerSourceHistory | None,
        timeline: ToolchainTimeline | None,
        software_recorded: Iterable[str] = (),
    ) -> None:
        self.history = history
        self.sources = KernelSources(history) if history is not None else None
        self.timeline = timeline
        self.software_recorded = set(software_recorded)  # environment digests whose records name the software
        self.notes: list[str] = []
        self._evidence: dict[tuple, tuple[attr.CauseEvidence, ...]] = {}
        self._resolved: dict[str, str | None] = {}
        self._unpinned: dict[str, tuple[str, ...] | None] = {}
        self._liger: dict[str, bool] = {}

    # ------------------------------------------------------------------------------ code refs

    def code_ref(self, source: Any) -> str | None:
        return getattr(source, "code_ref", None) or code_ref_of_label(source.label)

    def commit_of(self, ref: str | None, source_label: str) -> str | None:
        if ref is None or self.history is None:
            return None
        if ref not in self._resolved:
            self._resolved[ref] = self.history.resolve(ref)
            if self._resolved[ref] is None:
                self._note(
                    f"run {source_label}: commit {ref} is not in the clone {self.history.path} (refresh it: "
                    f"git -C {self.history.path} fetch origin); its changes get no commit suspects"
                )
        return self._resolved[ref]

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    # ------------------------------------------------------------------------------ attribution

    def attribute(self, report: Any) -> None:
        if self.history is None and not self.notes:
            self._note("no Liger clone given (--liger-git DIR): changes name no commits")
        footprint = _Footprint(report, self._is_liger)
        for change in report.changes:
            t, s = change.trend, change.split
            boundary = _Boundary(t.key.gpu, int(t.run_index[s.index - 1]), int(t.run_index[s.index]))
            sides = (t.environments[s.index - 1], t.environments[s.index])
            evidence = {e.cause: e for e in self._candidates(report, boundary, t.key.kernel, sides)}
            if t.environments[s.index - 1] != t.environments[s.index]:
                measured = {
                    "measured": f"environment {t.environments[s.index - 1][:15]}… → {t.environments[s.index][:15]}…"
                }
                old = evidence.get(attr.ENVIRONMENT)
                evidence[attr.ENVIRONMENT] = attr.CauseEvidence(
                    attr.ENVIRONMENT, old.commits if old else (), (measured,)
                )
            if change.cause == attr.HOST:
                evidence[attr.HOST] = attr.CauseEvidence(
                    attr.HOST, note="most kernels of this latency class moved the same way at this run and stayed"
                )
            if not self._is_liger(t.key.provider):
                evidence.pop(attr.LIGER_KERNEL, None)  # Liger's code does not time a baseline
            order = footprint.order(change, boundary)
            unknown = attr.CauseEvidence(attr.UNKNOWN, note=self._unknown_note(report, boundary))
            if not self._code_examined(report, boundary):
                # the code may differ but no commit could be listed: Liger's code is a cause not looked at,
                # ranked where the kernel and the script would be, never skipped in favour of the next one
                at = min(order.index(attr.LIGER_KERNEL), order.index(attr.BENCHMARK_SCRIPT))
                order = [c for c in order if c not in (attr.LIGER_KERNEL, attr.BENCHMARK_SCRIPT)]
                order.insert(at, attr.UNKNOWN)
                evidence[attr.UNKNOWN] = unknown
            ranked = [evidence[c] for c in order if c in evidence]
            change.causes = ranked or [unknown]
            change.cause = change.causes[0].cause
        report.changes.sort(key=lambda c: (attr.CAUSES.index(c.cause), -abs(c.split.log_ratio), c.split.p_value))
        for note in self.history.notes if self.history is not None else ():
            self._note(note)  # e.g. a range over MAX_COMMITS
        report.attribution_notes = list(self.notes)

    def _code_examined(self, report: Any, boundary: _Boundary) -> bool:
        """Whether the commits between the two runs could be listed (or the code is the same)."""
        before, after = report.sources[boundary.before], report.sources[boundary.after]
        refs = (self.code_ref(before), self.code_ref(after))
        if None not in refs and refs[0] == refs[1]:
            return True
        return None not in refs and all(self.commit_of(r, s.label) for r, s in zip(refs, (before, after), strict=True))

    def _unknown_note(self, report: Any, boundary: _Boundary) -> str:
        before, after = report.sources[boundary.before], report.sources[boundary.after]
        refs = (self.code_ref(before), self.code_ref(after))
        if None in refs:
            versions = f" (Liger {', '.join(sorted(before.versions))} → {', '.join(sorted(after.versions))})"
            return "the code of a run is not known (its source names no commit or tag)" + versions
        if self.history is None:
            return f"no Liger clone to list the commits {refs[0]}..{refs[1]} (--liger-git DIR)"
        if not self._code_examined(report, boundary):
            return f"the clone lacks a commit of {refs[0]}..{refs[1]} (fetch it)"
        return f"no commit {refs[0]}..{refs[1]} touches this kernel, its script or the workflow; no toolchain change"

    def _is_liger(self, provider: str) -> bool:
        if provider not in self._liger:
            self._liger[provider] = is_liger_provider(provider)
        return self._liger[provider]

    def _candidates(self, report: Any, boundary: _Boundary, kernel: str, environments: tuple[str, str]):
        key = (boundary.before, boundary.after, kernel, environments)
        if key not in self._evidence:
            self._evidence[key] = tuple(self._gather(report, boundary, kernel, environments))
        return self._evidence[key]

    def _gather(
        self, report: Any, boundary: _Boundary, kernel: str, environments: tuple[str, str]
    ) -> list[attr.CauseEvidence]:
        before, after = report.sources[boundary.before], report.sources[boundary.after]
        old = self.commit_of(self.code_ref(before), before.label)
        new = self.commit_of(self.code_ref(after), after.label)
        commits: list[Commit] = []
        paths: KernelPaths | None = None
        if old and new and old != new and self.history is not None and self.sources is not None:
            try:
                paths = self.sources.paths(old, kernel).between(self.sources.paths(new, kernel))
                # the files that matter: over MAX_COMMITS in the range, those commits are listed, not the newest
                commits = self.history.commits_between(old, new, paths.kernel | paths.script | paths.environment)
            except SourceHistoryError as exc:
                self._note(str(exc))
                commits, paths = [], None
        out = []
        if paths is not None:
            for cause, files in ((attr.LIGER_KERNEL, paths.kernel), (attr.BENCHMARK_SCRIPT, paths.script)):
                touching = _touching(commits, files, paths, self._changes_code(paths))
                if touching:
                    diffstat = self._diffstat(old, new, files, touching) if cause == attr.BENCHMARK_SCRIPT else ""
                    out.append(attr.CauseEvidence(cause, touching, diffstat=diffstat))
        environment_commits = (
            _touching(commits, self._environment_changed(old, new), paths) if paths is not None else ()
        )
        toolchain = self._toolchain(before, after, new, environments)
        if environment_commits or toolchain:
            out.append(attr.CauseEvidence(attr.ENVIRONMENT, environment_commits, tuple(toolchain)))
        return out

    def _changes_code(self, paths: KernelPaths) -> Callable[[str, str], bool]:
        sources = self.sources

        def changes_code(sha: str, path: str) -> bool:
            try:
                return sources.commit_changes_code(sha, path, paths.names_in(path)) if sources else True
            except SourceHistoryError as exc:
                self._note(str(exc))
                return True

        return changes_code

    def _environment_changed(self, old: str, new: str) -> frozenset[str]:
        """The environment files whose content that matters differs between two commits: the workflow and
        the image definition as text, setup.py as the requirements it states (a commit that edits setup.py
        without changing a dependency changes no toolchain)."""
        key = ("environment", old, new)
        if key not in self._evidence:
            texts = (
                [self.history.read(sha, list(ENVIRONMENT_PATHS)) for sha in (old, new)] if self.history else [{}, {}]
            )
            changed = set()
            for path in ENVIRONMENT_PATHS:
                ends = [t.get(path) or "" for t in texts]
                if path == "setup.py":
                    ends = [sorted(str(r) for r in requirements(text)) for text in ends]
                if ends[0] != ends[1]:
                    changed.add(path)
            self._evidence[key] = frozenset(changed)
        return self._evidence[key]

    def _diffstat(self, old: str, new: str, files: frozenset[str], touching: tuple[attr.CommitSuspect, ...]) -> str:
        touched = sorted({f for c in touching for f in c.files})
        try:
            return self.history.diffstat(old, new, touched) if self.history is not None else ""
        except SourceHistoryError as exc:
            self._note(str(exc))
            return ""

    def _toolchain(self, before: Any, after: Any, new_sha: str | None, environments: tuple[str, str]) -> list[dict]:
        """Unpinned packages released between the runs, for runs whose environment records no software."""
        if self.timeline is None:
            return []
        if set(environments) & self.software_recorded:
            return []  # the runs say what they ran; a difference there shows as differing digests
        packages = self._unpinned_at(new_sha)
        steps = self.timeline.difference(_epoch(before.observed_at), _epoch(after.observed_at), packages)
        return [s.to_dict() for s in steps]

    def _unpinned_at(self, sha: str | None) -> tuple[str, ...] | None:
        """The timeline's packages that setup.py / pyproject.toml require unpinned at a commit (None: all)."""
        if sha is None or self.history is None or self.timeline is None:
            return None
        if sha not in self._unpinned:
            texts = self.history.read(sha, ["setup.py", "pyproject.toml"])
            names = unpinned_requirements(texts["setup.py"] or "", texts["pyproject.toml"] or "")
            self._unpinned[sha] = tuple(p for p in self.timeline.packages if p in names) or None
        return self._unpinned[sha]


def _touching(
    commits: list[Commit],
    files: frozenset[str],
    paths: KernelPaths,
    changes_code: Callable[[str, str], bool] | None = None,
) -> tuple[attr.CommitSuspect, ...]:
    """Commits that change any of `files` (where `changes_code(sha, file)` says the change is to code the
    benchmark uses), the most direct first (fewest import steps from the script to a file they change),
    then newest first."""
    found = []
    for position, commit in enumerate(commits):
        hit = tuple(f for f in commit.files if f in files and (changes_code is None or changes_code(commit.sha, f)))
        if hit:
            found.append((min(paths.distance(f) for f in hit), position, commit, hit))
    found.sort(key=lambda item: (item[0], item[1]))
    return tuple(attr.CommitSuspect(c.sha, c.date, c.subject, c.url, hit) for _, _, c, hit in found)


class _Footprint:
    """Which scripts and providers moved together at each run: the basis of the ranking."""

    def __init__(self, report: Any, is_liger) -> None:
        self.is_liger = is_liger
        self.moved: dict[tuple, set[str]] = defaultdict(set)  # (gpu, after run, direction) -> scripts
        self.baseline_moved: set[tuple] = set()  # (gpu, after run, script, direction)
        self.judged: dict[tuple, set[str]] = defaultdict(set)  # (gpu, run) -> scripts judged with a run before
        for change in report.changes:
            t, s = change.trend, change.split
            run = int(t.run_index[s.index])
            self.moved[(t.key.gpu, run, change.direction)].add(t.key.kernel)
            if not is_liger(t.key.provider):
                self.baseline_moved.add((t.key.gpu, run, t.key.kernel, change.direction))
        for trend in report.trends:
            for r in trend.run_index[1:]:
                self.judged[(trend.key.gpu, int(r))].add(trend.key.kernel)

    def order(self, change: Any, boundary: _Boundary) -> list[str]:
        t = change.trend
        moved = self.moved[(boundary.gpu, boundary.after, change.direction)]
        judged = self.judged[(boundary.gpu, boundary.after)]
        if len(moved) >= WIDE_MIN_SCRIPTS and len(moved) >= WIDE_SHARE * len(judged):
            return [attr.ENVIRONMENT, attr.HOST, attr.BENCHMARK_SCRIPT, attr.LIGER_KERNEL]
        baselines = (boundary.gpu, boundary.after, t.key.kernel, change.direction) in self.baseline_moved
        if self.is_liger(t.key.provider) and not baselines:
            return [attr.LIGER_KERNEL, attr.BENCHMARK_SCRIPT, attr.ENVIRONMENT, attr.HOST]
        return [attr.BENCHMARK_SCRIPT, attr.ENVIRONMENT, attr.LIGER_KERNEL, attr.HOST]


def software_recorded(manifests: Iterable[dict[str, Any]]) -> set[str]:
    """Digests of the ExecutionEnvironments that record their software (torch, triton, ...)."""
    from kernelindex_pipeline.records.canonical import digest_of

    return {
        digest_of(m)
        for m in manifests
        if isinstance(m, dict)
        and m.get("kind") == "ExecutionEnvironment"
        and ((m.get("spec") or {}).get("software") or {})
    }


def _epoch(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


class LigerAttribution:
    """Detection with Liger's facts and attribution, one per detection: open the clone (a clone that
    cannot be used is a note, never an error), give detection the adapter that knows each run's code and
    its commit order (`adapters`), then rank the causes of the result (`attribute`)."""

    def __init__(self, clone: str | os.PathLike[str] | None) -> None:
        from .run_facts import LigerRunFacts

        self.notes: list[str] = []
        self.history: LigerSourceHistory | None = None
        if clone:
            try:
                self.history = LigerSourceHistory(clone)
            except SourceHistoryError as exc:
                self.notes.append(f"{exc}; detection goes on without commits")
        self.adapter = LigerRunFacts(self.history)

    @property
    def adapters(self) -> dict[str, Any]:
        from .runs import RUN_SOURCE

        return {RUN_SOURCE: self.adapter}

    def attribute(self, report: Any) -> list[str]:
        from .toolchain import packaged_timeline

        attributor = LigerAttributor(self.history, packaged_timeline(), self.adapter.software_recorded)
        attributor.notes.extend(self.notes)
        if self.history is not None and self.adapter.unplaced:
            refs = sorted(self.adapter.unplaced)
            named = ", ".join(refs[:5]) + (f" and {len(refs) - 5} more" if len(refs) > 5 else "")
            attributor.notes.append(
                f"runs of {len(refs)} commit(s) the clone {self.history.path} lacks ({named}) keep their measured "
                f"place among the runs placed by commit time (refresh it: git -C {self.history.path} fetch origin)"
            )
        attributor.attribute(report)
        return report.attribution_notes
