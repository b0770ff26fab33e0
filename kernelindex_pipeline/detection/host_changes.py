"""Lasting moves of a run's host, each one entry instead of one change per series.

A source's attributor marks a change ``host`` where nothing that reaches its series changed and the run
moved (a commit that changes the GPU request, or most unrelated benchmark scripts moving one way, or
detection's whole latency class). `fold` turns the ``host`` changes of one boundary (GPU, last run
before, first run after, direction) into one `HostChange`: its factor per latency class with a 95 %
interval, the series it moved and the harness commit when there is one. The other changes at that
boundary are then judged against the host's factor for their class: a change that the host's move
explains (within the minimum effect of the factor, or inside both intervals) joins the entry; one that
goes beyond it stays a change. None of an entry's series is also a change at that boundary; their steps
stay splits of their series, so their other changes are judged within their own segments.

docs/concepts/detection.md ("Origins and host changes") explains where this sits among the causes.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np

from . import host_effects
from .changes import HOST, CauseEvidence, Change, ClassFactor, HostChange, RegressionReport

Z95 = 1.959964  # two-sided 95 % normal quantile
# asymptotic efficiency of the median against the mean for normal data: se(median) = 1.2533 sd / sqrt(n)
MEDIAN_SE = math.sqrt(math.pi / 2)
MAD_TO_SD = 1.4826  # the MAD of normal data times this is its standard deviation


def _boundary(change: Change) -> tuple:
    t, s = change.trend, change.split
    return (t.key.gpu, int(t.run_index[s.index - 1]), int(t.run_index[s.index]))


def _class_factor(changes: list[Change]) -> tuple[float, float]:
    """(median log ratio, half width of its 95 % interval): the median's standard error from the spread of
    the series (MAD), floored by the series' own interval (one series, or series that agree exactly)."""
    ratios = np.array([c.split.log_ratio for c in changes])
    centre = float(np.median(ratios))
    own = float(np.median([c.split.half_width for c in changes])) / math.sqrt(len(changes))
    spread = MAD_TO_SD * float(np.median(np.abs(ratios - centre)))
    return centre, max(Z95 * MEDIAN_SE * spread / math.sqrt(len(changes)), own)


def fold(report: RegressionReport) -> None:
    """Move the ``host`` changes of each boundary, and the changes there that the host's move explains,
    out of `report.changes` into `report.host_changes`."""
    marked: dict[tuple, list[Change]] = defaultdict(list)
    for change in report.changes:
        if change.cause == HOST:
            marked[(*_boundary(change), change.direction)].append(change)
    if not marked:
        return
    min_effect = report.settings.min_log_effect
    entries: list[HostChange] = []
    taken: set[int] = set()
    for (gpu, _, _, direction), changes in marked.items():
        first = changes[0]
        commits = next((e.commits for e in first.causes if e.cause == HOST and e.commits), ())
        note = next((e.note for e in first.causes if e.cause == HOST), "")
        entry = HostChange(
            gpu=gpu,
            before=first.side(first.split.index - 1),
            after=first.side(first.split.index),
            direction=direction,
            evidence=CauseEvidence(HOST, commits, note=note),
            changes=list(changes),
        )
        factors = {cls: _class_factor(members) for cls, members in _by_class(changes).items()}
        taken.update(id(c) for c in changes)
        entries.append(entry)
        # the other changes at this boundary: explained by the host where their step is the class's factor
        for change in report.changes:
            if id(change) in taken or _boundary(change)[:3] != (gpu, *_boundary(first)[1:]):
                continue
            if change.trend.cls not in factors:
                continue
            log_factor, half = factors[change.trend.cls]
            residual = change.split.log_ratio - log_factor
            if abs(residual) < min_effect or abs(residual) <= math.hypot(half, change.split.half_width):
                entry.changes.append(change)
                taken.add(id(change))
        for cls, members in sorted(_by_class(entry.changes).items()):
            log_factor, half = _class_factor(members)
            entry.factors.append(ClassFactor(host_effects.class_range_label(cls, cls), log_factor, half, len(members)))
    report.changes = [c for c in report.changes if id(c) not in taken]
    report.host_changes = sorted(entries, key=lambda h: (h.gpu, h.after["observedAt"], h.direction))


def _by_class(changes: list[Change]) -> dict[int, list[Change]]:
    out: dict[int, list[Change]] = defaultdict(list)
    for change in changes:
        out[change.trend.cls].append(change)
    return out
