"""Change points in one series of log-scale measurements, with a significance level and a minimum effect.

Plain numerics (numpy), no record knowledge: `find_changes(x, sigma, settings, extra, refine)` takes one
series' host-corrected log values and its noise and returns the accepted `Split`s; `newest_step` the
pending step at the newest value; `shrunk_noise` / `prior_df` the noise model. The model (noise,
outlier guard, split, merge, verdict figures) is explained once, in docs/concepts/detection.md
("Change points", "Pending"); why it is hand-written rather than Apache Otava:
docs/decisions/0001-hand-written-detector.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .settings import DetectionSettings

PRIOR_DF = 10.0  # weight of the model noise when the merge step re-estimates it from a segment's scatter
NOISE_PRIOR_DF = 8.0  # weight of the pooled noise when too few series tell how much their noise differs
MIN_PRIOR_DF, MAX_PRIOR_DF = 1.0, 50.0  # bounds of the estimated weight of the pooled noise
MAD_EFFICIENCY = 0.37  # a MAD-based scale uses n values about as well as a variance uses 0.37 n
CLIP = 3.0  # outlier guard, in sigma around the running median
MEDIAN_WINDOW = 5
SIGMA_FLOOR = 1e-3  # 0.1 %: memory series repeat exactly; a zero noise would make any change infinite
_MAD = 1.4826  # MAD -> standard deviation of a normal distribution


@dataclass(frozen=True)
class Split:
    """An accepted change point: values[index:] differ from values[:index] (nearest neighbouring changes
    bound the two segments)."""

    index: int  # first run after the change
    start: int  # first run of the segment before
    stop: int  # end (exclusive) of the segment after
    log_ratio: float  # weighted mean(after) - weighted mean(before) of the host-corrected log values
    half_width: float  # 95 % half-width of log_ratio
    p_value: float  # Bonferroni-adjusted


def within_noise(
    x: np.ndarray, cuts: list[int], extra: np.ndarray | None = None, limit: float = math.inf
) -> tuple[float, int]:
    """(noise, differences used): the MAD of the successive differences inside the segments between
    `cuts` (none: the whole series) as the sd of one value, optionally leaving out the differences that
    touch a value whose `extra` uncertainty exceeds `limit`. Robust on purpose: cuts sit where the largest
    jumps are, and a mean of squares without them would be biased low."""
    bounds = [0, *cuts, len(x)]
    e = extra if extra is not None else np.zeros(len(x))
    keep = [
        np.diff(x[a:b])[(e[a : b - 1] <= limit) & (e[a + 1 : b] <= limit)]
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]
    diffs = np.concatenate(keep) if keep else np.empty(0)
    if len(diffs) == 0:
        return 0.0, 0
    return float(_MAD * np.median(np.abs(diffs)) / math.sqrt(2.0)), len(diffs)


def prior_df(noise: np.ndarray, df: np.ndarray) -> float:
    """How many degrees of freedom the pooled noise of a group of series is worth (empirical Bayes, after
    limma's squeezeVar): the spread of the series' log noise beyond what estimating each from `df`
    degrees of freedom explains (var log s ~ 1 / (2 df)) is the spread of their true noise; a prior with d0
    degrees of freedom spreads log sigma by about 1 / (2 d0). Homogeneous series: the pool counts for
    much (up to MAX_PRIOR_DF); series whose noise really differs: each mostly keeps its own."""
    usable = (noise > 0) & (df > 0)
    if usable.sum() < 3:
        return NOISE_PRIOR_DF
    logs = np.log(noise[usable])
    observed = (_MAD * np.median(np.abs(logs - np.median(logs)))) ** 2
    expected = float(np.mean(1.0 / (2.0 * df[usable])))
    excess = observed - expected
    if excess <= 0:
        return MAX_PRIOR_DF
    return float(min(MAX_PRIOR_DF, max(MIN_PRIOR_DF, 1.0 / (2.0 * excess))))


def shrunk_noise(own: float, df: float, pooled: float, prior: float = NOISE_PRIOR_DF) -> float:
    """The series' noise (an estimate worth `df` degrees of freedom) shrunk towards the pooled noise of
    comparable series (worth `prior` degrees of freedom, see prior_df)."""
    df = max(df, 0.0)
    value = math.sqrt((prior * pooled**2 + df * own**2) / (prior + df)) if prior + df > 0 else pooled
    return max(value, SIGMA_FLOOR)


def guarded(x: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Values clipped to their running median +- CLIP x their own scale, where the whole window of
    MEDIAN_WINDOW values exists. Values nearer the ends are left as they are: a shortened window is not
    edge-preserving (its median of four is a mean of two), and a run that returns to the old level after a
    two-run excursion must not be pulled towards the excursion; the merge step's scatter-aware test is
    what weighs them."""
    n = len(x)
    if n < MEDIAN_WINDOW:
        return x
    half = MEDIAN_WINDOW // 2
    centre = np.median(np.lib.stride_tricks.sliding_window_view(x, MEDIAN_WINDOW), axis=1)
    out = x.copy()
    inner = slice(half, n - half)
    out[inner] = np.clip(x[inner], centre - CLIP * scale[inner], centre + CLIP * scale[inner])
    return out


def t_sf2(t: float, df: float) -> float:
    """Two-sided tail probability of Student's t: I_{df/(df+t^2)}(df/2, 1/2).

    Hand-written (a continued fraction for the incomplete beta function, as in Numerical Recipes'
    betacf) because the project does not otherwise need scipy for one distribution function."""
    if not math.isfinite(t):
        return 0.0
    x = df / (df + t * t)
    a, b = df / 2.0, 0.5
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return min(1.0, front * _betacf(a, b, x) / a)
    return min(1.0, 1.0 - front * _betacf(b, a, 1.0 - x) / b)


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-12:
            break
    return h


def _split_statistics(
    y: np.ndarray, w: np.ndarray, k: np.ndarray, scatter_df: float | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For splits before positions k of y (weights w = 1 / variance): (shift, its standard error, degrees
    of freedom). With `scatter_df` (the merge step) the scale of the model variance is re-estimated from
    the scatter around the two segment means, with `scatter_df` degrees of freedom on the model itself, so
    a segment that disagrees with itself (an excursion that returns) weakens its own evidence, as in a
    t-test; without it (the split step) the model variance is taken as known."""
    n = len(y)
    wy, ws = np.cumsum(w * y), np.cumsum(w)
    w_left, w_right = ws[k - 1], ws[-1] - ws[k - 1]
    s_left, s_right = wy[k - 1], wy[-1] - wy[k - 1]
    mean_left, mean_right = s_left / w_left, s_right / w_right
    if scatter_df is None:
        return mean_right - mean_left, np.sqrt(1.0 / w_left + 1.0 / w_right), np.full(len(k), np.inf)
    wyy = np.cumsum(w * y * y)
    scatter = (wyy[k - 1] - s_left * mean_left) + (wyy[-1] - wyy[k - 1] - s_right * mean_right)
    df = scatter_df + n - 2
    scale = (scatter_df + np.maximum(scatter, 0.0)) / df
    return mean_right - mean_left, np.sqrt(scale * (1.0 / w_left + 1.0 / w_right)), np.full(len(k), float(df))


def _p_value(z: float, df: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2.0)) if math.isinf(df) else t_sf2(z, df)


def _best_split(y: np.ndarray, w: np.ndarray, start: int, stop: int, m: int) -> tuple[int, float, float] | None:
    """(index, Bonferroni-adjusted p, shift) of the strongest split of y[start:stop] with the model
    variance, or None when the segment is too short."""
    n = stop - start
    if n < 2 * m:
        return None
    k = np.arange(m, n - m + 1)  # runs before the split
    shift, se, _ = _split_statistics(y[start:stop], w[start:stop], k, None)
    z = np.abs(shift) / se
    best = int(np.argmax(z))
    return start + int(k[best]), min(1.0, len(k) * _p_value(float(z[best]), math.inf)), float(shift[best])


def _judge(y: np.ndarray, w: np.ndarray, a: int, index: int, b: int, settings: DetectionSettings) -> Split:
    """The change at `index` between its neighbouring cuts a and b, with the scatter-aware test."""
    shift, se, df = _split_statistics(y[a:b], w[a:b], np.array([index - a]), PRIOR_DF)
    log_ratio, se_, dof = float(shift[0]), float(se[0]), float(df[0])
    p = min(1.0, _p_value(log_ratio / se_, dof) * max(1, b - a - 2 * settings.min_segment + 1))
    return Split(index=index, start=a, stop=b, log_ratio=log_ratio, half_width=t_quantile(0.05, dof) * se_, p_value=p)


def _passes(split: Split, settings: DetectionSettings) -> bool:
    return split.p_value < settings.alpha and abs(split.log_ratio) >= settings.min_log_effect


def _levels(x: np.ndarray, w: np.ndarray, split: Split) -> tuple[float, float]:
    """(midpoint of the two segments' weighted means, the change's direction)."""
    before = np.average(x[split.start : split.index], weights=w[split.start : split.index])
    after = np.average(x[split.index : split.stop], weights=w[split.index : split.stop])
    return float((before + after) / 2.0), float(np.sign(after - before))


def _held_where_settled(x: np.ndarray, w: np.ndarray, split: Split, settled: np.ndarray | None) -> bool:
    """Whether runs whose host is not in doubt show both levels: on each side, the median of those runs
    lies on that side of the midpoint (and there is one). A run with a host effect taken out (some class
    or script of it moved) is a session whose other kernels may have moved below what its effects
    caught: the two runs of one commit on a slow host, say, that hold a level the next run does not. A
    change held by such runs alone is no change (issue 26: a slow host run stays a host effect)."""
    if settled is None:
        return True
    middle, direction = _levels(x, w, split)
    for side, sign in ((slice(split.start, split.index), -1.0), (slice(split.index, split.stop), 1.0)):
        clean = x[side][settled[side]]
        if len(clean) == 0 or not sign * direction * (np.median(clean) - middle) > 0:
            return False
    return True


def _at_its_boundary(x: np.ndarray, w: np.ndarray, split: Split) -> bool:
    """Whether the values move between the change's two boundary runs: the last run before lies on the
    before side of the midpoint of the two segments' means, the first run after on the after side (the
    values handed to detection, not `guarded`: that pulls a run standing alone towards its neighbours,
    which is what this asks about). A
    change is reported between those two runs (its attribution reads their commits), so a cut between two
    runs that agree is no change there: it is what a series stepping at two consecutive runs leaves when
    a segment of one run is shorter than ``min_segment`` (the two real steps each get a cut of their own
    or none, never one halfway)."""
    middle, direction = _levels(x, w, split)
    return bool(direction * (x[split.index - 1] - middle) < 0 < direction * (x[split.index] - middle))


def find_changes(
    x: np.ndarray,
    sigma: float,
    settings: DetectionSettings,
    extra: np.ndarray | None = None,
    refine: Callable[[list[int]], float] | None = None,
    settled: np.ndarray | None = None,
) -> list[Split]:
    """Accepted change points of `x` (log values in time order), in time order. `sigma` is the series'
    noise; `extra` an additional standard deviation per value (the uncertainty of the host effect taken
    out of that run), so values of a run whose host moved every kernel differently weigh less.
    `refine(cuts)` gives the noise again once the split step has proposed cuts (see `within_noise`).
    `settled` marks the values of runs whose host is not in doubt (no host effect taken out of that run):
    a change's levels must be shown by such runs (`_held_where_settled`).

    Split, then merge (the two steps of Hunter/Otava): binary segmentation with the model variance and a
    ten times looser level proposes cuts; then, repeatedly, each cut is judged between its neighbouring
    cuts with the scatter-aware test, and the weakest failing one is removed, until every cut passes."""
    extra2 = extra**2 if extra is not None else 0.0
    scale = np.sqrt(sigma**2 + extra2) * np.ones(len(x))
    w = 1.0 / scale**2
    y = guarded(x, scale)
    m = settings.min_segment
    cuts: list[int] = []
    pending = [(0, len(x))]
    while pending:
        start, stop = pending.pop()
        found = _best_split(y, w, start, stop, m)
        if found is None:
            continue
        index, p, shift = found
        if p < min(10 * settings.alpha, 0.5) and abs(shift) >= settings.min_log_effect:
            cuts.append(index)
            pending += [(start, index), (index, stop)]
    cuts.sort()
    if cuts and refine is not None:
        scale = np.sqrt(refine(cuts) ** 2 + extra2) * np.ones(len(x))
        w = 1.0 / scale**2
        y = guarded(x, scale)
    while cuts:
        bounds = [0, *cuts, len(x)]
        judged = [_judge(y, w, bounds[i - 1], c, bounds[i + 1], settings) for i, c in enumerate(cuts, start=1)]
        failing = [
            s
            for s in judged
            if not _passes(s, settings) or not _at_its_boundary(x, w, s) or not _held_where_settled(x, w, s, settled)
        ]
        if not failing:
            return judged
        weakest = max(failing, key=lambda s: (s.p_value, -abs(s.log_ratio)))
        cuts.remove(weakest.index)
    return []


def newest_step(
    x: np.ndarray, sigma: float, settings: DetectionSettings, splits: list[Split], extra: np.ndarray | None = None
) -> tuple[list[Split], Split | None]:
    """(changes, pending): a step at the newest value, which has one run after it, not the `min_segment`
    a change needs. It is listed as pending (None: there is none), never reported one run early: when
    the last accepted change does not pass without the newest value (with `min_segment` runs after it,
    it cannot; with more, two high runs before a step at the newest can lean a change onto them) and a
    split before the newest value alone explains its segment better (larger z), that change is the
    pending step instead. The test: the newest value against the weighted mean of its segment's earlier
    values, with the model variance (the newest value's own uncertainty, `extra`, included), at `alpha`
    and `min_effect`."""
    n = len(x)
    e2 = extra**2 if extra is not None else np.zeros(n)
    w = 1.0 / (sigma**2 + e2)
    start = splits[-1].index if splits else 0
    if splits and splits[-1].stop == n and not _stands_without_newest(x, w, splits[-1], settings):
        last = splits[-1]
        at_split, _ = _newest_z(x, w, last.start, last.index)
        at_newest, _ = _newest_z(x, w, last.start, n - 1)
        if abs(at_newest) > abs(at_split):
            splits, start = splits[:-1], last.start
    if n - 1 - start < settings.min_segment:
        return splits, None
    z, se = _newest_z(x, w, start, n - 1)
    shift = z * se
    p = _p_value(z, math.inf)
    if p >= settings.alpha or abs(shift) < settings.min_log_effect:
        return splits, None
    return splits, Split(index=n - 1, start=start, stop=n, log_ratio=float(shift), half_width=1.96 * se, p_value=p)


def _stands_without_newest(x: np.ndarray, w: np.ndarray, split: Split, settings: DetectionSettings) -> bool:
    """Does the change `split` (the last one, ending at the newest value) pass its test on the values
    before the newest one (min_segment runs after it at least)?"""
    n = len(x)
    if n - 1 - split.index < settings.min_segment:
        return False
    y = guarded(x[: n - 1], 1.0 / np.sqrt(w[: n - 1]))
    return _passes(_judge(y, w[: n - 1], split.start, split.index, n - 1, settings), settings)


def _newest_z(x: np.ndarray, w: np.ndarray, start: int, index: int) -> tuple[float, float]:
    """(z, standard error) of mean(x[index:]) - mean(x[start:index]), weights w (1 / variance)."""
    before, after = slice(start, index), slice(index, len(x))
    mean_before = float(np.sum(w[before] * x[before]) / np.sum(w[before]))
    mean_after = float(np.sum(w[after] * x[after]) / np.sum(w[after]))
    se = math.sqrt(1.0 / np.sum(w[before]) + 1.0 / np.sum(w[after]))
    return (mean_after - mean_before) / se, se


def t_quantile(alpha: float, df: float) -> float:
    """Two-sided quantile of Student's t (t with t_sf2(t, df) == alpha), by bisection."""
    low, high = 0.0, 1e3
    for _ in range(80):
        mid = (low + high) / 2
        if t_sf2(mid, df) > alpha:
            low = mid
        else:
            high = mid
    return high
