"""Host correction: which series time the host rather than the GPU (launch-bound), how they follow the
host's speed, latency classes too sparse to estimate alone, which run-level host effects are reported, and
when a change no environment difference explains is `host` rather than `unknown`. Called by `detect.py`;
explained once in docs/concepts/detection.md ("Host effects").
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pandas as pd

from . import host_effects
from .changepoints import Split
from .changes import SLOWDOWN, SPEEDUP, Change, GpuSeriesKey, HostEffect, SourceRun, Trend
from .run_facts import PEAK_MEMORY
from .settings import DetectionSettings

MIN_HOST_MOVES = 2  # host moves a launch-bound series needs for a slope of its own (`against_host_speed`)
HOST_CAUSE_SHARE = 0.5


def launch_bound(keys: list[GpuSeriesKey], series_ids: np.ndarray, typical: np.ndarray, tolerance: float) -> np.ndarray:
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


def against_host_speed(
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


def merge_sparse_classes(classes: np.ndarray, groups: np.ndarray, gpus: np.ndarray) -> np.ndarray:
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


def host_or_unknown(pending: list[tuple[Trend, Split]], trends: list[Trend]) -> list[Change]:
    """A change without an environment difference is `host` when at least HOST_CAUSE_SHARE
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


def host_effect_entries(
    fit: host_effects.HostFit, sources: list[SourceRun], settings: DetectionSettings, scripts: list[str]
):
    """Significant effects (|z| >= the settings' level and at least min_effect), adjacent latency classes
    of one run with agreeing factors merged into one entry."""
    every = [
        (sources[int(run)], int(cls), float(row["log_factor"]), float(row["se"]), int(row["groups"]))
        for (run, cls), row in fit.effects.iterrows()
    ]
    per_run = significant_class_effects(fit, settings)
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


def significant_class_effects(
    fit: host_effects.HostFit, settings: DetectionSettings
) -> dict[int, list[tuple[int, float, float, int]]]:
    """Per run, its (class, log factor, se, kernel groups) effects that are reported: at least MIN_GROUPS
    groups, the minimum effect and the settings' significance."""
    z_needed = z_for(settings.alpha)
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


def z_for(alpha: float) -> float:
    """Two-sided normal quantile for alpha (bisection on erfc; no scipy needed for one number)."""
    low, high = 0.0, 40.0
    for _ in range(100):
        mid = (low + high) / 2
        if math.erfc(mid / math.sqrt(2)) > alpha:
            low = mid
        else:
            high = mid
    return high
