"""What regression detection found: each judged series (`Trend`), each change with its cause and evidence
(`Change`, the causes, `CauseEvidence`), the host effects taken out and the host changes folded, and the whole
result (`RegressionReport`). Made by `detect.py`; read by the page, the check, the CLI and attribution; written
as regressions.json by `document.py`. The model is explained once, in docs/concepts/detection.md.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .changepoints import Split
from .judgements import JudgementReuse
from .run_facts import LATENCY as LATENCY  # re-exported: records/metrics.py's metric names, through run_facts
from .run_facts import PEAK_MEMORY as PEAK_MEMORY
from .settings import DetectionSettings

SLOWDOWN = "slowdown"
SPEEDUP = "speedup"
LIGER_KERNEL = "liger_kernel"
BENCHMARK_SCRIPT = "benchmark_script"
ENVIRONMENT = "environment"
HOST = "host"
UNKNOWN = "unknown"
CAUSES = (LIGER_KERNEL, BENCHMARK_SCRIPT, ENVIRONMENT, HOST, UNKNOWN)
COMMIT_CAUSES = (LIGER_KERNEL, BENCHMARK_SCRIPT)


class RegressionInputError(ValueError):
    """Input the detector cannot use (names the input and what to do)."""


# ------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CommitSuspect:
    sha: str
    date: str
    subject: str
    url: str
    files: tuple[str, ...]  # the files of the commit that touch what the cause names

    def to_dict(self) -> dict[str, Any]:
        return {"sha": self.sha, "date": self.date, "subject": self.subject, "url": self.url, "files": list(self.files)}


@dataclass(frozen=True)
class CauseEvidence:
    """One cause that may apply to a change, with what names it."""

    cause: str
    commits: tuple[CommitSuspect, ...] = ()
    toolchain: tuple[dict[str, Any], ...] = ()  # {"package", "before", "after", "released"} or {"measured": ...}
    diffstat: str = ""  # `git diff --stat` of the files the commits touch (script changes)
    note: str = ""

    @property
    def suspect_key(self) -> tuple:
        """What a group of changes shares: the commits, or the toolchain difference."""
        if self.commits:
            return tuple(c.sha for c in self.commits)
        return tuple(sorted(str(sorted(t.items())) for t in self.toolchain))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "cause": self.cause,
            "commits": [c.to_dict() for c in self.commits],
            "toolchain": [dict(t) for t in self.toolchain],
        }
        if self.diffstat:
            out["diffstat"] = self.diffstat
        if self.note:
            out["note"] = self.note
        return out


@dataclass(frozen=True)
class ClassFactor:
    latency_class: str
    log_factor: float
    half_width: float  # of the 95 % interval, log scale
    series: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "latencyClass": self.latency_class,
            "factor": round(math.exp(self.log_factor), 4),
            "ci95": [
                round(math.exp(self.log_factor - self.half_width), 4),
                round(math.exp(self.log_factor + self.half_width), 4),
            ],
            "series": self.series,
        }


@dataclass
class HostChange:
    """One lasting move of a run's host: where, by how much per latency class, which series."""

    gpu: str
    before: dict[str, Any]  # the last run before (observedAt, ligerVersion, source, environmentDigest, codeRef)
    after: dict[str, Any]  # the first run after
    direction: str
    evidence: CauseEvidence  # ``host``: its note, and the commit that changed the GPU request
    factors: list[ClassFactor] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)  # the steps it explains (not changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "before": self.before,
            "after": self.after,
            "direction": self.direction,
            "factors": [f.to_dict() for f in self.factors],
            "commits": [c.to_dict() for c in self.evidence.commits],
            "note": self.evidence.note,
            "seriesMoved": len(self.changes),
            "series": [
                {k: d[k] for k in ("kernel", "mode", "provider", "caseKey", "metric", "direction", "magnitude")}
                for d in (c.to_dict() for c in self.changes)
            ],
        }


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
    causes: list[CauseEvidence] = field(default_factory=list)

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
    host_changes: list[HostChange] = field(default_factory=list)
    # verdicts of bisections of its groups, by group id (the bisection JSON, docs/concepts/bisection.md): shown with
    # their group (page, JSON `groups[].bisection`); what was measured afterwards, never part of detection
    bisections: dict[str, dict[str, Any]] = field(default_factory=dict)
    # series judged afresh and reused from the judgement store (how the result was computed, not part of it:
    # not in regressions.json (document.py), which is the same with or without a store)
    judgements: JudgementReuse = field(default_factory=JudgementReuse)
    # a digest of everything the result was made from (`liger.attribution.detect_and_attribute`'s inputs: runs,
    # records, settings, acknowledgements, the clone's refs, the code), None where not known: two results with
    # one are the same result (the site keeps what it derived of the previous one)
    made_from: str | None = None

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
