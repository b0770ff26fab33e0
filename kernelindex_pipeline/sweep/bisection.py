"""A bisection's steps as sweeps: which commits (the plan), and one commit measured (the step).

The search itself is `liger/bisection.py`; this module gives it its `measure(commit)`:

* **The plan** (`BisectionPlan`): a GPU, the good and bad commits, the candidates between them (from a
  regressions.json group: its suspects, which attribution lists as the commits touching the code the
  benchmark uses; by hand: every commit of ``git log good..bad``), oldest first, the harness commit, the
  one series a step reads, and the change's step (after / before, its 95 % interval) the endpoints must
  reproduce.
* **A step** (`StepSweeper`): Liger built at the commit (`liger/commit_build.py`, cached by commit), the
  kernel's own benchmark script of the **harness commit** (the later run's: held fixed for every step, as
  Liger's own reruns of old commits run today's scripts), `rounds` rounds (the interval is the rounds'
  bootstrap interval of the median, `liger/sample_statistics.py`; two rounds at least), through the real
  sweep (`run_sweep`: its own environment per build, the sentinel, the host check). The CSV becomes records
  as any sweep's do (`import_csv` with the sweep's measured context; the ImplementationRevision names the
  commit), written to the step's work directory, and the series' median and ``confidence95`` are the
  step's value and interval. A commit that does not build, or whose script fails (it does not import), is
  `Skipped` with the reason. GPU-seconds are the sweep's whole time (the host is held throughout).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelindex_pipeline.imports.output import write_records_jsonl
from kernelindex_pipeline.liger import bisection
from kernelindex_pipeline.liger.bisection import ExpectedStep, Measurement, Skipped, Verdict
from kernelindex_pipeline.liger.commit_build import CommitBuildError, build_liger, harness_at, resolve_commit
from kernelindex_pipeline.liger.run_facts import run_facts
from kernelindex_pipeline.liger.source_history import COMMIT_URL, LigerSourceHistory, SourceHistoryError
from kernelindex_pipeline.records.metrics import LATENCY

from .outcomes import ConfigurationError, EnvironmentBuildError
from .protocol import DEFAULT_ROUNDS, SweepRequest

MIN_ROUNDS = 2  # a single round has no interval over rounds


@dataclass(frozen=True)
class SeriesSelector:
    """The series a step reads: a Liger kernel's runs of one mode and provider (and case, where the
    kernel's script measures several), latency unless told."""

    kernel: str  # the CSV kernel name (what the benchmark script writes), e.g. "layer_norm"
    mode: str  # forward, backward, full
    provider: str = "liger"
    case_key: str | None = None  # None: the only case the script measures for that mode and provider
    metric: str = LATENCY

    def label(self) -> str:
        return f"{self.kernel} {self.mode} {self.provider} {self.case_key or '(its one case)'} {self.metric}"


@dataclass(frozen=True)
class BisectionPlan:
    """What a bisection measures: see the module docstring. `group` is the regressions group's id, if any."""

    gpu: str
    good: str  # full shas
    bad: str
    candidates: tuple[str, ...]  # strictly between good and bad, oldest first
    harness: str
    series: SeriesSelector
    expected: ExpectedStep | None = None
    group: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "gpu": self.gpu,
            "good": self.good,
            "bad": self.bad,
            "candidates": list(self.candidates),
            "harness": self.harness,
            "series": asdict(self.series),
            "expectedStep": None
            if self.expected is None
            else {"ratio": self.expected.ratio, "ci95": [self.expected.low, self.expected.high]},
        }


class BisectionInputError(ValueError):
    """The group or the commits given cannot be bisected (names what and why)."""


def _oldest_first(history: LigerSourceHistory, shas: list[str]) -> list[str]:
    return sorted(dict.fromkeys(shas), key=lambda sha: (history.commit_time(sha), shas.index(sha)))


def plan_by_hand(
    history: LigerSourceHistory,
    *,
    gpu: str,
    good: str,
    bad: str,
    series: SeriesSelector,
    harness: str | None = None,
) -> BisectionPlan:
    """Every commit of ``git log good..bad`` between the two (oldest first); the harness is `bad`'s unless given."""
    good_sha, bad_sha = resolve_commit(history, good), resolve_commit(history, bad)
    if not history.is_ancestor(good_sha, bad_sha) or good_sha == bad_sha:
        raise BisectionInputError(f"the good commit {good} is not an ancestor of the bad commit {bad}")
    between = [c.sha for c in history.commits_between(good_sha, bad_sha) if c.sha != bad_sha]
    return BisectionPlan(
        gpu=gpu,
        good=good_sha,
        bad=bad_sha,
        candidates=tuple(_oldest_first(history, between)),
        harness=resolve_commit(history, harness) if harness else bad_sha,
        series=series,
    )


def find_group(report: dict[str, Any], group: str) -> dict[str, Any]:
    """The group of a regressions.json by its id (``g-...``) or its 1-based place in ``groups``."""
    groups = report.get("groups") if isinstance(report, dict) else None
    if not isinstance(groups, list):
        raise BisectionInputError("not a regressions.json: it has no list of groups")
    for entry in groups:
        if isinstance(entry, dict) and entry.get("id") == group:
            return entry
    if group.isdigit() and 1 <= int(group) <= len(groups):
        return groups[int(group) - 1]
    ids = ", ".join(str(g.get("id")) for g in groups[:5] if isinstance(g, dict))
    raise BisectionInputError(
        f"no group {group!r} in the report (its {len(groups)} groups: {ids}{', ...' if len(groups) > 5 else ''})"
    )


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def groups_worth_bisecting(report: dict[str, Any], *, min_suspects: int = 2) -> list[tuple[str, str]]:
    """(id, GPU) of each regressions.json group the nightly trigger bisects, the worst first: slowdowns on a
    named GPU whose runs name their commits, with at least `min_suspects` suspect commits (one suspect needs no search) and
    a Liger latency series to measure. Anything malformed is passed over, never raised: the trigger reads a
    file it did not write."""
    found: list[tuple[float, str, str]] = []
    for entry in _list(_mapping(report).get("groups")):
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        refs = [_mapping(entry.get(side)).get("codeRef") for side in ("before", "after")]
        suspects = [c for c in _list(_mapping(entry.get("suspects")).get("commits")) if isinstance(c, dict)]
        worst = [
            float(s["magnitude"])
            for s in _list(entry.get("series"))
            if isinstance(s, dict)
            and s.get("provider") == "liger"
            and s.get("metric") == LATENCY
            and isinstance(s.get("magnitude"), int | float)
            and s["magnitude"] > 1
        ]
        gpu = entry.get("gpu")
        if all(refs) and isinstance(gpu, str) and gpu and len(suspects) >= min_suspects and worst:
            found.append((max(worst), entry["id"], gpu))
    return [(gid, gpu) for _, gid, gpu in sorted(found, key=lambda item: (-item[0], item[1]))]


def plan_of_group(
    history: LigerSourceHistory, report: dict[str, Any], group: str, *, harness: str | None = None
) -> BisectionPlan:
    """A regressions.json group's bisection: its boundary's commits (the runs' ``codeRef``), its suspect
    commits as the candidates, the after run's commit as the harness, and of its series the Liger latency
    series with the largest step, whose change's magnitude and interval the endpoints must reproduce."""
    entry = find_group(report, group)
    name = str(entry.get("id") or group)
    refs = [(entry.get(side) or {}).get("codeRef") for side in ("before", "after")]
    if not all(refs):
        raise BisectionInputError(
            f"group {name}: its runs name no commit (codeRef {refs[0]!r} -> {refs[1]!r}); only runs of known code "
            "can be bisected (Liger's CI files name theirs)"
        )
    good, bad = resolve_commit(history, str(refs[0])), resolve_commit(history, str(refs[1]))
    suspects = [str(c.get("sha")) for c in ((entry.get("suspects") or {}).get("commits") or []) if c.get("sha")]
    resolved = [resolve_commit(history, sha) for sha in suspects]
    candidates = [sha for sha in _oldest_first(history, resolved) if sha not in (good, bad)]
    series = [
        s
        for s in entry.get("series") or []
        if s.get("provider") == "liger" and s.get("metric") == LATENCY and s.get("magnitude")
    ]
    if not series:
        raise BisectionInputError(f"group {name}: no Liger latency series to measure")
    top = max(series, key=lambda s: (abs(math.log(float(s["magnitude"]))), s.get("kernel", ""), s.get("caseKey", "")))
    change = next(
        (
            c
            for c in report.get("changes") or []
            if all(c.get(k) == top.get(k) for k in ("kernel", "mode", "provider", "caseKey", "metric"))
            and (c.get("before") or {}).get("source") == (entry.get("before") or {}).get("source")
            and (c.get("after") or {}).get("source") == (entry.get("after") or {}).get("source")
        ),
        None,
    )
    magnitude = float(top["magnitude"])
    low, high = (change.get("ci95") if change else None) or [magnitude, magnitude]
    gpu = entry.get("gpu") or (change or {}).get("gpu")
    if not gpu:
        raise BisectionInputError(f"group {name}: the report names no GPU for it")
    return BisectionPlan(
        gpu=str(gpu),
        good=good,
        bad=bad,
        candidates=tuple(candidates),
        harness=resolve_commit(history, harness) if harness else bad,
        series=SeriesSelector(str(top["kernel"]), str(top["mode"]), "liger", str(top["caseKey"])),
        expected=ExpectedStep(magnitude, float(min(low, magnitude)), float(max(high, magnitude))),
        group=name,
    )


def series_value(imported, selector: SeriesSelector) -> tuple[float, float, float] | str:
    """(median, low, high) of the selected series among a sweep's records (ns for latency), or why there
    is none: no run of it, several cases where none was named, or a run without an interval."""
    found = []
    cases = set()
    for manifest in imported.runs():
        facts = run_facts(manifest)
        if isinstance(facts, str):
            continue
        if (facts.kernel, facts.mode, facts.provider, facts.metric) != (
            selector.kernel,
            selector.mode,
            selector.provider,
            selector.metric,
        ):
            continue
        cases.add(facts.case_key)
        if selector.case_key is None or facts.case_key == selector.case_key:
            found.append((facts, manifest))
    if not found:
        return f"the sweep made no run of {selector.label()}" + (
            f" (its cases: {', '.join(sorted(cases))})" if cases else ""
        )
    if len({f.case_key for f, _ in found}) > 1:
        return f"{selector.kernel} {selector.mode} has cases {', '.join(sorted(cases))}: name one (case key)"
    facts, manifest = found[0]
    interval = (((manifest.get("spec") or {}).get("timing") or {}).get("latencyNs") or {}).get("confidence95")
    if not interval:
        return f"the run of {selector.label()} has no interval (a sweep of {MIN_ROUNDS} rounds or more has one)"
    return float(facts.value), float(interval[0]), float(interval[1])


@dataclass
class StepSweeper:
    """`measure(commit)` for `liger.bisection.bisect`: one sweep of the plan's series at a commit (module
    docstring). `request_fields` are further SweepRequest fields (env_cache_dir, wheel_dir, base_python,
    extra_pythonpath, extra_env, script_timeout_s, artifact_store); `progress` receives a line per step."""

    history: LigerSourceHistory
    plan: BisectionPlan
    work_root: Path
    rounds: int = DEFAULT_ROUNDS
    build_cache_dir: Path | None = None
    build_python: str | None = None
    request_fields: dict[str, Any] = field(default_factory=dict)
    progress: Callable[[str], None] | None = None
    builds: dict[str, dict] = field(default_factory=dict)  # commit -> CommitBuild.to_dict() of this bisection
    _harness: Path | None = None

    def __post_init__(self) -> None:
        if type(self.rounds) is not int or self.rounds < MIN_ROUNDS:
            raise ConfigurationError(
                f"a bisection step needs {MIN_ROUNDS} rounds or more for its interval; got {self.rounds!r}"
            )
        unknown = sorted(set(self.request_fields) - set(SweepRequest.__dataclass_fields__))
        taken = sorted(set(self.request_fields) & {"gpu", "liger_version", "release", "kernels", "scripts", "rounds", "work_dir", "liger_wheel", "liger_commit"})  # fmt: skip
        if unknown or taken:
            raise ConfigurationError(f"sweep request fields a bisection step cannot take: {unknown + taken}")
        self.work_root = Path(self.work_root)

    def harness(self) -> Path:
        if self._harness is None:
            self._harness = harness_at(
                self.history, self.plan.harness, self.work_root / f"harness-{self.plan.harness[:12]}"
            )
        return self._harness

    def _say(self, text: str) -> None:
        if self.progress is not None:
            self.progress(text)

    def __call__(self, commit: str) -> Measurement | Skipped:
        from kernelindex_pipeline.liger import MeasuredContext, import_csv

        from .run import run_sweep

        try:
            build = build_liger(self.history, commit, self.build_cache_dir, python=self.build_python)
        except CommitBuildError as error:
            reason = str(error).splitlines()
            self._say(f"{commit[:12]}: does not build")
            return Skipped(f"does not build: {' '.join(reason[:1] + reason[-1:])}")
        self.builds[build.commit] = build.to_dict()
        self._say(
            f"{commit[:12]}: liger {build.version} {'from the build cache' if build.reused else 'built'}; sweeping"
        )
        request = SweepRequest(
            gpu=self.plan.gpu,
            liger_version=build.version,
            release=str(self.harness()),
            kernels=[self.plan.series.kernel],
            rounds=self.rounds,
            work_dir=str(self.work_root / f"step-{build.commit[:12]}"),
            liger_wheel=str(build.wheel),
            liger_commit=build.commit,
            **self.request_fields,
        )
        try:
            result = run_sweep(request)
        except EnvironmentBuildError as error:  # this commit's wheel does not install (a host fault skips every step)
            return Skipped(f"does not install: {str(error).splitlines()[0]}")
        seconds = float(result.timings.get("total_s", 0.0))
        detail = {
            "workDir": result.work_dir,
            "build": {"version": build.version, "digest": build.digest, "reused": build.reused},
            "environmentReused": bool(result.environment.get("reused")),
        }
        failed = [o for o in result.outcomes if not o.ok]
        if failed and not result.rows:
            first = failed[0]
            return Skipped(
                f"{first.script} {first.status.value}: {first.error_line or 'no error line'}", seconds, detail
            )
        imported = import_csv(
            result.csv_path,
            gpu=self.plan.gpu,
            liger_version=build.version,
            measured=MeasuredContext(**result.measured_context()),
        )
        records = Path(result.work_dir) / "records.jsonl"
        write_records_jsonl(records, imported.sorted_items())
        detail["records"] = str(records)
        found = series_value(imported, self.plan.series)
        if isinstance(found, str):
            return Skipped(found, seconds, detail)
        value, low, high = found
        return Measurement(value, min(low, value), max(high, value), seconds, detail)


def run_bisection(
    plan: BisectionPlan, measure: Callable[[str], Measurement | Skipped], *, budget_seconds: float | None = None
) -> Verdict:
    """`liger.bisection.bisect` over the plan's commits."""
    return bisection.bisect(
        plan.good, list(plan.candidates), plan.bad, measure, expected=plan.expected, budget_seconds=budget_seconds
    )


def bisection_document(plan: BisectionPlan, verdict: Verdict, builds: dict[str, dict] | None = None) -> dict[str, Any]:
    """The JSON a bisection writes (docs/concepts/bisection.md): the plan, then the verdict with its steps."""
    return {
        "format": "kernelindex-pipeline/bisection/v1",
        "plan": plan.to_dict(),
        **verdict.to_dict(),
        "culpritUrl": COMMIT_URL.format(sha=verdict.culprit) if verdict.culprit else None,
        "builds": builds or {},
    }


__all__ = [
    "BisectionInputError",
    "BisectionPlan",
    "SeriesSelector",
    "SourceHistoryError",
    "StepSweeper",
    "bisection_document",
    "find_group",
    "plan_by_hand",
    "plan_of_group",
    "run_bisection",
    "series_value",
]
