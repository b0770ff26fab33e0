"""Regression detection over every run: series in time order, host effects taken out, change points
with statistics, and a verdict with a cause for each change.

The one domain API is `detect_regressions(manifests, settings)` (a catalogue: source runs are found from
the runs' own times) and `detect_in_record_files(paths, settings)` (each file one source run, as
`transform` wrote it). The Dagster `benchmark_regressions` asset calls it once; its warning check and the
report read that result. Runs are read only through their source's adapter (`run_facts.py`): this
module knows no source's identity formats.

**Series.** A series is one kernel, timed pass (mode), provider, implementation revision, workload
case, benchmark protocol, GPU (hardware) and origin of runs (``RunFacts.origin``: Liger's committed
history rows, its CI runs, our sweeps), and one metric (``latency`` or ``peak_memory``), followed
through every run in ``observedAt`` order. The Liger version is a label on each run: a version is a
stretch of the series, and a version change between two runs is a possible cause of a change there.
The *software* environment (torch, triton, CUDA, driver: part of ExecutionEnvironment, so of its
digest) is deliberately not part of the identity either: torch and triton are not pinned by Liger's
CI, so a new toolchain is exactly the kind of cause a reader wants named (``environment``), not a new
series that starts with no history. The hardware is part of the identity (the GPU slug of the run's
external id), so an H100 and an H200 are never compared. An implementation revision of its own (an
A/B variant) is a series of its own, and so is each origin: machine, toolchain and code differ at
once between two origins, so their runs are never one level, and a history row between two CI runs
must not cut the CI series.

**Source runs.** A source run is one sweep: with ``--records`` each file (per GPU); in a catalogue,
the runs of one GPU and one software environment in ``observedAt`` order, split where two runs are
more than ``SESSION_GAP`` apart (a sweep's rows are minutes apart; Liger's CI also measures a few cases
twice within seconds, so a repeat is not a new sweep: repeats of a case in one source run count as one
value, their median).

**Per series**, values are log-scale; the run-level host effects (`host_effects.py`) are subtracted;
the noise is the MAD of successive differences shrunk to the pooled noise of its class; change points
come from `changepoints.py` (significance level ``alpha``, minimum effect ``min_effect``, two runs on
each side). Series with fewer than ``2 * min_segment`` runs are *insufficient*, never "no change".

**Cause**: detection alone names ``environment`` (the two runs' environment digests differ), ``host``
(most kernel groups of the class moved the same way at that run) or ``unknown``; a source's attributor
ranks the causes with their evidence (Liger's: `liger/attribution.py`). Lasting host moves are folded
into one entry each (`host_changes.py`). The README ("Regression detection",
"Attribution") is the one explanation of the causes.
"""

from __future__ import annotations

import math
import os
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from . import acknowledgements, attribution, host_changes, host_effects
from .changepoints import (
    MAD_EFFICIENCY,
    DetectionSettings,
    Split,
    find_changes,
    newest_step,
    prior_df,
    shrunk_noise,
    within_noise,
)
from .judgements import JudgementReuse, JudgementStore
from .run_facts import LATENCY as LATENCY  # re-exported: the metric names are run_facts'
from .run_facts import PEAK_MEMORY, AdapterRegistry, FactsAdapter, facts_of

SLOWDOWN = "slowdown"
SPEEDUP = "speedup"
CAUSES = attribution.CAUSES  # liger_kernel, benchmark_script, environment, host, unknown
SESSION_GAP_S = 30 * 60  # a sweep's rows are at most minutes apart (160 s on Liger's CI); runs are hours apart
MIN_HOST_MOVES = 2  # host moves a launch-bound series needs for a slope of its own (`_against_host_speed`)
HOST_CAUSE_SHARE = 0.5


class RegressionInputError(ValueError):
    """Input the detector cannot use (names the input and what to do)."""


# ------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class GpuSeriesKey:
    """One series as detection judges it: runs on one GPU, across its environments (not
    reporting.series.SeriesKey, the charts' series, which keeps environments and categories apart)."""

    kernel: str
    mode: str
    provider: str
    implementation_digest: str
    workload_digest: str
    protocol_digest: str
    gpu: str  # GPU slug (hardware)
    metric: str
    origin: str | None = None  # RunFacts.origin: each origin of runs is a series of its own


@dataclass
class SourceRun:
    label: str
    gpu: str
    observed_at: str  # its first run's observedAt
    versions: Counter = field(default_factory=Counter)
    code_refs: Counter = field(default_factory=Counter)  # the code measured (commit or tag), where the adapter knows it
    origin: str | None = None  # where it was measured (RunFacts.origin)

    @property
    def code_ref(self) -> str | None:
        return self.code_refs.most_common(1)[0][0] if self.code_refs else None


@dataclass
class Trend:
    """One judged series: what the page draws (raw values, values with host effects out, noise)."""

    key: GpuSeriesKey
    case_key: str
    observed_at: list[str]
    versions: list[str]
    sources: list[str]
    environments: list[str]
    values: np.ndarray  # raw (ns or bytes)
    corrected: np.ndarray  # host effects taken out
    noise: float  # sigma of log values
    splits: list[Split]
    run_index: np.ndarray  # source run of each value (index into RegressionReport.sources)
    cls: int  # latency class (host_effects.CLASS_LABELS)
    group: int  # kernel group (kernel, provider, metric)
    code_refs: list[str | None] = field(default_factory=list)  # the code measured at each run, where known


@dataclass
class Change:
    trend: Trend
    split: Split
    cause: str
    # ranked causes with their evidence (a source's attributor fills it; the first is `cause`)
    causes: list[attribution.CauseEvidence] = field(default_factory=list)

    @property
    def key(self) -> GpuSeriesKey:
        return self.trend.key

    @property
    def magnitude(self) -> float:
        return math.exp(self.split.log_ratio)

    @property
    def ci95(self) -> tuple[float, float]:
        return (
            math.exp(self.split.log_ratio - self.split.half_width),
            math.exp(self.split.log_ratio + self.split.half_width),
        )

    @property
    def direction(self) -> str:
        return SLOWDOWN if self.split.log_ratio > 0 else SPEEDUP

    def side(self, index: int) -> dict[str, Any]:
        t = self.trend
        return {
            "observedAt": t.observed_at[index],
            "ligerVersion": t.versions[index],
            "source": t.sources[index],
            "environmentDigest": t.environments[index],
            "codeRef": t.code_refs[index] if index < len(t.code_refs) else None,
        }

    def to_dict(self) -> dict[str, Any]:
        k, s = self.key, self.split
        low, high = self.ci95
        return {
            "kernel": k.kernel,
            "mode": k.mode,
            "provider": k.provider,
            "gpu": k.gpu,
            "origin": k.origin,
            "workloadDigest": k.workload_digest,
            "caseKey": self.trend.case_key,
            "implementationDigest": k.implementation_digest,
            "environmentDigest": self.trend.environments[s.index],
            "metric": k.metric,
            "direction": self.direction,
            "magnitude": round(self.magnitude, 4),
            "ci95": [round(low, 4), round(high, 4)],
            "pValue": float(f"{s.p_value:.3g}"),
            "noise": round(math.expm1(self.trend.noise), 4),
            "runsBefore": s.index - s.start,
            "runsAfter": s.stop - s.index,
            "before": self.side(s.index - 1),
            "after": self.side(s.index),
            "cause": self.cause,
            "causes": [e.to_dict() for e in self.causes],
        }


def run_name(side: dict[str, Any]) -> str:
    """A run as a maintainer names it, from a change's `side`: its Liger version and the commit measured,
    then the date (``0.6.1 (2845fe8) 2025-08-01``); a run whose code is a release tag, or unknown, is its
    version and date. The source label (a GPU and a timestamp for a catalogue's runs) is its identity in
    the JSON, never its name."""
    version, code, day = side.get("ligerVersion") or "", side.get("codeRef") or "", str(side.get("observedAt"))[:10]
    if code and not code.lstrip("v").startswith(version or "\0") and code != version:
        return f"{version} ({code[:7]}) {day}".strip()
    return f"{version} {day}".strip() if version else f"{side.get('source')} {day}"


@dataclass(frozen=True)
class HostEffect:
    source: str
    gpu: str
    observed_at: str
    latency_class: str
    factor: float
    ci95: tuple[float, float]
    kernel_groups: int  # kernel groups (kernel, provider) the estimate rests on
    kernel: str | None = None  # set for an effect on one benchmark script (kernel) of the run only
    series: int | None = None  # series of that script

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "gpu": self.gpu,
            "observedAt": self.observed_at,
            "factor": round(self.factor, 3),
            "ci95": [round(self.ci95[0], 3), round(self.ci95[1], 3)],
            "latencyClass": self.latency_class,
            "kernel": self.kernel,
            "kernelGroups": self.kernel_groups,
            "series": self.series,
        }


@dataclass(frozen=True)
class Insufficient:
    key: GpuSeriesKey
    runs: int


@dataclass
class RegressionReport:
    settings: DetectionSettings
    runs: int  # runs read that have a value
    sources: list[SourceRun]
    trends: list[Trend]  # judged series
    insufficient: list[Insufficient]
    host_effects: list[HostEffect]
    all_host_effects: list[tuple[SourceRun, int, float, float, int]]  # (run, class, log factor, se, groups)
    changes: list[Change]
    skipped: Counter = field(default_factory=Counter)  # runs without a usable value, by reason
    attribution_notes: list[str] = field(default_factory=list)  # what the attributor could not use (a clone, a commit)
    # change_id -> its acknowledgement (acknowledgements.apply): known regressions, left out of the check's count
    acknowledged: dict[str, Any] = field(default_factory=dict)
    # steps at a series' newest run: one run after, not the two a change needs; judged again with the next
    pending: list[Change] = field(default_factory=list)
    # steps where a series changes source (history rows, CI runs, our sweeps): listed apart, never a change
    # lasting moves of a run's host, each one entry for the series it moved (`host_changes.py`)
    host_changes: list[host_changes.HostChange] = field(default_factory=list)
    # verdicts of bisections of its groups, by group id (the bisection JSON, README "Bisection"): shown with
    # their group (page, JSON `groups[].bisection`); what was measured afterwards, never part of detection
    bisections: dict[str, dict[str, Any]] = field(default_factory=dict)
    # series judged afresh and reused from the judgement store (how the result was computed, not part of it:
    # not in to_dict, which is the same with or without a store)
    judgements: JudgementReuse = field(default_factory=JudgementReuse)

    @property
    def slowdowns(self) -> list[Change]:
        return [c for c in self.changes if c.direction == SLOWDOWN]

    @property
    def speedups(self) -> list[Change]:
        return [c for c in self.changes if c.direction == SPEEDUP]

    @property
    def has_regressions(self) -> bool:
        return bool(self.slowdowns)

    @property
    def data_sufficient(self) -> bool:
        return bool(self.trends)

    def by_cause(self) -> dict[str, list[Change]]:
        grouped: dict[str, list[Change]] = {cause: [] for cause in CAUSES}
        for change in self.changes:
            grouped[change.cause].append(change)
        return grouped

    def counts(self) -> dict[str, Any]:
        return {
            "series": len(self.trends),
            "insufficient": len(self.insufficient),
            "sources": len(self.sources),
            "runs": self.runs,
            "changes": len(self.changes),
            "slowdowns": len(self.slowdowns),
            "speedups": len(self.speedups),
            "pending": len(self.pending),
            "hostEffects": len(self.host_effects),
            "hostChanges": len(self.host_changes),
            "acknowledged": len(self.acknowledged),
            "byCause": {cause: len(items) for cause, items in self.by_cause().items()},
        }

    def summary(self) -> str:
        c = self.counts()
        causes = ", ".join(f"{n} {cause}" for cause, n in c["byCause"].items() if n)
        text = (
            f"{c['slowdowns']} slowdowns and {c['speedups']} speed-ups ({causes or 'none'}) in {c['series']} judged "
            f"series over {c['sources']} source runs; {c['pending']} steps at the newest run pending a second run; "
            f"{len(self.host_effects)} host effects taken out; "
            + (f"{len(self.host_changes)} host changes; " if self.host_changes else "")
            + f"{c['insufficient']} series with insufficient data (fewer than {self.settings.min_runs} runs)"
        )
        if not self.trends:
            text += "; NOTHING could be judged, so this is not evidence of 'no regression'"
        return text

    def markdown(self, limit: int | None = 20) -> str:
        rows = self.changes[:limit] if limit else self.changes
        if not rows:
            return f"_No changes found. {self.summary()}._"
        lines = [
            "| cause | kernel | mode | provider | GPU | workload | metric | change | 95 % CI | before → after |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for c in rows:
            d = c.to_dict()
            lines.append(
                f"| {c.cause} | {d['kernel']} | {d['mode']} | {d['provider']} | {d['gpu']} | {d['caseKey']} | "
                f"{d['metric']} | ×{d['magnitude']:.3g} {d['direction']} | {d['ci95'][0]:.3g}–{d['ci95'][1]:.3g} | "
                f"{d['before']['ligerVersion']} ({d['before']['observedAt'][:10]}) → "
                f"{d['after']['ligerVersion']} ({d['after']['observedAt'][:10]}) |"
            )
        if limit and len(self.changes) > limit:
            lines.append(f"\n… and {len(self.changes) - limit} more.")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The documented shape of regressions.json (README, "Regression detection")."""
        s = self.settings
        return {
            "series": len(self.trends),
            "insufficient": len(self.insufficient),
            "settings": {"alpha": s.alpha, "minEffect": s.min_effect, "minSegment": s.min_segment},
            "counts": self.counts(),
            "sources": [
                {
                    "source": r.label,
                    "gpu": r.gpu,
                    "observedAt": r.observed_at,
                    "ligerVersions": sorted(r.versions),
                    "codeRef": r.code_ref,
                }
                for r in self.sources
            ],
            "hostEffects": [h.to_dict() for h in self.host_effects],
            "changes": [
                self._with_acknowledgement(c.to_dict(), [c], acknowledgements.change_id(c)) for c in self.changes
            ],
            "groups": [
                attribution.with_bisection(self._with_acknowledgement(g.to_dict(), g.changes, g.id), self.bisections)
                for g in attribution.group_changes(self.changes)
            ],
            "attributionNotes": list(self.attribution_notes),
            "pending": [c.to_dict() for c in self.pending],
            "hostChanges": [h.to_dict() for h in self.host_changes],
            "insufficientSeries": _insufficient_summary(self.insufficient),
            "skippedRuns": dict(self.skipped),
        }

    def _with_acknowledgement(self, entry: dict[str, Any], changes: list[Change], entry_id: str) -> dict[str, Any]:
        """A change's or a group's JSON with its id and, where every change of it is acknowledged alike,
        the acknowledgement (`acknowledgements.py`)."""
        ids = [acknowledgements.change_id(c) for c in changes]
        entry = {"id": entry_id, **entry}
        if entry_id != ids[0] or len(ids) > 1:  # a group: the changes an acknowledgement of it marks
            entry["changeIds"] = ids
        marked = acknowledgements.group_acknowledgement(self, changes)
        if marked is not None:
            entry["acknowledgement"] = marked.to_dict()
        return entry


def _insufficient_summary(items: list[Insufficient]) -> list[dict[str, Any]]:
    grouped = Counter((i.key.kernel, i.key.gpu, i.key.metric, i.runs) for i in items)
    return [{"kernel": k, "gpu": g, "metric": m, "runs": r, "series": n} for (k, g, m, r), n in sorted(grouped.items())]


# ------------------------------------------------------------------------------------ collection


class _Observations:
    """Column lists of every usable run (one pass over the manifests, each read by its source's adapter)."""

    def __init__(self, adapters: Mapping[str, FactsAdapter] | None = None) -> None:
        self.registry = AdapterRegistry(adapters)
        self.series: dict[tuple, int] = {}  # GpuSeriesKey fields -> series id
        self.keys: list[GpuSeriesKey] = []  # by series id
        self.case_keys: list[str] = []
        self.scripts: list[str] = []  # benchmark script of each series
        self.sid: list[int] = []
        self.value: list[float] = []
        self.observed: list[str] = []
        self.order: list[float] = []  # the adapter's position on the run timeline (NaN: measurement time)
        self.version: list[str] = []
        self.code_ref: list[str | None] = []
        self.environment: list[str] = []
        self.origin: list[str | None] = []
        self.source: list[str | None] = []
        self.skipped: Counter = Counter()

    def add(self, manifests: Iterable[dict[str, Any]], source: str | None = None) -> None:
        self.registry.enter(source)
        registry, skipped, series, keys = self.registry, self.skipped, self.series, self.keys
        sid_of, value, observed, order = self.sid.append, self.value.append, self.observed.append, self.order.append
        version, code_ref, environment, sources = (
            self.version.append,
            self.code_ref.append,
            self.environment.append,
            self.source.append,
        )
        for manifest in manifests:
            if not isinstance(manifest, dict):
                continue
            if manifest.get("kind") != "BenchmarkRun":
                registry.see(manifest)
                continue
            facts = facts_of(manifest, registry)
            if isinstance(facts, str):
                skipped[facts] += 1
                continue
            identity = (
                facts.kernel,
                facts.mode,
                facts.provider,
                facts.implementation_digest,
                facts.workload_digest,
                facts.protocol_digest,
                facts.gpu,
                facts.metric,
                facts.origin,
            )
            sid = series.get(identity)
            if sid is None:
                sid = series[identity] = len(keys)
                keys.append(GpuSeriesKey(*identity))
                self.case_keys.append(facts.case_key)
                self.scripts.append(facts.script)
            sid_of(sid)
            value(facts.value)
            observed(facts.observed_at)
            order(math.nan if facts.order is None else facts.order)
            version(facts.version)
            code_ref(facts.code_ref)
            environment(facts.environment_digest)
            self.origin.append(facts.origin)
            sources(source)


def _epoch_seconds(stamps: list[str]) -> np.ndarray:
    try:
        return np.array([s.rstrip("Z") for s in stamps], dtype="datetime64[ms]").astype(np.int64) / 1000.0
    except ValueError:  # unusual but valid ISO forms (offsets): the slow path names the bad one
        out = []
        for s in stamps:
            try:
                out.append(datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp())
            except ValueError:
                raise RegressionInputError(f"observedAt {s!r} is not an ISO 8601 time") from None
        return np.array(out)


def _source_runs(obs: _Observations, keys: list[GpuSeriesKey], t: np.ndarray) -> tuple[np.ndarray, list[SourceRun]]:
    """Source run index of every observation, runs ordered by GPU then on the run timeline (the adapters'
    order key; a run without one keeps its measured place among the others). Source runs are cut by
    measurement time."""
    timeline = np.array(obs.order, dtype=float)
    gpu_of = [k.gpu for k in keys]
    sid = np.array(obs.sid)
    order = np.lexsort((t, np.array([gpu_of[s] for s in obs.sid])))
    labels: list[tuple[str, str]] = []
    run_of = np.empty(len(sid), dtype=np.int64)
    if any(s is None for s in obs.source):
        current: dict[str, tuple[int, float, tuple]] = {}  # gpu -> (run, last time, (environment, origin))
        for i in order:
            gpu, env = gpu_of[obs.sid[i]], (obs.environment[i], obs.origin[i])
            state = current.get(gpu)
            if state is None or t[i] - state[1] > SESSION_GAP_S or env != state[2]:
                labels.append((gpu, ""))
                state = (len(labels) - 1, t[i], env)
            current[gpu] = (state[0], t[i], env)
            run_of[i] = state[0]
    else:
        index: dict[tuple[str, str], int] = {}
        for i in order:
            k = (gpu_of[obs.sid[i]], obs.source[i])
            if k not in index:
                index[k] = len(labels)
                labels.append(k)
            run_of[i] = index[k]
    first_time = np.full(len(labels), np.inf)
    np.minimum.at(first_time, run_of, t)
    # the run timeline: the adapter's order where it gives one (e.g. the code's commit time); a run without
    # one keeps its measured place among those that have one: right after the latest-placed run of its GPU
    # measured before it (its first measurement decides among equals), so a run the adapter cannot place
    # never moves the runs it can, nor is moved past them (orders and measurement times are not one scale)
    placed = np.full(len(labels), np.inf)
    known = ~np.isnan(timeline)
    np.minimum.at(placed, run_of[known], timeline[known])
    if not np.isfinite(placed).all():
        latest: dict[str, float] = {}
        for r in sorted(range(len(labels)), key=lambda r: first_time[r]):
            gpu = labels[r][0]
            if np.isfinite(placed[r]):
                latest[gpu] = max(latest.get(gpu, -np.inf), placed[r])
            else:
                placed[r] = latest.get(gpu, -np.inf)
    first_obs: dict[int, int] = {}
    for i in order:
        first_obs.setdefault(int(run_of[i]), int(i))
    runs = []
    for r, (gpu, label) in enumerate(labels):
        stamp = obs.observed[first_obs[r]]
        runs.append(SourceRun(label=label or f"{gpu} {stamp}", gpu=gpu, observed_at=stamp))
    # renumber by (gpu, place on the timeline) so neighbouring runs are neighbours on it
    ranked = sorted(range(len(runs)), key=lambda r: (runs[r].gpu, placed[r], first_time[r], runs[r].label))
    new_index = np.empty(len(runs), dtype=np.int64)
    new_index[ranked] = np.arange(len(runs))
    runs = [runs[r] for r in ranked]
    run_of = new_index[run_of]
    for i, r in enumerate(run_of):
        runs[r].versions[obs.version[i]] += 1
        if obs.code_ref[i] is not None:
            runs[r].code_refs[obs.code_ref[i]] += 1
        if obs.origin[i] is not None:
            runs[r].origin = obs.origin[i]
    return run_of, runs


# -------------------------------------------------------------------------------------- detection


def detect_regressions(
    manifests: Iterable[dict[str, Any]],
    settings: DetectionSettings | None = None,
    adapters: Mapping[str, FactsAdapter] | None = None,
    judgement_store: str | os.PathLike[str] | None = None,
) -> RegressionReport:
    """Every BenchmarkRun of a catalogue (any kinds may be mixed in); source runs from the runs' times.
    `adapters`: run-facts adapters by source name, before `run_facts.SOURCE_ADAPTERS`. `judgement_store`: a
    file of per-series judgements (`judgements.py`) that this detection reuses where a series' inputs are
    unchanged and then rewrites; None: every series is judged afresh."""
    obs = _Observations(adapters)
    obs.add(manifests)
    return _detect(obs, settings or DetectionSettings(), judgement_store)


def detect_in_record_files(
    paths: Sequence[str | os.PathLike[str]],
    settings: DetectionSettings | None = None,
    adapters: Mapping[str, FactsAdapter] | None = None,
    judgement_store: str | os.PathLike[str] | None = None,
) -> RegressionReport:
    """Each file one source run (a records.jsonl that `transform` wrote), labelled by its folder name
    when the file is called records.jsonl, else by the file name."""
    from kernelindex_pipeline.records.io import load_manifests

    obs = _Observations(adapters)
    seen: dict[str, Path] = {}
    for raw in paths:
        path = Path(raw)
        if not path.is_file():
            raise RegressionInputError(f"{path}: no such file (give records.jsonl files that `transform` wrote)")
        label = path.parent.name if path.name == "records.jsonl" and path.parent.name else path.name
        if label in seen:
            label = str(path)
        seen[label] = path
        before = len(obs.sid)
        obs.add((manifest for _, manifest in load_manifests(path)), source=label)
        if len(obs.sid) == before:
            raise RegressionInputError(f"{path}: no BenchmarkRun with a latency or peak memory value in it")
    return _detect(obs, settings or DetectionSettings(), judgement_store)


def _detect(
    obs: _Observations, settings: DetectionSettings, judgement_store: str | os.PathLike[str] | None = None
) -> RegressionReport:
    n = len(obs.sid)
    if n == 0:
        return RegressionReport(settings, 0, [], [], [], [], [], [], obs.skipped)
    run_of, sources = _source_runs(obs, obs.keys, _epoch_seconds(obs.observed))
    panel = _panel(obs, run_of, len(sources))
    fit, corrected = _host_corrected(panel, obs.keys, sources, settings)
    priors, own_noise, own_used = _noise_priors(panel, obs.keys, corrected, settings)
    unsettled = np.zeros(len(sources), dtype=bool)  # runs with a host effect taken out (`_held_where_settled`)
    unsettled[[*_significant_class_effects(fit, settings), *(int(run) for run, _ in fit.scripts.index)]] = True
    store = JudgementStore(judgement_store, _judge_series)
    trends: list[Trend] = []
    insufficient: list[Insufficient] = []
    found: list[tuple[Trend, Split]] = []
    newest: list[tuple[Trend, Split]] = []
    for i, s in enumerate(panel.series_ids):
        if panel.lengths[i] < settings.min_runs:
            insufficient.append(Insufficient(obs.keys[s], int(panel.lengths[i])))
            continue
        a, b = panel.bounds[i], panel.bounds[i + 1]
        prior, weight = priors[i]
        sigma = shrunk_noise(own_noise[i], MAD_EFFICIENCY * own_used[i], prior, weight)
        settled = ~unsettled[panel.run[a:b]]
        splits, pending_step, sigma = store.judged(
            corrected[a:b], fit.extra[a:b], sigma, prior, weight, settings, settled
        )
        trend = _trend(obs, panel, i, sources, corrected, sigma, splits)
        trends.append(trend)
        found += [(trend, split) for split in splits]
        if pending_step is not None:
            newest.append((trend, pending_step))
    changes = _with_causes(found, trends)
    pending = _with_causes(newest, trends)
    reported, every = _host_effect_entries(fit, sources, settings, panel.scripts)
    store.save()
    return RegressionReport(
        settings=settings,
        runs=n,
        sources=sources,
        trends=trends,
        insufficient=insufficient,
        host_effects=reported,
        all_host_effects=every,
        changes=changes,
        skipped=obs.skipped,
        pending=pending,
        judgements=store.reuse,
    )


@dataclass
class _Panel:
    """One value per (series, source run), sorted by series then run time, and what each series is."""

    x: np.ndarray  # log value: the median of a case's repeats within one source run
    first: np.ndarray  # the first observation of each (series, run), for labels
    run: np.ndarray  # source run of each value
    series: np.ndarray  # series id of each value
    bounds: np.ndarray  # series i's values are [bounds[i], bounds[i + 1])
    series_ids: np.ndarray
    typical: np.ndarray  # per series: its median log value
    series_class: np.ndarray  # per series: latency class (memory a class of its own), sparse ones merged
    series_group: np.ndarray  # per series: its kernel group (kernel, provider, metric)
    series_script: np.ndarray  # per series: its benchmark script, as an index into `scripts`
    scripts: list[str]

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.bounds)

    def per_value(self, per_series: np.ndarray) -> np.ndarray:
        return np.repeat(per_series, self.lengths)


def _panel(obs: _Observations, run_of: np.ndarray, n_sources: int) -> _Panel:
    keys = obs.keys
    n = len(obs.sid)
    sid = np.array(obs.sid, dtype=np.int64)
    logv = np.log(np.array(obs.value))
    # one value per (series, source run): the median of repeats, then sorted by series and run time
    pair = sid * n_sources + run_of
    uniq, inverse = np.unique(pair, return_inverse=True)
    order = np.argsort(inverse, kind="stable")
    cuts = np.flatnonzero(np.diff(inverse[order])) + 1
    if len(uniq) < n:  # repeats of a case within one source run
        x = np.array([np.median(g) for g in np.split(logv[order], cuts)])
    else:
        x = logv[order]
    p_sid = uniq // n_sources
    p_run = uniq % n_sources  # uniq is sorted by series then run index, i.e. time within the GPU
    # latency class of each series by its typical (median) value; memory is a class of its own
    starts = np.flatnonzero(np.r_[True, p_sid[1:] != p_sid[:-1]])
    bounds = np.r_[starts, len(p_sid)]
    typical = np.array([np.median(x[a:b]) for a, b in zip(bounds[:-1], bounds[1:], strict=True)])
    series_ids = p_sid[starts]
    is_memory = np.array([keys[s].metric == PEAK_MEMORY for s in series_ids])
    series_class = np.where(is_memory, host_effects.MEMORY_CLASS, host_effects.latency_class(typical))
    group_ids: dict[tuple, int] = {}
    series_group = np.array(
        [group_ids.setdefault((keys[s].kernel, keys[s].provider, keys[s].metric), len(group_ids)) for s in series_ids]
    )
    series_class = _merge_sparse_classes(series_class, series_group, np.array([keys[s].gpu for s in series_ids]))
    script_ids: dict[str, int] = {}
    series_script = np.array([script_ids.setdefault(obs.scripts[s], len(script_ids)) for s in series_ids])
    return _Panel(
        x=x,
        first=order[np.r_[0, cuts]],
        run=p_run,
        series=p_sid,
        bounds=bounds,
        series_ids=series_ids,
        typical=typical,
        series_class=series_class,
        series_group=series_group,
        series_script=series_script,
        scripts=list(script_ids),
    )


def _host_corrected(
    panel: _Panel, keys: list[GpuSeriesKey], sources: list[SourceRun], settings: DetectionSettings
) -> tuple[host_effects.HostFit, np.ndarray]:
    """The run-level host effects (`host_effects.estimate`) and the values with them taken out
    (launch-bound series against the host's speed, `_against_host_speed`)."""
    run_gpu = np.unique([r.gpu for r in sources], return_inverse=True)[1] if sources else np.empty(0, dtype=np.int64)
    cls, group = panel.per_value(panel.series_class), panel.per_value(panel.series_group)
    fit = host_effects.estimate(
        panel.series,
        panel.run,
        cls,
        group,
        panel.per_value(panel.series_script),
        panel.x,
        settings.min_log_effect,
        _z_for(settings.alpha),
        run_gpu,
    )
    launch_bound = _launch_bound(keys, panel.series_ids, panel.typical, settings.min_log_effect)
    taken_out = _against_host_speed(
        fit.correction, panel.per_value(launch_bound), panel.series, panel.run, cls, group, panel.x, run_gpu
    )
    return fit, panel.x - taken_out


def _noise_priors(
    panel: _Panel, keys: list[GpuSeriesKey], corrected: np.ndarray, settings: DetectionSettings
) -> tuple[list[tuple[float, float]], np.ndarray, np.ndarray]:
    """(per series: the pooled noise and its weight, each series' own noise, the values that told it).

    A series' own noise: the MAD of its successive differences. Pooled per (GPU, class): the median of
    its series' noise (a class without series enough borrows the GPU's, else everything's), with a
    weight (prior degrees of freedom) estimated from how much the series' noise differs beyond what
    estimating it from few runs explains (`changepoints.prior_df`)."""
    bounds, lengths = panel.bounds, panel.lengths
    own = [within_noise(corrected[a:b], [], None, 0.0) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    own_noise = np.array([noise for noise, _ in own])
    own_used = np.array([used for _, used in own])
    pool_key = [(keys[s].gpu, int(c)) for s, c in zip(panel.series_ids, panel.series_class, strict=True)]
    members: dict[tuple, list[int]] = defaultdict(list)
    for i, k in enumerate(pool_key):
        if lengths[i] >= settings.min_runs and own_noise[i] > 0:
            members[k].append(i)
            members[(k[0], None)].append(i)
            members[(None, None)].append(i)
    # how much the noise of series differs is estimated over the GPU's series (a class alone is often a
    # handful of series), the level per class
    weight = {k[0]: prior_df(own_noise[v], MAD_EFFICIENCY * own_used[v]) for k, v in members.items() if k[1] is None}
    pools = {k: (float(np.median(own_noise[v])), weight[k[0]]) for k, v in members.items() if v}
    priors = [pools.get(k) or pools.get((k[0], None)) or pools.get((None, None)) or (0.0, 0.0) for k in pool_key]
    return priors, own_noise, own_used


def _judge_series(
    values: np.ndarray,
    extra: np.ndarray,
    sigma: float,
    prior: float,
    weight: float,
    settings: DetectionSettings,
    settled: np.ndarray,
) -> tuple[list[Split], Split | None, float]:
    """(changes, the pending step at the newest run or None, the noise they were judged with) of one
    series' corrected values. A pure function of its arguments: `judgements.JudgementStore` reuses its
    result where they are unchanged (giving it another input, or changing what it returns, means bumping
    judgements.JUDGEMENT_VERSION)."""
    refined: list[float] = []

    def refine(cuts: list[int]) -> float:
        own, used = within_noise(values, cuts, None, 0.0)  # the noise inside the proposed segments
        refined.append(shrunk_noise(own, MAD_EFFICIENCY * used, prior, weight) if used else sigma)
        return refined[-1]

    splits = find_changes(values, sigma, settings, extra, refine, settled)
    sigma = refined[-1] if refined else sigma
    splits, pending_step = newest_step(values, sigma, settings, splits, extra)
    return splits, pending_step, sigma


def _trend(
    obs: _Observations,
    panel: _Panel,
    i: int,
    sources: list[SourceRun],
    corrected: np.ndarray,
    sigma: float,
    splits: list[Split],
) -> Trend:
    a, b = panel.bounds[i], panel.bounds[i + 1]
    s = panel.series_ids[i]
    idx = panel.first[a:b]
    runs = panel.run[a:b]
    return Trend(
        key=obs.keys[s],
        case_key=obs.case_keys[s],
        observed_at=[obs.observed[j] for j in idx],
        versions=[obs.version[j] for j in idx],
        sources=[sources[r].label for r in runs],
        environments=[obs.environment[j] for j in idx],
        values=np.exp(panel.x[a:b]),
        corrected=np.exp(corrected[a:b]),
        noise=sigma,
        splits=splits,
        run_index=runs,
        cls=int(panel.series_class[i]),
        group=int(panel.series_group[i]),
        code_refs=[sources[r].code_ref for r in runs],
    )


def _with_causes(found: list[tuple[Trend, Split]], trends: list[Trend]) -> list[Change]:
    """Changes with their cause, sorted by cause, then magnitude, then p-value."""
    changes: list[Change] = []
    undecided: list[tuple[Trend, Split]] = []  # without a version or environment difference
    for trend, split in found:
        if trend.environments[split.index - 1] != trend.environments[split.index]:
            changes.append(Change(trend, split, "environment"))
        else:
            undecided.append((trend, split))
    changes += _host_or_unknown(undecided, trends)
    changes.sort(key=lambda c: (CAUSES.index(c.cause), -abs(c.split.log_ratio), c.split.p_value))
    return changes


def _launch_bound(
    keys: list[GpuSeriesKey], series_ids: np.ndarray, typical: np.ndarray, tolerance: float
) -> np.ndarray:
    """Per judged series: is it launch-bound? A kernel whose time does not grow with the work is timing
    the host (launches, Python dispatch), not the GPU: within one kernel, pass, provider, protocol and
    GPU, the series whose typical time is within `tolerance` (the smallest change reported)
    of the fastest one, when at least two workloads sit there (flat in the size axis, e.g. rms_norm
    backward at 0.14 ms from hidden 1024 to 16384). Latency only."""
    flat = np.zeros(len(series_ids), dtype=bool)
    members: dict[tuple, list[int]] = defaultdict(list)
    for i, s in enumerate(series_ids):
        k = keys[s]
        if k.metric != PEAK_MEMORY:
            members[(k.kernel, k.mode, k.provider, k.protocol_digest, k.gpu)].append(i)
    for indices in members.values():
        floor = min(typical[i] for i in indices)
        plateau = [i for i in indices if typical[i] - floor <= tolerance]
        if len(plateau) >= 2:
            flat[plateau] = True
    return flat


def _against_host_speed(
    correction: np.ndarray,
    launch_bound: np.ndarray,
    series: np.ndarray,
    run: np.ndarray,
    cls: np.ndarray,
    group: np.ndarray,
    x: np.ndarray,
    run_gpu: np.ndarray,
) -> np.ndarray:
    """The correction of each value: launch-bound series are judged against the run's host speed (the
    common level of the launch-bound kernel groups of that run and latency class,
    `host_effects.common_levels`, lasting moves included: a slower CPU for weeks is still the host; per
    class because a launch costs a shorter kernel a larger share of its time), where at least MIN_GROUPS
    such groups were measured; every other value keeps its run effect (`correction`).

    Only a host speed clearly away from the series' usual one (`host_effects.host_move_thresholds`) is
    taken out, as for the run effects: where the host did not move, the common level is noise, and a
    series' slope on noise is fitted to its own changes (a step at the newest run on six runs leaned a
    slope of 11 on a speed that moved 1 %, and took half the step out)."""
    if not launch_bound.any():
        return correction
    chosen = np.flatnonzero(launch_bound)
    speed = host_effects.common_levels(series[chosen], run[chosen], cls[chosen], group[chosen], x[chosen], run_gpu)
    if speed.empty:
        return correction
    at = pd.MultiIndex.from_arrays([run[chosen], cls[chosen]])
    at_run = speed["level"].reindex(at).to_numpy()
    known = np.isfinite(at_run)
    if not known.any():
        return correction
    threshold = host_effects.host_move_thresholds(speed, run_gpu).reindex(at).to_numpy()[known]
    chosen, at_run = chosen[known], at_run[known]
    # Each series follows the host's speed as far as it moves with it, a 20 us kernel more than a 0.2 ms
    # one: its slope on the speed, fitted to the run-to-run moves of both (successive differences), so a
    # step of the series' own where the host did not move is no evidence of a slope (fitted to levels,
    # a step that met a 1.4 % host move at one run was taken for a slope of 14 and fitted away). One move
    # cannot tell a slope from a step of the series' own that met it: a series' own slope needs two host
    # moves, else it takes 1 (the typical slope, by construction); the move into the newest run counts
    # once a later run exists.
    chosen_series = series[chosen]
    by_series = pd.Series(at_run).groupby(chosen_series)
    speed_centred = at_run - by_series.transform("median").to_numpy()
    speed_centred = np.where(np.abs(speed_centred) >= threshold, speed_centred, 0.0)
    same = np.r_[False, chosen_series[1:] == chosen_series[:-1]]
    judged = same & np.r_[chosen_series[1:] == chosen_series[:-1], False]  # not a series' newest run
    speed_moves = np.where(judged, np.diff(speed_centred, prepend=np.nan), np.nan)
    own_moves = np.where(judged, np.diff(x[chosen], prepend=np.nan), np.nan)
    slope = host_effects.shrunk_slopes(
        chosen_series,
        host_effects.gpu_class(run_gpu, run[chosen], cls[chosen]),
        x[chosen],
        own_moves,
        speed_moves,
        min_points=MIN_HOST_MOVES,
    )
    out = correction.copy()
    out[chosen] = slope * speed_centred
    return out


def _merge_sparse_classes(classes: np.ndarray, groups: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """Latency classes with kernel groups, but fewer than host_effects.MIN_GROUPS of them on a GPU, merged
    into the neighbouring class with more groups, so every series gets a run effect estimated over enough
    kernels (a series whose class is too small would otherwise be judged with its run's host effect in)."""
    classes = classes.copy()
    for gpu in np.unique(gpus):
        on_gpu = gpus == gpu
        while True:
            counts = {
                int(c): len(set(groups[on_gpu & (classes == c)]))
                for c in np.unique(classes[on_gpu])
                if c != host_effects.MEMORY_CLASS
            }
            sparse = [c for c, n in counts.items() if n < host_effects.MIN_GROUPS]
            if not sparse or len(counts) < 2:
                break
            c = sparse[0]
            neighbours = [d for d in counts if d != c]
            target = min(neighbours, key=lambda d: (abs(d - c), -counts[d]))
            classes[on_gpu & (classes == c)] = target
    return classes


def _host_or_unknown(pending: list[tuple[Trend, Split]], trends: list[Trend]) -> list[Change]:
    """A change without a version or environment difference is `host` when at least HOST_CAUSE_SHARE
    of the kernel groups judged across that run, in that latency class, changed the same way there."""
    moved: dict[tuple[int, int, str], set[int]] = defaultdict(set)
    for trend, split in pending:
        direction = SLOWDOWN if split.log_ratio > 0 else SPEEDUP
        moved[(int(trend.run_index[split.index]), trend.cls, direction)].add(trend.group)
    present: dict[tuple[int, int], set[int]] = defaultdict(set)  # groups judged with a run before and at each run
    for trend in trends:
        for r in trend.run_index[1:]:
            present[(int(r), trend.cls)].add(trend.group)
    out = []
    for trend, split in pending:
        run = int(trend.run_index[split.index])
        groups = len(moved[(run, trend.cls, SLOWDOWN if split.log_ratio > 0 else SPEEDUP)])
        host = groups >= host_effects.MIN_GROUPS and groups >= HOST_CAUSE_SHARE * len(present[(run, trend.cls)])
        out.append(Change(trend, split, "host" if host else "unknown"))
    return out


def _host_effect_entries(
    fit: host_effects.HostFit, sources: list[SourceRun], settings: DetectionSettings, scripts: list[str]
):
    """Significant effects (|z| >= the settings' level and at least min_effect), adjacent latency classes
    of one run with agreeing factors merged into one entry."""
    every = [
        (sources[int(run)], int(cls), float(row["log_factor"]), float(row["se"]), int(row["groups"]))
        for (run, cls), row in fit.effects.iterrows()
    ]
    per_run = _significant_class_effects(fit, settings)
    entries = []
    tolerance = settings.min_log_effect
    for run, items in sorted(per_run.items()):
        items.sort()
        merged: list[list] = []
        for cls, lf, se, groups in items:
            last = merged[-1] if merged else None
            if (
                last is not None
                and cls == last[1] + 1
                and cls != host_effects.MEMORY_CLASS
                and abs(lf - last[2]) <= tolerance
                and np.sign(lf) == np.sign(last[2])
            ):
                weight = last[4] + groups
                last[2] = (last[2] * last[4] + lf * groups) / weight
                last[3] = math.sqrt(last[3] ** 2 * last[4] ** 2 + se**2 * groups**2) / weight
                last[1], last[4] = cls, weight
            else:
                merged.append([cls, cls, lf, se, groups])
        src = sources[run]
        for first, last, lf, se, groups in merged:
            entries.append(
                HostEffect(
                    source=src.label,
                    gpu=src.gpu,
                    observed_at=src.observed_at,
                    latency_class=host_effects.class_range_label(first, last),
                    factor=math.exp(lf),
                    ci95=(math.exp(lf - 1.96 * se), math.exp(lf + 1.96 * se)),
                    kernel_groups=groups,
                )
            )
    for (run, script), row in fit.scripts.iterrows():
        src, lf, se = sources[int(run)], float(row["log_factor"]), float(row["se"])
        entries.append(
            HostEffect(
                source=src.label,
                gpu=src.gpu,
                observed_at=src.observed_at,
                latency_class="every latency",
                factor=math.exp(lf),
                ci95=(math.exp(lf - 1.96 * se), math.exp(lf + 1.96 * se)),
                kernel_groups=1,
                kernel=scripts[int(script)],
                series=int(row["series"]),
            )
        )
    entries.sort(key=lambda h: (h.gpu, h.observed_at, h.kernel or "", h.latency_class))
    return entries, every


def _significant_class_effects(
    fit: host_effects.HostFit, settings: DetectionSettings
) -> dict[int, list[tuple[int, float, float, int]]]:
    """Per run, its (class, log factor, se, kernel groups) effects that are reported: at least MIN_GROUPS
    groups, the minimum effect and the settings' significance."""
    z_needed = _z_for(settings.alpha)
    per_run: dict[int, list[tuple[int, float, float, int]]] = defaultdict(list)
    for (run, cls), row in fit.effects.iterrows():
        lf, se, groups = float(row["log_factor"]), float(row["se"]), int(row["groups"])
        if (
            groups >= host_effects.MIN_GROUPS
            and abs(lf) >= settings.min_log_effect
            and abs(lf) >= z_needed * max(se, 1e-12)
        ):
            per_run[int(run)].append((int(cls), lf, se, groups))
    return per_run


def _z_for(alpha: float) -> float:
    """Two-sided normal quantile for alpha (bisection on erfc; no scipy needed for one number)."""
    low, high = 0.0, 40.0
    for _ in range(100):
        mid = (low + high) / 2
        if math.erfc(mid / math.sqrt(2)) > alpha:
            low = mid
        else:
            high = mid
    return high
