"""Run-level (host) effects: how much faster or slower a whole source run was than its neighbours.

On Liger's CI some runs land on a host where every kernel under 0.1 ms is 1.3-1.9x slower (launch
overhead: the shorter the kernel, the larger the factor). That is one fact about the run, not hundreds
of regressions, so it is estimated once per source run and latency class, reported, and taken out of
every series before change points are judged.

Estimate (all in log scale, per latency class; pandas group-bys, so a million runs take seconds):

1. For every value of a series, its deviation from the series' own neighbours: ``d_left`` from the
   median of the ``NEIGHBOURS`` previous values, ``d_right`` from the median of the next ones (a side
   needs ``MIN_SIDE`` values). A host
   effect is a *transient*: the run deviates from both sides in the same direction, and the smaller of
   the two deviations is taken; a persistent change (a step) deviates from one side only and counts 0.
   The first and last runs of a series have one side only: a step at the newest run may be real, so there
   the run's one-sided deviation (over kernel groups) is not taken out but counted as uncertainty of those
   values; the newest run's host effect is judged once a later run exists.
2. Robust over the run: the median over *kernel groups* (kernel and provider) of each group's median
   deviation, so a kernel with forty workloads is one voice, not forty; needs ``MIN_GROUPS`` groups.
3. Repeated ``ITERATIONS`` times on the values with the current effects removed, so two slow runs in a
   row (each the other's neighbour) are both found in full.

The effect's standard error is ``1.2533 * 1.4826 * MAD / sqrt(groups)`` over the group medians (at least
what the class's usual spread gives); effects within ``TAKE_OUT_Z`` standard errors of 0 are left in; how
unevenly it hit the kernels (that spread beyond the class's usual spread) is kept per run and class as
extra variance of that run's values (`changepoints.find_changes`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

NEIGHBOURS = 3
MIN_SIDE = 1  # values needed on a side for it to count as a reference
MIN_GROUPS = 3
TAKE_OUT_Z = 3.0  # an estimated effect is taken out of the series when at least this many standard errors
MIN_SERIES = 8  # series of one script in one run needed for an effect of that script
_MAD = 1.4826
ITERATIONS = 3
CELLS = 4_000_000  # matrix cells per vectorised block (32 MB of float64)

# Latency classes by a series' typical median: half decades, because the host effect falls steeply
# with kernel length (x6 at 7 us, x1.7 at 50 us, x1.1 at 0.5 ms on one CI run). Upper bounds in ns.
LATENCY_CLASSES: tuple[tuple[float, str], ...] = (
    (1e4, "<10 µs"), (3e4, "10–30 µs"), (1e5, "30–100 µs"), (3e5, "0.1–0.3 ms"), (1e6, "0.3–1 ms"),
    (3e6, "1–3 ms"), (1e7, "3–10 ms"), (math.inf, "≥10 ms"),
)
MEMORY_CLASS = len(LATENCY_CLASSES)  # peak memory series form one class of their own
CLASS_LABELS = tuple(label for _, label in LATENCY_CLASSES) + ("peak memory",)
_BOUNDS = np.log(np.array([b for b, _ in LATENCY_CLASSES[:-1]]))


def latency_class(log_median_ns: float | np.ndarray) -> int | np.ndarray:
    """Index into LATENCY_CLASSES of a (log) median latency in ns."""
    return np.searchsorted(_BOUNDS, log_median_ns, side="right")


def class_range_label(first: int, last: int) -> str:
    """A label for the classes first..last (inclusive), e.g. "<0.1 ms", "10 µs–1 ms", "every latency"."""
    if first == last:
        return CLASS_LABELS[first]
    if first == MEMORY_CLASS or last == MEMORY_CLASS:
        raise ValueError("peak memory is a class of its own")
    lows = ("", "10 µs", "30 µs", "0.1 ms", "0.3 ms", "1 ms", "3 ms", "10 ms")
    highs = ("10 µs", "30 µs", "0.1 ms", "0.3 ms", "1 ms", "3 ms", "10 ms", "")
    if first == 0 and last == len(LATENCY_CLASSES) - 1:
        return "every latency"
    if first == 0:
        return f"<{highs[last]}"
    if last == len(LATENCY_CLASSES) - 1:
        return f"≥{lows[first]}"
    return f"{lows[first]}–{highs[last]}"


@dataclass
class HostFit:
    """Effects per (run, class): log factor, its standard error and how many kernel groups gave it."""

    effects: pd.DataFrame  # index (run, cls); columns log_factor, se, groups, extra
    scripts: pd.DataFrame  # index (run, script): log_factor, series, se, for the scripts with an effect of their own
    correction: np.ndarray  # per input observation: the log factor taken out
    extra: np.ndarray  # per input observation: sd of how unevenly that run's effect hit kernels, beyond usual


def _side_medians(series: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Median of the NEIGHBOURS previous and of the NEIGHBOURS next values of the same series (NaN where
    there are none); input sorted by series then time. Vectorised over padded (series x position)
    matrices of series of similar length, CELLS cells at a time."""
    n = len(values)
    left, right = np.full(n, np.nan), np.full(n, np.nan)
    if n == 0:
        return left, right
    starts = np.flatnonzero(np.r_[True, series[1:] != series[:-1]])
    lengths = np.diff(np.r_[starts, n])
    by_length = np.argsort(lengths, kind="stable")
    pad = NEIGHBOURS
    first = 0
    while first < len(by_length):
        last = first + 1
        while last < len(by_length) and (last - first + 1) * (int(lengths[by_length[last]]) + 2 * pad) <= CELLS:
            last += 1
        chosen = by_length[first:last]
        width = int(lengths[chosen[-1]]) + 2 * pad
        counts = lengths[chosen]
        rows = np.repeat(np.arange(len(chosen)), counts)
        offsets = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)  # position in series
        index = np.repeat(starts[chosen], counts) + offsets
        position = offsets
        matrix = np.full((len(chosen), width), np.nan)
        matrix[rows, position + pad] = values[index]
        windows = np.lib.stride_tricks.sliding_window_view(matrix, NEIGHBOURS, axis=1)
        with warnings.catch_warnings():  # an all-NaN window (a series' first or last run) is NaN by design
            warnings.simplefilter("ignore", category=RuntimeWarning)
            medians = np.nanmedian(windows, axis=2)  # medians[:, j] covers matrix[:, j:j+NEIGHBOURS]
        # (with one value on a side the smaller of the two deviations is biased low; two would make the
        # second-newest run, the one a nightly alert needs, one-sided)
        medians[np.isfinite(windows).sum(axis=2) < MIN_SIDE] = np.nan
        # the previous NEIGHBOURS of column c (= position + pad) start at c - NEIGHBOURS, the next at c + 1
        left[index] = medians[rows, position + pad - NEIGHBOURS]
        right[index] = medians[rows, position + pad + 1]
        first = last
    return left, right


def _deviations(series: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(two-sided, with one side) deviations of each value from its series' neighbours. Two-sided: the
    transient part (NaN at a series' first and last value); with one side: the same, and at the first
    and last value the deviation from the one side there is."""
    left, right = _side_medians(series, y)
    d_left, d_right = y - left, y - right
    same_side = np.sign(d_left) == np.sign(d_right)
    transient = np.where(same_side, np.sign(d_left) * np.minimum(np.abs(d_left), np.abs(d_right)), 0.0)
    both = np.isfinite(d_left) & np.isfinite(d_right)
    two_sided = np.where(both, transient, np.nan)
    return two_sided, np.where(both, transient, np.where(np.isfinite(d_left), d_left, d_right))


def _robust_stats(values: pd.Series, keys: list[pd.Series]) -> pd.DataFrame:
    """median, count and standard error of the median (from the MAD) of `values` per key."""
    grouped = values.groupby(keys, sort=True)
    median = grouped.median()
    centre = median.reindex(pd.MultiIndex.from_arrays(keys)).to_numpy()
    mad = (values - centre).abs().groupby(keys, sort=True).median()
    count = grouped.size()
    return pd.DataFrame({"median": median, "count": count, "sd": _MAD * mad, "se": 1.2533 * _MAD * mad / np.sqrt(count)})


def _lookup(table: pd.Series, keys: list[np.ndarray]) -> np.ndarray:
    return table.reindex(pd.MultiIndex.from_arrays(keys)).fillna(0.0).to_numpy()


def estimate(series: np.ndarray, run: np.ndarray, cls: np.ndarray, group: np.ndarray, script: np.ndarray,
             x: np.ndarray, min_log_effect: float, z_needed: float) -> HostFit:
    """Host effects of observations (arrays of one length, sorted by series then time): `run` is the
    observation's source run, `cls` its latency class, `group` its kernel group, `script` its benchmark
    script (kernel) and `x` its log value. Script effects are kept when at least `min_log_effect` and
    `z_needed` standard errors."""
    run_corr = np.zeros(len(x))
    script_corr = np.zeros(len(x))
    run_s, cls_s, script_s = pd.Series(run), pd.Series(cls), pd.Series(script)
    for _ in range(ITERATIONS):
        two_sided, _ = _deviations(series, x - run_corr - script_corr)
        d = pd.Series(two_sided)
        ok = d.notna()
        per_group = d[ok].groupby([run_s[ok], cls_s[ok], pd.Series(group)[ok]]).median()
        level = per_group.index.droplevel(2)
        stats = _robust_stats(pd.Series(per_group.to_numpy()), [pd.Series(level.get_level_values(0)), pd.Series(level.get_level_values(1))])
        # the standard error is at least what the class's usual spread over groups gives (a MAD of four
        # values can be nearly zero by chance); an effect within two standard errors of 0 is not taken out
        usual = stats["sd"].groupby(level=1).transform("median")
        stats["se"] = np.maximum(stats["se"], 1.2533 * usual / np.sqrt(stats["count"]))
        taken = (stats["count"] >= MIN_GROUPS) & (stats["median"].abs() >= TAKE_OUT_Z * stats["se"])
        step = stats["median"].where(taken, 0.0)
        run_step = _lookup(step, [run, cls])
        run_corr += run_step
        # what the class effect leaves, per (run, script): one script hit by a hiccup of the host. Two-sided
        # only: at a series' newest run one side cannot tell a script's hiccup from its own real change.
        rest = pd.Series(two_sided - run_step)
        ok2 = rest.notna()
        script_stats = _robust_stats(rest[ok2], [run_s[ok2], script_s[ok2]])
        # the standard error is at least what the usual scatter of deviations in the members' classes gives
        # (a MAD of four values can be nearly zero by chance)
        usual_sd = _MAD * rest[ok2].abs().groupby(cls_s[ok2]).median()
        member_sd = pd.Series(cls_s[ok2].map(usual_sd).to_numpy()).groupby([run_s[ok2].to_numpy(), script_s[ok2].to_numpy()]).median()
        se = np.maximum(script_stats["se"], 1.2533 * member_sd.reindex(script_stats.index).to_numpy() / np.sqrt(script_stats["count"]))
        script_stats["se"] = se
        size = script_stats["median"].abs()
        keep = (script_stats["count"] >= MIN_SERIES) & (size >= min_log_effect) & (size >= z_needed * se)
        script_corr += _lookup(script_stats["median"].where(keep, 0.0), [run, script])
    run_table = stats.rename(columns={"count": "groups"})
    run_table["log_factor"] = _lookup(pd.Series(run_corr, index=pd.MultiIndex.from_arrays([run, cls])).groupby(level=[0, 1]).first(),
                                      [run_table.index.get_level_values(0), run_table.index.get_level_values(1)])
    run_table.loc[run_table["groups"] < MIN_GROUPS, "log_factor"] = 0.0
    # unevenness: the spread of the kernel groups' deviations in that run, beyond the class's usual spread
    usual = run_table["sd"].groupby(level=1).transform("median")
    # counted only where the spread is clearly above usual: a MAD over G groups is itself uncertain by
    # about 1.15 / sqrt(G) of itself, so below usual x (1 + 3.5 / sqrt(G)) (three of those, the MAD's
    # tail being long) it is that uncertainty
    clearly = run_table["sd"] > usual * (1 + 3.5 / np.sqrt(run_table["groups"]))
    run_table["extra"] = np.where(clearly, np.sqrt(np.maximum(run_table["sd"] ** 2 - usual**2, 0.0)), 0.0)
    extra = _lookup(run_table["extra"], [run, cls])
    # A series' first and last values have one side only: how far the run stood out there, over its kernel
    # groups, is not taken out (a step in every kernel at the newest run may be real) but counted as
    # uncertainty of those values, so a slow newest (or oldest) run cannot make a change on its own.
    two_sided, with_one_side = _deviations(series, x - run_corr - script_corr)
    edge = np.isnan(two_sided) & np.isfinite(with_one_side)
    if edge.any():
        one = pd.Series(with_one_side[edge])
        per_group = one.groupby([run_s[edge].to_numpy(), cls_s[edge].to_numpy(), np.asarray(group)[edge]]).median()
        grouped = per_group.groupby(level=[0, 1])
        edge_effect = grouped.median().where(grouped.size() >= MIN_GROUPS, 0.0)
        extra = np.where(edge, np.hypot(extra, _lookup(edge_effect, [run, cls])), extra)
    totals = pd.DataFrame({"run": run, "script": script, "log_factor": script_corr, "d": 0.0})
    counts = totals.groupby(["run", "script"]).size()
    script_table = totals.groupby(["run", "script"])["log_factor"].first().to_frame()
    script_table["series"] = counts
    script_table["se"] = script_stats["se"].reindex(script_table.index).fillna(0.0)
    script_table = script_table[script_table["log_factor"] != 0.0]
    run_table.index.names = ["run", "cls"]
    return HostFit(effects=run_table[["log_factor", "se", "groups", "extra"]], scripts=script_table,
                   correction=run_corr + script_corr, extra=extra)
