"""Why a Liger series changed: causes ranked with their evidence, from Liger's git history, the
benchmark scripts' imports and the toolchain timeline.

`LigerAttributor.attribute(report)` sets each change's ranked `causes` and `cause` (and folds the host
changes, `detection.host_changes`); `detect_and_attribute` is detection, then this, the one call the CLI
and the Dagster asset make. What each cause means and how they are ranked: docs/concepts/detection.md
("The causes"); where the evidence comes from: docs/concepts/attribution.md. Git is queried per boundary
and per commit, never per series; all answers are cached.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from kernelindex_pipeline.detection import host_changes
from kernelindex_pipeline.detection.changes import (
    BENCHMARK_SCRIPT,
    CAUSES,
    ENVIRONMENT,
    HOST,
    LIGER_KERNEL,
    UNKNOWN,
    CauseEvidence,
    CommitSuspect,
)
from kernelindex_pipeline.detection.judgements import JudgementReuse
from kernelindex_pipeline.detection.run_facts import PEAK_MEMORY

from .harness import Checkout, HarnessReader
from .identity import code_ref_of_label
from .kernel_sources import ENVIRONMENT_PATHS, MODAL_IMAGE, KernelPaths, KernelSources, code_of
from .source_history import Commit, LigerSourceHistory, SourceHistoryError
from .toolchain import ToolchainTimeline, requirements, unpinned_requirements

# a CI run directory / file: benchmarks/<sha>[-vX.Y.Z]/ (Liger's gh-pages), or a release tag
WIDE_SHARE = 0.5  # "most scripts" (as detection's host rule: at least half of the groups judged there)
WIDE_MIN_SCRIPTS = 3


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
    """Ranks the causes of a report's changes (sets each change's `causes` and `cause`), then folds the
    changes a lasting host move explains into one entry each (`detection.host_changes.fold`)."""

    def __init__(
        self,
        history: LigerSourceHistory | None,
        timeline: ToolchainTimeline | None,
        software_recorded: Iterable[str] = (),
    ) -> None:
        self.history = history
        self.sources = KernelSources(history) if history is not None else None
        self.harness = HarnessReader(history) if history is not None else None
        self.timeline = timeline
        self.software_recorded = set(software_recorded)  # environment digests whose records name the software
        self.notes: list[str] = []
        self._evidence: dict[tuple, tuple[CauseEvidence, ...]] = {}
        self._resolved: dict[str, str | None] = {}
        self._unpinned: dict[str, tuple[str, ...] | None] = {}
        self._liger: dict[str, bool] = {}
        self._checkouts: dict[int, Checkout | None] = {}
        self._windows: dict[tuple[str, str, frozenset[str]], list[Commit]] = {}
        self._environment: dict[tuple, dict[str, frozenset[str] | None]] = {}

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

    def checkout(self, source: Any) -> Checkout | None:
        """What measured a source run: its commit, and the paths its workflow took from the default branch
        at its measurement time (`harness.py`); None when its code is not known or not in the clone."""
        key = id(source)
        if key not in self._checkouts:
            code = self.commit_of(self.code_ref(source), source.label)
            found = None
            if code is not None and self.harness is not None:
                try:
                    found = self.harness.checkout(code, _epoch(source.observed_at))
                except SourceHistoryError as exc:
                    self._note(str(exc))
                    found = Checkout(code, code)
            self._checkouts[key] = found
        return self._checkouts[key]

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
            found = self._candidates(report, boundary, t.key.kernel, sides)
            evidence = {e.cause: e for e in found if e.cause != HOST}
            host_commits = next((e.commits for e in found if e.cause == HOST), ())
            if t.environments[s.index - 1] != t.environments[s.index]:
                measured = {
                    "measured": f"environment {t.environments[s.index - 1][:15]}… → {t.environments[s.index][:15]}…"
                }
                old = evidence.get(ENVIRONMENT)
                evidence[ENVIRONMENT] = CauseEvidence(ENVIRONMENT, old.commits if old else (), (measured,))
            if not self._is_liger(t.key.provider):
                evidence.pop(LIGER_KERNEL, None)  # Liger's code does not time a baseline
            examined = self._code_examined(report, boundary)
            wide = footprint.wide(change, boundary)
            if (
                t.key.metric != PEAK_MEMORY  # a host's speed does not change what a kernel allocates
                and not any(c in evidence for c in (LIGER_KERNEL, BENCHMARK_SCRIPT, ENVIRONMENT))
                and (host_commits or (wide and examined) or (change.cause == HOST and not examined))
            ):
                # nothing that reaches this series changed, and the run moved: its host did (a commit that
                # changes the GPU request, or many unrelated scripts one way; where the code could not be
                # examined, detection's whole latency class moving)
                evidence[HOST] = CauseEvidence(HOST, host_commits, note=_host_note(host_commits, wide))
            order = footprint.order(change, boundary)
            unknown = CauseEvidence(UNKNOWN, note=self._unknown_note(report, boundary))
            if not examined:
                # the code may differ but no commit could be listed: Liger's code is a cause not looked at,
                # ranked where the kernel and the script would be, never skipped in favour of the next one
                at = min(order.index(LIGER_KERNEL), order.index(BENCHMARK_SCRIPT))
                order = [c for c in order if c not in (LIGER_KERNEL, BENCHMARK_SCRIPT)]
                order.insert(at, UNKNOWN)
                evidence[UNKNOWN] = unknown
            ranked = [evidence[c] for c in order if c in evidence]
            change.causes = ranked or [unknown]
            change.cause = change.causes[0].cause
        report.changes.sort(key=lambda c: (CAUSES.index(c.cause), -abs(c.split.log_ratio), c.split.p_value))
        if self.harness is not None:
            for note in self.harness.notes:
                self._note(note)
        for note in self.history.notes if self.history is not None else ():
            self._note(note)  # e.g. a range over MAX_COMMITS
        report.attribution_notes = list(self.notes)
        if hasattr(report, "host_changes"):
            host_changes.fold(report)

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
        return (
            f"no commit {refs[0]}..{refs[1]} (code) or between the harnesses that measured them touches what this "
            "series times, and no release of a package it imports lies between the runs"
        )

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
    ) -> list[CauseEvidence]:
        """Each cause's evidence for one kernel at one boundary: kernel files over the code window (the two
        runs' commits), script files over the window of the commits they were read from (the harness, where
        the workflow took them from the default branch), the environment over the code window, the
        toolchain between the measurement times; only what reaches the code the series times."""
        before, after = report.sources[boundary.before], report.sources[boundary.after]
        ends = (self.checkout(before), self.checkout(after))
        paths: KernelPaths | None = None
        out: list[CauseEvidence] = []
        host: tuple[CommitSuspect, ...] = ()
        environment_commits: tuple[CommitSuspect, ...] = ()
        if ends[0] and ends[1] and ends[0].key != ends[1].key and self.sources is not None:
            try:
                paths = self.sources.paths(ends[0], kernel).between(self.sources.paths(ends[1], kernel))
                changes_code = self._changes_code(paths)
                for cause, files in ((LIGER_KERNEL, paths.kernel), (BENCHMARK_SCRIPT, paths.script)):
                    touching = self._touching(ends, files, paths, changes_code)
                    if touching:
                        diffstat = self._diffstat(ends, touching) if cause == BENCHMARK_SCRIPT else ""
                        out.append(CauseEvidence(cause, touching, diffstat=diffstat))
                reach = _reaching(paths.packages)
                environment = self._environment_changed(ends, reach)
                environment_commits = self._touching(
                    ends, frozenset(p for p in environment if p != GPU_REQUEST), paths, self._changes_environment(reach)
                )
                if GPU_REQUEST in environment:
                    host = self._touching(ends, frozenset({MODAL_IMAGE}), paths, self._changes_gpu_request)
                    environment_commits = tuple(c for c in environment_commits if c.sha not in {h.sha for h in host})
            except SourceHistoryError as exc:
                self._note(str(exc))
                paths, out, host, environment_commits = None, [], (), ()
        toolchain = self._toolchain(before, after, ends[1].code if ends[1] else None, environments, paths)
        if environment_commits or toolchain:
            out.append(CauseEvidence(ENVIRONMENT, environment_commits, tuple(toolchain)))
        if host:
            out.append(CauseEvidence(HOST, host))
        return out

    def _window(self, a: str, b: str, files: frozenset[str]) -> list[Commit]:
        """The commits between two commits either way (``git log a..b`` and ``b..a``): a harness read at a
        later measurement time can be newer than the next run's. `files` are what matter there, for a
        range over MAX_COMMITS (`LigerSourceHistory.commits_between`)."""
        key = (a, b, files)
        if key not in self._windows:
            assert self.history is not None
            self._windows[key] = self.history.commits_between(a, b, files) + self.history.commits_between(b, a, files)
        return self._windows[key]

    def _touching(
        self,
        ends: tuple[Checkout, Checkout],
        files: frozenset[str],
        paths: KernelPaths,
        changes_code: Callable[[str, str], bool] | None = None,
    ) -> tuple[CommitSuspect, ...]:
        """The commits that change `files`, each file over the window of the commits its two ends read it
        from, the most direct first."""
        by_window: dict[tuple[str, str], set[str]] = defaultdict(set)
        for path in files:
            a, b = ends[0].commit_for(path), ends[1].commit_for(path)
            if a != b:
                by_window[(a, b)].add(path)
        found: dict[str, tuple] = {}
        for (a, b), in_window in sorted(by_window.items()):
            window = self._window(a, b, frozenset(in_window))
            for item in _touching(window, frozenset(in_window), paths, changes_code):
                known = found.get(item[2].sha)
                if known is None or item[:2] < known[:2]:
                    found[item[2].sha] = item
        ordered = sorted(found.values(), key=lambda item: (item[0], item[1]))
        return tuple(CommitSuspect(c.sha, c.date, c.subject, c.url, hit) for _, _, c, hit in ordered)

    def _changes_code(self, paths: KernelPaths) -> Callable[[str, str], bool]:
        sources = self.sources

        def changes_code(sha: str, path: str) -> bool:
            try:
                return sources.commit_changes_code(sha, path, paths.names_in(path)) if sources else True
            except SourceHistoryError as exc:
                self._note(str(exc))
                return True

        return changes_code

    def _changes_environment(self, reach: frozenset[str]) -> Callable[[str, str], bool]:
        """A commit changes the environment of a series where it changes the Modal image's code, or the
        requirement of a package the series' code imports."""

        def changes(sha: str, path: str) -> bool:
            before, after = self._text_at(f"{sha}^", path), self._text_at(sha, path)
            return _environment_of(path, before, reach) != _environment_of(path, after, reach)

        return changes

    def _changes_gpu_request(self, sha: str, path: str) -> bool:
        return _gpu_request(self._text_at(f"{sha}^", path)) != _gpu_request(self._text_at(sha, path))

    def _text_at(self, ref: str, path: str) -> str:
        assert self.history is not None
        try:
            return self.history.read(ref, [path])[path] or ""
        except SourceHistoryError as exc:
            self._note(str(exc))
            return ""

    def _environment_changed(self, ends: tuple[Checkout, Checkout], reach: frozenset[str]) -> frozenset[str]:
        """The environment files whose content that matters to a series differs between the two ends: the
        Modal image as code, its GPU request apart (`GPU_REQUEST`: a host pool), the requirement files as
        the requirements of the packages the series reaches (a commit that edits setup.py without changing
        such a dependency changes no toolchain of it)."""
        key = (ends[0].key, ends[1].key, reach)
        if key not in self._environment:
            changed: set[str] = set()
            for path in ENVIRONMENT_PATHS:
                texts = [self._text_at(end.commit_for(path), path) for end in ends]
                if _environment_of(path, texts[0], reach) != _environment_of(path, texts[1], reach):
                    changed.add(path)
                if path == MODAL_IMAGE and _gpu_request(texts[0]) != _gpu_request(texts[1]):
                    changed.add(GPU_REQUEST)
            self._environment[key] = frozenset(changed)
        return self._environment[key]

    def _diffstat(self, ends: tuple[Checkout, Checkout], touching: tuple[CommitSuspect, ...]) -> str:
        touched = sorted({f for c in touching for f in c.files})
        if not touched or self.history is None:
            return ""
        a, b = ends[0].commit_for(touched[0]), ends[1].commit_for(touched[0])
        try:
            return self.history.diffstat(a, b, touched)
        except SourceHistoryError as exc:
            self._note(str(exc))
            return ""

    def _toolchain(
        self,
        before: Any,
        after: Any,
        new_sha: str | None,
        environments: tuple[str, str],
        paths: KernelPaths | None,
    ) -> list[dict]:
        """Unpinned packages released between the runs, for runs whose environment records no software,
        that the series' code imports (torch and triton run everything); without the code's imports (no
        clone), every unpinned package."""
        if self.timeline is None:
            return []
        if set(environments) & self.software_recorded:
            return []  # the runs say what they ran; a difference there shows as differing digests
        packages = self._unpinned_at(new_sha)
        if paths is not None:
            reach = _reaching(paths.packages)
            packages = tuple(p for p in (packages or self.timeline.packages) if _normal(p) in reach)
            if not packages:
                return []
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


GPU_REQUEST = "gpu request"  # the Modal function's `gpu=` (a host pool): its change is a host change
ALWAYS_REACHED = frozenset({"torch", "triton"})  # they run every kernel, baseline and harness
_GPU_KEYWORD = re.compile(r"""\bgpu\s*=\s*(\[[^\]]*\]|"[^"]*"|'[^']*')""")


def _normal(name: str) -> str:
    """A distribution name as its import name is usually spelled (``liger-kernel`` -> ``liger_kernel``)."""
    return name.lower().replace("-", "_")


def _reaching(packages: frozenset[str]) -> frozenset[str]:
    return frozenset(_normal(p) for p in packages) | ALWAYS_REACHED


def _environment_of(path: str, text: str, reach: frozenset[str]) -> Any:
    """What of an environment file can move a series: the Modal image's code without its GPU request
    (that is the host, `_gpu_request`); a requirement file's requirements of the packages it reaches."""
    if path == MODAL_IMAGE:
        return code_of(_GPU_KEYWORD.sub("gpu=None", text))
    setup, pyproject = (_for_platform(text), "") if path == "setup.py" else ("", text)
    return sorted(str(r) for r in requirements(setup, pyproject) if _normal(r.name) in reach)


def _for_platform(setup_py: str, platform: str = "cuda") -> str:
    """setup.py without its branches for other platforms (``elif platform == "npu": return [...]``): an
    NVIDIA host installs none of their requirements. A branch counts as another platform's when its test
    compares to string constants only and none is `platform`."""
    try:
        tree = ast.parse(setup_py)
    except (SyntaxError, ValueError):
        return setup_py

    class _Strip(ast.NodeTransformer):
        def visit_If(self, node: ast.If) -> Any:
            self.generic_visit(node)
            test = node.test
            if isinstance(test, ast.Compare):
                named = [
                    c.value
                    for side in test.comparators
                    for c in ast.walk(side)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)
                ]
                if named and platform not in named:
                    return node.orelse  # the body is another platform's
            return node

    return ast.unparse(ast.fix_missing_locations(_Strip().visit(tree)))


def _gpu_request(text: str) -> str:
    """The GPU the Modal image's functions ask for (``gpu="H100!"``, ``gpu=["H100"]``), as written."""
    return ";".join(m.group(1).replace("'", '"') for m in _GPU_KEYWORD.finditer(text or ""))


def _host_note(commits: tuple[CommitSuspect, ...], wide: bool) -> str:
    if commits:
        return "the benchmark's GPU request changed between the runs (another host pool)"
    if wide:
        return (
            "most benchmark scripts judged at this run moved the same way, and nothing that reaches them "
            "(their code, their scripts, a package they import) changed: the run moved to another host"
        )
    return "most kernels of this latency class moved the same way at this run and stayed"


def _touching(
    commits: list[Commit],
    files: frozenset[str],
    paths: KernelPaths,
    changes_code: Callable[[str, str], bool] | None = None,
) -> list[tuple[int, int, Commit, tuple[str, ...]]]:
    """(import steps, position, commit, files hit) of the commits that change any of `files` (where
    `changes_code(sha, file)` says the change is to code the benchmark uses), the most direct first (fewest
    import steps from the script to a file they change), then newest first."""
    found = []
    for position, commit in enumerate(commits):
        hit = tuple(f for f in commit.files if f in files and (changes_code is None or changes_code(commit.sha, f)))
        if hit:
            found.append((min(paths.distance(f) for f in hit), position, commit, hit))
    found.sort(key=lambda item: (item[0], item[1]))
    return found


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

    def wide(self, change: Any, boundary: _Boundary) -> bool:
        """Most benchmark scripts judged at the boundary's later run moved the way this change did."""
        moved = self.moved[(boundary.gpu, boundary.after, change.direction)]
        judged = self.judged[(boundary.gpu, boundary.after)]
        return len(moved) >= WIDE_MIN_SCRIPTS and len(moved) >= WIDE_SHARE * len(judged)

    def order(self, change: Any, boundary: _Boundary) -> list[str]:
        t = change.trend
        if self.wide(change, boundary):
            return [ENVIRONMENT, HOST, BENCHMARK_SCRIPT, LIGER_KERNEL]
        baselines = (boundary.gpu, boundary.after, t.key.kernel, change.direction) in self.baseline_moved
        if self.is_liger(t.key.provider) and not baselines:
            return [LIGER_KERNEL, BENCHMARK_SCRIPT, ENVIRONMENT, HOST]
        return [BENCHMARK_SCRIPT, ENVIRONMENT, LIGER_KERNEL, HOST]


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


def detect_and_attribute(
    runs: Iterable[dict[str, Any]] | Sequence[str | os.PathLike[str]],
    settings: Any,
    clone: str | os.PathLike[str] | None,
    *,
    from_files: bool = False,
    judgement_store: str | os.PathLike[str] | None = None,
    marks: list[dict[str, str]] | None = None,
    previous: str | os.PathLike[str] | None = None,
) -> tuple[Any, list[str]]:
    """(the regressions report, its notes): detection over `runs` (manifests, a catalogue's run table as a
    `detection.run_facts.RunFactsTable`, or records files each one source run with `from_files`) with Liger's
    facts, then Liger's attribution, then the catalogue's acknowledgements (`marks`, its rows). The one
    composition the CLI and the benchmark_regressions asset share; the notes (a clone that cannot be used, a
    damaged judgement store) are theirs to show. `previous`: a file keeping the last result with a digest of
    everything it was made from (a run table's fingerprint, the settings, marks, the clone's refs, this code);
    where they are all unchanged, that result is returned as it is (a night that added nothing)."""
    from kernelindex_pipeline.detection import acknowledgements
    from kernelindex_pipeline.detection.detect import detect_in_record_files, detect_in_run_table, detect_regressions
    from kernelindex_pipeline.detection.run_facts import RunFactsTable

    liger = LigerAttribution(clone)
    key = None
    if previous is not None and isinstance(runs, RunFactsTable) and runs.fingerprint:
        clone_refs = liger.history.refs_fingerprint() if liger.history is not None else None
        key = _inputs_key(runs.fingerprint, settings, marks or [], clone_refs)
        kept = _kept_result(Path(previous), key)
        if kept is not None:
            report, notes = kept
            said = set(report.judgements.notes)  # the store's warnings were that detection's, not this one's
            report.judgements = JudgementReuse(
                reused=len(report.trends), store=report.judgements.store, kept_whole=True
            )
            return report, [note for note in notes if note not in said]
    if isinstance(runs, RunFactsTable):
        report = detect_in_run_table(runs, settings, liger.adapters, judgement_store=judgement_store)
    elif from_files:
        report = detect_in_record_files(runs, settings, liger.adapters, judgement_store=judgement_store)
    else:
        report = detect_regressions(runs, settings, liger.adapters, judgement_store=judgement_store)
    notes = [*report.judgements.notes, *liger.attribute(report)]
    acknowledgements.apply(report, acknowledgements.from_rows(marks or []))  # after attribution's host folding
    if key is not None:
        report.made_from = key
        _keep_result(Path(previous), key, (report, notes))
    return report, notes


_RESULT_FORMAT = b"kernelindex-pipeline/regressions-result 1\n"


def _inputs_key(fingerprint: str, settings: Any, marks: list[dict[str, str]], clone_refs: str | None) -> str:
    """A digest of what a detection's result depends on: the runs and records (a run table's fingerprint), the
    settings, the acknowledgements, the clone's refs, and the code of detection and of Liger's adapter and
    attribution (with their data files)."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    digest.update(json.dumps([fingerprint, repr(settings), marks, clone_refs], sort_keys=True, default=str).encode())
    for folder, pattern in (("detection", "*.py"), ("liger", "*.py"), ("data", "toolchain-timeline.yaml")):
        for path in sorted((package / folder).glob(pattern)):
            digest.update(f"{folder}/{path.name}\0".encode() + path.read_bytes())
    return digest.hexdigest()


def _kept_result(path: Path, key: str) -> tuple[Any, list[str]] | None:
    """The result kept in `path` for inputs `key`, or None (another key, no file, a file not ours). The file is
    the asset's own, under DAGSTER_HOME, trusted as the IO manager's pickles beside it are."""
    import pickle

    try:
        with open(path, "rb") as handle:
            if handle.readline() != _RESULT_FORMAT or handle.readline().strip() != key.encode():
                return None
            return pickle.load(handle)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        return None


def _keep_result(path: Path, key: str, result: tuple[Any, list[str]]) -> None:
    import pickle
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    handle = tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".partial", delete=False)
    try:
        with handle:
            handle.write(_RESULT_FORMAT + key.encode() + b"\n")
            pickle.dump(result, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(handle.name, path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
