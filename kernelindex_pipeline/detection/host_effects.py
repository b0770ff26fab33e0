"""Run-level (host) effects: how much faster or slower a whole source run was than its neighbours.

`estimate(series, run, cls, group, script, x, ...)` takes every observation's log value with its series,
source run, latency class, kernel group and benchmark script (arrays, sorted by series then time) and
returns a `HostFit`: the effect per run and class (and per run and script) and, per observation, the
correction taken out, its series' loading and the extra sd. Plain numpy and pandas, no record knowledge;
peak memory is never corrected; two GPUs are never pooled. The model (excursions, run effects, loadings,
the usual spread) is explained once, in docs/concepts/detection.md ("Host effects").
"""

from __future__ import annotations

import math
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
POLISH = 3  # rounds of the median polish of `common_levels`
MIN_BLOCK_SIDE = 2  # runs needed on each side of a host excursion (one would let a step pass for one)
CELLS = 4_000_000  # matrix cells per vectorised block (32 MB of float64)
# Runs a GPU needs in a latency class for the class's usual spread on that GPU to be its own (`usual_spread`):
# the usual spread is a median over runs, and the run being judged is one of them. The median of k values
# can be carried anywhere by floor((k - 1) / 2) of them, so k = 3 is the fewest where one unusual run (the
# one whose unevenness is asked about) cannot set it: with one run the usual spread is the run's own (its
# `extra` always 0, the standard error's floor its own MAD), with two it is half its own.
MIN_USUAL_RUNS = 3

# Latency classes by a series' typical median: half decades, because the host effect falls steeply
# with kernel length (x6 at 7 us, x1.7 at 50 us, x1.1 at 0.5 ms on one CI run). Upper bounds in ns.
LATENCY_CLASSES: tuple[tuple[float, str], ...] = (
    (1e4, "<10 µs"),
    (3e4, "10–30 µs"),
    (1e5, "30–100 µs"),
    (3e5, "0.1–0.3 ms"),
    (1e6, "0.3–1 ms"),
    (3e6, "1–3 ms"),
    (1e7, "3–10 ms"),
    (math.inf, "≥10 ms"),
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
    correction: np.ndarray  # per input observation: the log factor taken out (its series' loading x the run's effect)
    extra: np.ndarray  # per input observation: sd of how unevenly that run's effect hit kernels, beyond usual
    loading: np.ndarray  # per input observation: how far its series moves with the run's host effect (0: not at all)
    excursions: set[tuple[int, int]]  # (run, class) inside a host excursion of one or more consecutive runs


def window_nanmedians(windows: np.ndarray) -> np.ndarray:
    """np.nanmedian over the last axis (NaN where a window is all NaN, with no warning): the same floats, from
    one sort of the windows (NaN sorts last) and the middle of each window's values that are not NaN; np.nanmedian takes a
    masked-array path per window this small, a fifth of detection's host-effect estimate at 1M runs."""
    ordered = np.sort(windows, axis=-1)
    present = (~np.isnan(ordered)).sum(axis=-1, keepdims=True)  # infinities are values to np.nanmedian
    low = np.take_along_axis(ordered, np.maximum(present - 1, 0) // 2, axis=-1)
    high = np.take_along_axis(ordered, present // 2 - (present == 0), axis=-1)
    with np.errstate(invalid="ignore"):  # inf and -inf in a window of two: NaN, as np.nanmedian's mean
        middle = (low + high) / 2
    return np.where(present > 0, middle, np.nan)[..., 0]


def _window_medians(series: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, ...]:
    """For each value, the medians of NEIGHBOURS values of the same series: the previous ones (`left`), the
    next ones (`right`), those ending with it (`trail`) and those starting with it (`lead`); NaN where
    there are none. Input sorted by series then time. Vectorised over padded (series x position) matrices
    of series of similar length, CELLS cells at a time."""
    n = len(values)
    out = tuple(np.full(n, np.nan) for _ in range(4))
    if n == 0:
        return out
    left, right, trail, lead = out
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
        position = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)  # position in series
        index = np.repeat(starts[chosen], counts) + position
        matrix = np.full((len(chosen), width), np.nan)
        matrix[rows, position + pad] = values[index]
        windows = np.lib.stride_tricks.sliding_window_view(matrix, NEIGHBOURS, axis=1)
        medians = window_nanmedians(windows)  # medians[:, j] covers matrix[:, j:j+NEIGHBOURS]
        # (with one value on a side the smaller of the two deviations is biased low; two would make the
        # second-newest run, the one a nightly alert needs, one-sided)
        medians[np.isfinite(windows).sum(axis=2) < MIN_SIDE] = np.nan
        column = position + pad
        left[index] = medians[rows, column - NEIGHBOURS]
        right[index] = medians[rows, column + 1]
        trail[index] = medians[rows, column - NEIGHBOURS + 1]
        lead[index] = medians[rows, column]
        first = last
    return out


def _side_medians(
    series: np.ndarray, values: np.ndarray, masked: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Median of the NEIGHBOURS previous and of the NEIGHBOURS next values of the same series (NaN where
    there are none), skipping `masked` values (runs inside a host excursion): a value inside an excursion
    is compared with the series just outside it, on both sides, however long the excursion is."""
    if masked is None or not masked.any():
        left, right, _, _ = _window_medians(series, values)
        return left, right
    kept = np.flatnonzero(~masked)
    k_left, k_right, k_trail, k_lead = _window_medians(series[kept], values[kept])
    left, right = np.full(len(values), np.nan), np.full(len(values), np.nan)
    left[kept], right[kept] = k_left, k_right
    inside = np.flatnonzero(masked)
    after = np.searchsorted(kept, inside)  # the first kept value after each masked one (may be past the end)
    has_after = after < len(kept)
    same = has_after.copy()
    same[has_after] = series[kept[after[has_after]]] == series[inside[has_after]]
    right[inside[same]] = k_lead[after[same]]
    has_before = after > 0
    same = has_before.copy()
    same[has_before] = series[kept[after[has_before] - 1]] == series[inside[has_before]]
    left[inside[same]] = k_trail[after[same] - 1]
    return left, right


def _deviations(series: np.ndarray, y: np.ndarray, masked: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(two-sided, with one side) deviations of each value from its series' neighbours (outside host
    excursions, `masked`). Two-sided: the transient part (NaN at a series' first and last value); with
    one side: the same, and at the first and last value the deviation from the one side there is."""
    left, right = _side_medians(series, y, masked)
    d_left, d_right = y - left, y - right
    same_side = np.sign(d_left) == np.sign(d_right)
    transient = np.where(same_side, np.sign(d_left) * np.minimum(np.abs(d_left), np.abs(d_right)), 0.0)
    both = np.isfinite(d_left) & np.isfinite(d_right)
    two_sided = np.where(both, transient, np.nan)
    return two_sided, np.where(both, transient, np.where(np.isfinite(d_left), d_left, d_right))


def common_levels(
    series: np.ndarray, run: np.ndarray, cls: np.ndarray, group: np.ndarray, x: np.ndarray, run_gpu: np.ndarray
) -> pd.DataFrame:
    """The level of each (run, class) common to its kernel groups: a robust two-way fit (median polish)
    x = series level + run level, the run level the median over kernel groups (each the median of its
    series), where at least MIN_GROUPS groups were measured. A few kernels that really changed do not move
    it; a host that slows most kernels of the class does, for as many runs as it lasts.

    Columns `level` and `se`, its standard error: ``1.2533 * 1.4826 * MAD / sqrt(groups)`` of the groups
    about it, at least what the class's usual spread over groups on the run's GPU gives (`usual_spread`; a
    MAD of three values can be nearly zero by chance), as for the run effects of `estimate`."""
    level = np.zeros(len(x))
    keys = [pd.Series(run), pd.Series(cls), pd.Series(group)]
    table = pd.Series(dtype=float)
    per_group = pd.Series(dtype=float)
    for _ in range(POLISH):
        own = pd.Series(x - level).groupby(series).transform("median").to_numpy()
        per_group = pd.Series(x - own).groupby(keys).median()
        grouped = per_group.groupby(level=[0, 1])
        table = grouped.median()[grouped.size() >= MIN_GROUPS]
        level = _lookup(table, [run, cls])
    about = per_group.droplevel(2)
    kept = about.index.isin(table.index)
    spread = (about[kept] - table.reindex(about.index[kept]).to_numpy()).abs().groupby(level=[0, 1])
    sd = _MAD * spread.median().reindex(table.index)
    groups = spread.size().reindex(table.index)
    se = 1.2533 * np.maximum(sd, usual_spread(sd, run_gpu)) / np.sqrt(groups)
    frame = pd.DataFrame({"level": table, "se": se})
    frame.index.names = ["run", "cls"]
    return frame


def excursions(levels: pd.DataFrame, run_gpu: np.ndarray, z_needed: float) -> set[tuple[int, int]]:
    """(run, class) pairs inside a host excursion: consecutive runs of one GPU whose common level
    (`common_levels`) departs from the level around them, the same way at every run, while the levels
    just before and just after agree (the host came back; a lasting move is a step, not an excursion).
    A block needs MIN_BLOCK_SIDE runs on each side, so one at the newest runs is judged once later runs
    exist. Blocks are taken strongest first, any length."""
    found: set[tuple[int, int]] = set()
    frame = levels[["level"]].reset_index()
    frame["gpu"] = run_gpu[frame["run"].to_numpy()]
    for (_, cls), part in frame.groupby(["gpu", "cls"]):
        part = part.sort_values("run")
        runs, values = part["run"].to_numpy(), part["level"].to_numpy()
        for a, b in _blocks(values, z_needed):
            found.update((int(r), int(cls)) for r in runs[a:b])
    return found


def run_to_run_noise(c: np.ndarray) -> float:
    """How much one class' common level (`common_levels`, consecutive runs of one GPU) moves from run to
    run when the host does not: 1.4826 x the median absolute successive difference / sqrt(2), robust to
    the few large differences a host excursion or a lasting move makes; at least 0.1 %."""
    if len(c) < 2:
        return 1e-3
    return max(_MAD * float(np.median(np.abs(np.diff(c)))) / math.sqrt(2.0), 1e-3)


def host_move_thresholds(levels: pd.DataFrame, run_gpu: np.ndarray) -> pd.Series:
    """Per (run, class) of `common_levels`, the smallest departure of the common level that is a move of
    the host: TAKE_OUT_Z x the larger of the level's standard error at that run and its run-to-run noise
    on that GPU (`run_to_run_noise`). Below it the level is noise (a MAD over a handful of kernel groups
    understates its own error, so the run-to-run scatter is the better measure of it)."""
    frame = levels.reset_index()
    frame["gpu"] = run_gpu[frame["run"].to_numpy()]
    frame = frame.sort_values(["gpu", "cls", "run"])
    noise = frame.groupby(["gpu", "cls"])["level"].transform(lambda c: run_to_run_noise(c.to_numpy()))
    threshold = TAKE_OUT_Z * np.maximum(frame["se"].fillna(0.0), noise)
    return pd.Series(threshold.to_numpy(), index=pd.MultiIndex.from_frame(frame[["run", "cls"]])).sort_index()


def _blocks(c: np.ndarray, z_needed: float) -> list[tuple[int, int]]:
    """[a, b) blocks of `c` (one class' common level over consecutive runs) that are excursions."""
    n = len(c)
    if n < 2 * MIN_BLOCK_SIDE + 1:
        return []
    sigma = run_to_run_noise(c)
    taken = np.zeros(n, dtype=bool)
    out: list[tuple[int, int]] = []
    while True:
        best = _strongest_block(c, taken, sigma, z_needed)
        if best is None:
            return sorted(out)
        out.append(best)
        taken[best[0] : best[1]] = True


def _side_means(c: np.ndarray, taken: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Mean and count of the NEIGHBOURS untaken values before each position, and after it."""
    n = len(c)
    free = np.flatnonzero(~taken)
    csum = np.r_[0.0, np.cumsum(c[free])]
    before_end = np.searchsorted(free, np.arange(n))  # free values before position i: free[:before_end]
    after_start = np.searchsorted(free, np.arange(n), side="right")
    b_lo = np.maximum(before_end - NEIGHBOURS, 0)
    a_hi = np.minimum(after_start + NEIGHBOURS, len(free))
    left_n, right_n = before_end - b_lo, a_hi - after_start
    with np.errstate(invalid="ignore", divide="ignore"):
        left = (csum[before_end] - csum[b_lo]) / left_n
        right = (csum[a_hi] - csum[after_start]) / right_n
    return left, left_n, right, right_n


def _strongest_block(c: np.ndarray, taken: np.ndarray, sigma: float, z_needed: float) -> tuple[int, int] | None:
    n = len(c)
    left, left_n, right, right_n = _side_means(c, taken)
    prefix = np.r_[0.0, np.cumsum(c)]
    best, best_z = None, z_needed
    for a in range(MIN_BLOCK_SIDE, n - MIN_BLOCK_SIDE):
        if taken[a] or left_n[a] < MIN_BLOCK_SIDE:
            continue
        stop = a + int(np.argmax(taken[a:])) if taken[a:].any() else n  # blocks never contain a taken run
        b = np.arange(a, stop)  # last run of the block
        ok = right_n[b] >= MIN_BLOCK_SIDE
        if not ok.any():
            continue
        length = b - a + 1
        reference = (left[a] + right[b]) / 2
        shift = (prefix[b + 1] - prefix[a]) / length - reference
        both = np.sqrt(1 / left_n[a] + 1 / np.maximum(right_n[b], 1))
        agree = np.abs(left[a] - right[b]) <= z_needed * sigma * both
        lowest, highest = np.minimum.accumulate(c[a:stop]), np.maximum.accumulate(c[a:stop])
        same_way = np.where(shift > 0, lowest > reference, highest < reference)
        z = np.abs(shift) / (sigma * np.sqrt(1 / length + both**2 / 4))
        z = np.where(ok & agree & same_way, z, 0.0)
        k = int(np.argmax(z))
        if z[k] > best_z:
            best, best_z = (a, int(b[k]) + 1), float(z[k])
    return best


def gpu_class(run_gpu: np.ndarray, run: np.ndarray, cls: np.ndarray) -> np.ndarray:
    """Per value, one id per (GPU of its run, latency class): what is pooled over a class is pooled per GPU,
    as two GPUs are never compared, so a sweep on one GPU moves nothing of another's."""
    return np.asarray(run_gpu)[run] * (MEMORY_CLASS + 1) + cls


def usual_spread(sd: pd.Series, run_gpu: np.ndarray) -> pd.Series:
    """Per (run, class) of `sd` (a spread over kernel groups, index (run, cls)), the class's usual spread on
    the run's GPU: the median over that GPU's runs of the class. Two GPUs are never compared (as the noise
    priors, `detect._noise_priors`), so a sweep on one GPU never moves another's. A GPU with fewer than
    MIN_USUAL_RUNS runs in the class borrows in the same order as the noise priors: the median over the
    GPU's runs of every class, else (the GPU itself has too few runs) over every run."""
    runs = sd.index.get_level_values(0).to_numpy()
    frame = pd.DataFrame({"sd": sd.to_numpy(), "gpu": np.asarray(run_gpu)[runs], "cls": sd.index.get_level_values(1)})
    frame["told"] = pd.Series(runs, dtype=float).where(frame["sd"].notna())  # runs whose spread is known
    usual = pd.Series(frame["sd"].median(), index=frame.index)
    for keys in (["gpu"], ["gpu", "cls"]):  # the widest pool first, each narrower one where it has runs enough
        pool = frame.groupby(keys)
        usual = usual.where(pool["told"].transform("nunique") < MIN_USUAL_RUNS, pool["sd"].transform("median"))
    return pd.Series(usual.to_numpy(), index=sd.index)


def _robust_stats(values: pd.Series, keys: list[pd.Series]) -> pd.DataFrame:
    """median, count and standard error of the median (from the MAD) of `values` per key."""
    grouped = values.groupby(keys, sort=True)
    median = grouped.median()
    centre = median.reindex(pd.MultiIndex.from_arrays(keys)).to_numpy()
    mad = (values - centre).abs().groupby(keys, sort=True).median()
    count = grouped.size()
    return pd.DataFrame(
        {"median": median, "count": count, "sd": _MAD * mad, "se": 1.2533 * _MAD * mad / np.sqrt(count)}
    )


def _lookup(table: pd.Series, keys: list[np.ndarray]) -> np.ndarray:
    return table.reindex(pd.MultiIndex.from_arrays(keys)).fillna(0.0).to_numpy()


def estimate(
    series: np.ndarray,
    run: np.ndarray,
    cls: np.ndarray,
    group: np.ndarray,
    script: np.ndarray,
    x: np.ndarray,
    min_log_effect: float,
    z_needed: float,
    run_gpu: np.ndarray | None = None,
) -> HostFit:
    """Host effects of observations (arrays of one length, sorted by series then time): `run` is the
    observation's source run, `cls` its latency class, `group` its kernel group, `script` its benchmark
    script (kernel) and `x` its log value; `run_gpu` the GPU (any id) of each run. Script effects are kept
    when at least `min_log_effect` and `z_needed` standard errors. Peak memory is never corrected: a
    host's speed does not change how much memory a kernel allocates."""
    latency = cls != MEMORY_CLASS
    if not latency.any():  # nothing a host moves (no runs, or peak memory only)
        return _empty_fit(len(x))
    if not latency.all():
        fit = estimate(
            series[latency],
            run[latency],
            cls[latency],
            group[latency],
            script[latency],
            x[latency],
            min_log_effect,
            z_needed,
            run_gpu,
        )
        correction, extra, loading = np.zeros(len(x)), np.zeros(len(x)), np.zeros(len(x))
        correction[latency], extra[latency], loading[latency] = fit.correction, fit.extra, fit.loading
        return HostFit(fit.effects, fit.scripts, correction, extra, loading, fit.excursions)
    if run_gpu is None:
        run_gpu = np.zeros(int(run.max()) + 1 if len(run) else 0, dtype=np.int64)
    blocks = excursions(common_levels(series, run, cls, group, x, run_gpu), run_gpu, z_needed) if len(x) else set()
    masked = (
        _lookup(pd.Series(1.0, index=pd.MultiIndex.from_tuples(sorted(blocks))), [run, cls]) > 0 if blocks else None
    )
    pool = gpu_class(run_gpu, run, cls)
    run_corr = np.zeros(len(x))
    script_corr = np.zeros(len(x))
    for _ in range(ITERATIONS):
        two_sided, _ = _deviations(series, x - run_corr - script_corr, masked)
        stats, run_step = _run_effect_step(two_sided, run, cls, group, run_gpu)
        run_corr += run_step
        script_stats, script_step = _script_effect_step(
            two_sided - run_step, run, pool, script, min_log_effect, z_needed
        )
        script_corr += script_step
    run_table = _run_table(stats, run_corr, run, cls, run_gpu)
    # a value the run's effect was taken out of carries that estimate's error as well as its own noise
    taken_error = run_table["se"].where(run_table["log_factor"] != 0.0, 0.0)
    extra = np.hypot(_lookup(run_table["extra"], [run, cls]), _lookup(taken_error, [run, cls]))
    extra = _edge_uncertainty(series, x - run_corr - script_corr, masked, run, cls, group, extra)
    # Each series takes the run's effect only as far as it moves with it (its loading, `_loadings`): a
    # GPU-bound shape that reads the same on a slow host takes none of it, nor its uncertainty.
    loading = _loadings(series, pool, x, run_corr + script_corr, masked)
    return HostFit(
        effects=run_table[["log_factor", "se", "groups", "extra"]],
        scripts=_script_table(run, script, script_corr, script_stats),
        correction=loading * (run_corr + script_corr),
        extra=loading * extra,
        loading=loading,
        excursions=blocks,
    )


def _empty_fit(n: int) -> HostFit:
    zeros = np.zeros(n)
    effects = pd.DataFrame(
        {"log_factor": [], "se": [], "groups": [], "extra": []},
        index=pd.MultiIndex.from_arrays([[], []], names=["run", "cls"]),
    )
    scripts = pd.DataFrame(
        {"log_factor": [], "series": [], "se": []},
        index=pd.MultiIndex.from_arrays([[], []], names=["run", "script"]),
    )
    return HostFit(effects, scripts, zeros, zeros.copy(), zeros.copy(), set())


def _run_effect_step(
    two_sided: np.ndarray, run: np.ndarray, cls: np.ndarray, group: np.ndarray, run_gpu: np.ndarray
) -> tuple[pd.DataFrame, np.ndarray]:
    """(statistics per (run, class), the effect taken out of each value this round): the median over
    kernel groups of each group's median two-sided deviation, where clearly away from 0."""
    d = pd.Series(two_sided)
    ok = d.notna()
    per_group = d[ok].groupby([pd.Series(run)[ok], pd.Series(cls)[ok], pd.Series(group)[ok]]).median()
    level = per_group.index.droplevel(2)
    stats = _robust_stats(
        pd.Series(per_group.to_numpy()),
        [pd.Series(level.get_level_values(0)), pd.Series(level.get_level_values(1))],
    )
    # the standard error is at least what the class's usual spread over groups on the run's GPU gives (a
    # MAD of four values can be nearly zero by chance); an effect within TAKE_OUT_Z standard errors of 0 is
    # left in
    usual = usual_spread(stats["sd"], run_gpu)
    stats["se"] = np.maximum(stats["se"], 1.2533 * usual / np.sqrt(stats["count"]))
    taken = (stats["count"] >= MIN_GROUPS) & (stats["median"].abs() >= TAKE_OUT_Z * stats["se"])
    return stats, _lookup(stats["median"].where(taken, 0.0), [run, cls])


def _script_effect_step(
    rest: np.ndarray, run: np.ndarray, pool: np.ndarray, script: np.ndarray, min_log_effect: float, z_needed: float
) -> tuple[pd.DataFrame, np.ndarray]:
    """(statistics per (run, script), the effect taken out of each value this round): what the class
    effect leaves (`rest`), per (run, script): one script hit by a hiccup of the host. Two-sided only: at
    a series' newest run one side cannot tell a script's hiccup from its own real change. `pool`: each
    value's GPU and class (`gpu_class`)."""
    rest_s = pd.Series(rest)
    ok = rest_s.notna()
    run_s, pool_s, script_s = pd.Series(run)[ok], pd.Series(pool)[ok], pd.Series(script)[ok]
    script_stats = _robust_stats(rest_s[ok], [run_s, script_s])
    # the standard error is at least what the usual scatter of deviations in the members' classes on their
    # GPU gives (a MAD of four values can be nearly zero by chance)
    usual_sd = _MAD * rest_s[ok].abs().groupby(pool_s).median()
    member_sd = pd.Series(pool_s.map(usual_sd).to_numpy()).groupby([run_s.to_numpy(), script_s.to_numpy()]).median()
    se = np.maximum(
        script_stats["se"],
        1.2533 * member_sd.reindex(script_stats.index).to_numpy() / np.sqrt(script_stats["count"]),
    )
    script_stats["se"] = se
    size = script_stats["median"].abs()
    keep = (script_stats["count"] >= MIN_SERIES) & (size >= min_log_effect) & (size >= z_needed * se)
    return script_stats, _lookup(script_stats["median"].where(keep, 0.0), [run, script])


def _run_table(
    stats: pd.DataFrame, run_corr: np.ndarray, run: np.ndarray, cls: np.ndarray, run_gpu: np.ndarray
) -> pd.DataFrame:
    """Per (run, class): the effect taken out over every round (log_factor), its standard error, the
    kernel groups that told it and how unevenly it hit them (extra)."""
    run_table = stats.rename(columns={"count": "groups"})
    run_table["log_factor"] = _lookup(
        pd.Series(run_corr, index=pd.MultiIndex.from_arrays([run, cls])).groupby(level=[0, 1]).first(),
        [run_table.index.get_level_values(0), run_table.index.get_level_values(1)],
    )
    run_table.loc[run_table["groups"] < MIN_GROUPS, "log_factor"] = 0.0
    # unevenness: the spread of the kernel groups' deviations in that run, beyond the class's usual spread
    # on its GPU
    usual = usual_spread(run_table["sd"], run_gpu)
    # counted only where the spread is clearly above usual: a MAD over G groups is itself uncertain by
    # about 1.15 / sqrt(G) of itself, so below usual x (1 + 3.5 / sqrt(G)) (three of those, the MAD's
    # tail being long) it is that uncertainty
    clearly = run_table["sd"] > usual * (1 + 3.5 / np.sqrt(run_table["groups"]))
    run_table["extra"] = np.where(clearly, np.sqrt(np.maximum(run_table["sd"] ** 2 - usual**2, 0.0)), 0.0)
    run_table.index.names = ["run", "cls"]
    return run_table


def _edge_uncertainty(
    series: np.ndarray,
    y: np.ndarray,
    masked: np.ndarray | None,
    run: np.ndarray,
    cls: np.ndarray,
    group: np.ndarray,
    extra: np.ndarray,
) -> np.ndarray:
    """`extra` with the edges' uncertainty added. A series' first and last values have one side only: how
    far the run stood out there, over its kernel groups, is not taken out (a step in every kernel at the
    newest run may be real) but counted as uncertainty of those values, so a slow newest (or oldest) run
    cannot make a change on its own."""
    two_sided, with_one_side = _deviations(series, y, masked)
    edge = np.isnan(two_sided) & np.isfinite(with_one_side)
    if not edge.any():
        return extra
    one = pd.Series(with_one_side[edge])
    per_group = one.groupby([run[edge], cls[edge], np.asarray(group)[edge]]).median()
    grouped = per_group.groupby(level=[0, 1])
    edge_effect = grouped.median().where(grouped.size() >= MIN_GROUPS, 0.0)
    return np.where(edge, np.hypot(extra, _lookup(edge_effect, [run, cls])), extra)


def _script_table(
    run: np.ndarray, script: np.ndarray, script_corr: np.ndarray, script_stats: pd.DataFrame
) -> pd.DataFrame:
    """Per (run, script) with an effect of its own: its log factor, series and standard error."""
    totals = pd.DataFrame({"run": run, "script": script, "log_factor": script_corr})
    counts = totals.groupby(["run", "script"]).size()
    script_table = totals.groupby(["run", "script"])["log_factor"].first().to_frame()
    script_table["series"] = counts
    script_table["se"] = script_stats["se"].reindex(script_table.index).fillna(0.0)
    return script_table[script_table["log_factor"] != 0.0]


def _spread_about_one(estimates: np.ndarray, variances: np.ndarray) -> float:
    """The between-series variance of loadings estimated with these variances, about their known mean
    1: the DerSimonian-Laird moment estimator of random-effects meta-analysis with the mean given (the
    spread beyond what each estimate's own variance explains). The mean is 1 by construction: a run's
    effect is the median response of its class's kernel groups, so the typical series moves with it one
    to one; estimated from a few slopes on one small effect it could land anywhere (0.06 was seen), and
    the newest run's uncertainty, which the loading scales, with it."""
    weights = 1.0 / variances
    q = float(np.sum(weights * (estimates - 1.0) ** 2))
    return max((q - len(estimates)) / float(np.sum(weights)), 0.0)


def _loadings(
    series: np.ndarray, pool: np.ndarray, x: np.ndarray, effect: np.ndarray, masked: np.ndarray | None
) -> np.ndarray:
    """Per observation, its series' loading on the run effects: the regression slope of the series' own
    two-sided deviations on the effect estimated for its runs (`shrunk_slopes`)."""
    d, _ = _deviations(series, x, masked)
    return shrunk_slopes(series, pool, x, d, effect)


def shrunk_slopes(
    series: np.ndarray,
    pool: np.ndarray,
    x: np.ndarray,
    response: np.ndarray,
    effect: np.ndarray,
    min_points: int = 1,
) -> np.ndarray:
    """Per observation, its series' slope of `response` on `effect` (through 0, over the values where both
    are known and the effect is not 0), shrunk (empirical Bayes, per `pool`: each value's GPU and latency
    class, `gpu_class`; `_spread_about_one`) towards
    1, the typical slope by construction, by how well the series' own runs tell it (its noise: the MAD of
    the successive differences of `x`), and never below 0 (a slow host makes nothing faster). Series with
    fewer than `min_points` values to learn from take 1. Input sorted by series then time."""
    noise = pd.Series(np.diff(x, prepend=np.nan)).where(np.r_[False, series[1:] == series[:-1]])
    sd = (_MAD * noise.abs().groupby(series).transform("median") / math.sqrt(2.0)).fillna(0.0).to_numpy()
    usable = np.isfinite(response) & np.isfinite(effect) & (effect != 0.0)
    frame = pd.DataFrame(
        {"series": series[usable], "cd": effect[usable] * response[usable], "cc": effect[usable] ** 2, "points": 1}
    )
    sums = frame.groupby("series")[["cd", "cc", "points"]].sum()
    first = np.flatnonzero(np.r_[True, series[1:] != series[:-1]])
    series_ids, series_pool = series[first], pool[first]
    series_sd = np.maximum(sd[first], 1e-3)
    cc = sums["cc"].reindex(series_ids).fillna(0.0).to_numpy()
    points = sums["points"].reindex(series_ids).fillna(0).to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        own = sums["cd"].reindex(series_ids).fillna(0.0).to_numpy() / cc
        variance = series_sd**2 / cc
    slope = np.ones(len(series_ids))
    for c in np.unique(series_pool):
        members = (series_pool == c) & (cc > 0) & (points >= min_points)
        if not members.any():
            continue
        spread = _spread_about_one(own[members], variance[members])
        if spread > 0.0:
            slope[members] = (own[members] / variance[members] + 1.0 / spread) / (1 / variance[members] + 1 / spread)
    return np.repeat(np.maximum(slope, 0.0), np.diff(np.r_[first, len(series)]))
