"""Regression detection between consecutive Liger versions of each comparable series.

Rule (issue 5): compare each pair of consecutive versions a series has. The old
version's p20-p80 band is the noise band. With threshold t (default 0.10):

- slowdown (regression): new median > old p80 x (1 + t)
- speed-up (improvement): new median < old p20 x (1 - t)
- otherwise: no significant change

A series measured at a single version, or a pair whose old point has no p20/p80
band, is *insufficient data* -- never counted as "no regression".
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .series import RecordIndex, Series, SeriesKey, SeriesSet, build_series

SLOWDOWN = "slowdown"
SPEEDUP = "speedup"
NO_CHANGE = "no_significant_change"
INSUFFICIENT = "insufficient_data"


@dataclass(frozen=True)
class Comparison:
    """One pair of consecutive versions of one series, and the verdict."""

    verdict: str
    kernel: str
    mode: str
    provider: str
    gpu: str
    case_key: str
    old_version: str
    new_version: str
    old_median_ns: int
    new_median_ns: int
    old_p20_ns: int | None
    old_p80_ns: int | None
    change_pct: float  # new median vs old median, + is slower
    beyond_band_pct: float | None  # how far outside the old band, relative to the band edge crossed; None inside
    old_run: str
    new_run: str
    series_key: SeriesKey
    reason: str = ""  # for insufficient data

    @property
    def magnitude_pct(self) -> float:
        return self.change_pct

    def to_dict(self) -> dict[str, Any]:
        """JSON-able, camelCase like the project's other reports."""
        return {
            "verdict": self.verdict, "kernel": self.kernel, "mode": self.mode, "provider": self.provider,
            "gpu": self.gpu, "caseKey": self.case_key, "oldVersion": self.old_version,
            "newVersion": self.new_version, "oldMedianNs": self.old_median_ns, "newMedianNs": self.new_median_ns,
            "oldP20Ns": self.old_p20_ns, "oldP80Ns": self.old_p80_ns, "magnitudePct": round(self.change_pct, 3),
            "beyondBandPct": None if self.beyond_band_pct is None else round(self.beyond_band_pct, 3),
            "oldRun": self.old_run, "newRun": self.new_run, "reason": self.reason,
        }


@dataclass(frozen=True)
class InsufficientSeries:
    """A series that cannot be compared at all."""

    kernel: str
    mode: str
    provider: str
    gpu: str
    case_key: str
    versions: tuple[str, ...]
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"kernel": self.kernel, "mode": self.mode, "provider": self.provider, "gpu": self.gpu,
                "caseKey": self.case_key, "versions": list(self.versions), "reason": self.reason}


@dataclass
class RegressionResult:
    threshold: float
    series_count: int
    comparisons: list[Comparison] = field(default_factory=list)
    insufficient_series: list[InsufficientSeries] = field(default_factory=list)

    def _with(self, verdict: str) -> list[Comparison]:
        return [c for c in self.comparisons if c.verdict == verdict]

    @property
    def regressions(self) -> list[Comparison]:
        """Slowdowns, largest first."""
        return sorted(self._with(SLOWDOWN), key=lambda c: -c.change_pct)

    @property
    def improvements(self) -> list[Comparison]:
        return sorted(self._with(SPEEDUP), key=lambda c: c.change_pct)

    @property
    def unchanged(self) -> list[Comparison]:
        return self._with(NO_CHANGE)

    @property
    def insufficient_pairs(self) -> list[Comparison]:
        return self._with(INSUFFICIENT)

    @property
    def compared(self) -> int:
        """Series with at least one version pair that could be judged."""
        return len({c.series_key for c in self.comparisons if c.verdict != INSUFFICIENT})

    @property
    def insufficient(self) -> list[InsufficientSeries | Comparison]:
        """Everything reported as insufficient data: whole series, then version pairs without a band."""
        return [*self.insufficient_series, *self.insufficient_pairs]

    def to_markdown(self, limit: int | None = None) -> str:
        return self.markdown(limit)

    @property
    def has_regressions(self) -> bool:
        return any(c.verdict == SLOWDOWN for c in self.comparisons)

    @property
    def data_sufficient(self) -> bool:
        """True when at least one pair of versions could actually be judged."""
        return any(c.verdict != INSUFFICIENT for c in self.comparisons)

    def counts(self) -> dict[str, int]:
        verdicts = Counter(c.verdict for c in self.comparisons)
        return {
            "series": self.series_count,
            "comparisons": len(self.comparisons),
            "regressions": verdicts[SLOWDOWN],
            "improvements": verdicts[SPEEDUP],
            "noSignificantChange": verdicts[NO_CHANGE],
            "insufficientPairs": verdicts[INSUFFICIENT],
            "insufficientSeries": len(self.insufficient_series),
        }

    def summary(self) -> str:
        c = self.counts()
        judged = c["comparisons"] - c["insufficientPairs"]
        reasons = Counter(s.reason for s in self.insufficient_series)
        reason_text = "; ".join(f"{n} {r}" for r, n in sorted(reasons.items()))
        text = (f"{c['regressions']} regressions, {c['improvements']} improvements, "
                f"{c['noSignificantChange']} without significant change, out of {judged} judged version pairs "
                f"(threshold {self.threshold:.0%} beyond the old p20-p80 band)")
        if c["insufficientPairs"]:
            text += f"; {c['insufficientPairs']} version pairs with insufficient data (old point has no band)"
        if c["insufficientSeries"]:
            text += f"; {c['insufficientSeries']} of {c['series']} series with insufficient data ({reason_text})"
        if judged == 0:
            text += "; NOTHING could be judged, so this is not evidence of 'no regression'"
        return text

    def markdown(self, limit: int | None = None) -> str:
        """A markdown table of the regressions (largest first)."""
        rows = self.regressions[:limit] if limit else self.regressions
        if not rows:
            return f"_No regressions found. {self.summary()}._"
        lines = [
            "| kernel | mode | provider | GPU | workload | versions | old median | new median | old p20-p80 | change |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for c in rows:
            lines.append(
                f"| {c.kernel} | {c.mode} | {c.provider} | {c.gpu} | {c.case_key} | "
                f"{c.old_version} → {c.new_version} | {format_ns(c.old_median_ns)} | {format_ns(c.new_median_ns)} | "
                f"{format_ns(c.old_p20_ns)}–{format_ns(c.old_p80_ns)} | +{c.change_pct:.1f}% |"
            )
        if limit and len(self.regressions) > limit:
            lines.append(f"\n… and {len(self.regressions) - limit} more.")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "threshold": self.threshold,
            "counts": self.counts(),
            "regressions": [c.to_dict() for c in self.regressions],
            "improvements": [c.to_dict() for c in self.improvements],
            "insufficientPairs": [c.to_dict() for c in self.insufficient_pairs],
            "insufficientSeries": [s.to_dict() for s in self.insufficient_series],
        }


def format_ns(ns: float | None) -> str:
    if ns is None:
        return "n/a"
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns:.0f} ns"


def check_threshold(threshold: float) -> float:
    if not isinstance(threshold, (int, float)) or not math.isfinite(threshold) or not 0 <= threshold < 1:
        raise ValueError(f"regression threshold must be a fraction in [0, 1), e.g. 0.10 for 10%; got {threshold!r}")
    return float(threshold)


def compare_series(series: Series, threshold: float) -> tuple[list[Comparison], InsufficientSeries | None]:
    points = series.points
    if len(points) < 2:
        if not points:
            reason = "no run with a valid liger_version label"
        else:
            reason = "measured at a single Liger version"
        return [], InsufficientSeries(series.kernel, series.mode, series.provider, series.gpu, series.case_key,
                                      tuple(series.versions), reason)
    comparisons = []
    for old, new in zip(points, points[1:], strict=False):
        change = (new.median_ns - old.median_ns) / old.median_ns * 100
        beyond: float | None = None
        reason = ""
        if not old.has_band:
            verdict, reason = INSUFFICIENT, f"Liger {old.version} run has no p20/p80 band"
        elif new.median_ns > old.p80_ns * (1 + threshold):
            verdict, beyond = SLOWDOWN, (new.median_ns - old.p80_ns) / old.p80_ns * 100
        elif new.median_ns < old.p20_ns * (1 - threshold):
            verdict, beyond = SPEEDUP, (new.median_ns - old.p20_ns) / old.p20_ns * 100
        else:
            verdict = NO_CHANGE
        comparisons.append(Comparison(
            verdict=verdict, kernel=series.kernel, mode=series.mode, provider=series.provider, gpu=series.gpu,
            case_key=series.case_key, old_version=old.version, new_version=new.version,
            old_median_ns=old.median_ns, new_median_ns=new.median_ns, old_p20_ns=old.p20_ns,
            old_p80_ns=old.p80_ns, change_pct=change, beyond_band_pct=beyond,
            old_run=old.run_name, new_run=new.run_name, series_key=series.key, reason=reason,
        ))
    return comparisons, None


def detect_regressions(manifests: Iterable[dict[str, Any]] | SeriesSet | RecordIndex,
                       threshold: float = 0.10) -> RegressionResult:
    """Compare consecutive Liger versions of every comparable series (rule in the module docstring).

    `manifests` are kernelindex.dev manifests of any kinds (non-runs resolve names);
    an already built SeriesSet is accepted too.
    """
    threshold = check_threshold(threshold)
    series_set = manifests if isinstance(manifests, SeriesSet) else build_series(manifests)
    result = RegressionResult(threshold=threshold, series_count=len(series_set))
    for series in series_set:
        comparisons, insufficient = compare_series(series, threshold)
        result.comparisons.extend(comparisons)
        if insufficient is not None:
            result.insufficient_series.append(insufficient)
    return result
