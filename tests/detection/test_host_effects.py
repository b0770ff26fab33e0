"""Run-level host effects (detection/host_effects.py): a latency class's usual spread over kernel groups is
pooled per GPU, and a GPU with too few runs in a class to tell its own borrows (its other classes, then
every GPU), as the noise priors do."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.detection import host_effects
from kernelindex_pipeline.detection.host_effects import MIN_USUAL_RUNS, estimate, usual_spread


def spreads(rows: list[tuple[int, int, float]]) -> pd.Series:
    """A spread per (run, class), as `_robust_stats` gives it: rows of (run, class, sd)."""
    index = pd.MultiIndex.from_tuples([(run, cls) for run, cls, _ in rows], names=["run", "cls"])
    return pd.Series([sd for _, _, sd in rows], index=index)


def test_the_usual_spread_is_the_median_over_the_runs_of_its_gpu_in_its_class():
    # runs 0-3 on GPU 0, 4-7 on GPU 1; class 0 on both, class 1 on GPU 0 only
    run_gpu = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    rows = [(r, 0, 0.01 * (r + 1)) for r in range(4)] + [(r, 0, 0.5 + r) for r in range(4, 8)]
    rows += [(r, 1, 0.2) for r in range(4)]
    usual = usual_spread(spreads(rows), run_gpu)
    assert usual.loc[(0, 0)] == usual.loc[(3, 0)] == pytest.approx(0.025)  # median of .01 .02 .03 .04
    assert usual.loc[(4, 0)] == pytest.approx(6.0)  # median of 4.5 5.5 6.5 7.5: GPU 1's own
    assert usual.loc[(2, 1)] == pytest.approx(0.2)
    # another GPU's runs never move it
    wider = usual_spread(spreads(rows[:4] + [(r, 0, 100.0) for r in range(4, 8)] + rows[8:]), run_gpu)
    assert wider.loc[[(r, 0) for r in range(4)]].tolist() == usual.loc[[(r, 0) for r in range(4)]].tolist()


def test_a_gpu_with_too_few_runs_in_a_class_borrows_its_runs_of_every_class():
    """One run in class 2 would be its own usual spread (its unevenness never beyond usual): it takes the
    median over its GPU's runs of every class instead, never another GPU's."""
    run_gpu = np.array([0, 0, 0, 1, 1, 1])
    rows = [(r, 1, 0.1) for r in range(3)] + [(0, 2, 0.9)]  # GPU 0: three runs in class 1, one in class 2
    rows += [(r, 2, 7.0) for r in range(3, 6)]  # GPU 1: three runs in class 2
    usual = usual_spread(spreads(rows), run_gpu)
    assert usual.loc[(0, 2)] == pytest.approx(0.1)  # median of 0.1 0.1 0.1 0.9 (GPU 0, every class)
    assert usual.loc[(3, 2)] == pytest.approx(7.0)


def test_a_gpu_with_too_few_runs_of_its_own_borrows_every_gpus():
    run_gpu = np.array([0, 0, 0, 1])
    rows = [(r, 0, 0.1 * (r + 1)) for r in range(3)] + [(3, 0, 5.0)]  # GPU 1: a single run
    usual = usual_spread(spreads(rows), run_gpu)
    assert usual.loc[(3, 0)] == pytest.approx(0.25)  # median of 0.1 0.2 0.3 5.0: every run
    assert usual.loc[(0, 0)] == pytest.approx(0.2)  # GPU 0 keeps its own


@pytest.mark.parametrize("runs", [MIN_USUAL_RUNS - 1, MIN_USUAL_RUNS])
def test_min_usual_runs_is_where_a_gpu_class_tells_its_own_usual_spread(runs):
    run_gpu = np.array([0] * 5 + [1] * runs)
    rows = [(r, 0, 1.0) for r in range(5)] + [(5 + k, 0, 3.0 + k) for k in range(runs)]
    usual = usual_spread(spreads(rows), run_gpu)
    own = float(np.median([3.0 + k for k in range(runs)]))
    borrowed = float(np.median([1.0] * 5 + [3.0 + k for k in range(runs)]))
    assert usual.loc[(5, 0)] == pytest.approx(own if runs >= MIN_USUAL_RUNS else borrowed)


def test_runs_whose_spread_is_unknown_do_not_count_as_runs_that_tell_it():
    run_gpu = np.array([0, 0, 0, 1, 1, 1])
    rows = [(r, 0, 1.0) for r in range(3)] + [(3, 0, 4.0), (4, 0, np.nan), (5, 0, np.nan)]
    assert usual_spread(spreads(rows), run_gpu).loc[(3, 0)] == pytest.approx(1.0)  # borrowed: one known run


@pytest.mark.parametrize("min_runs", [MIN_USUAL_RUNS, 1])
def test_an_uneven_run_on_a_gpu_with_one_judged_run_is_uneven_against_what_it_borrows(monkeypatch, min_runs):
    """End to end (`estimate`): GPU 1 has three runs, so one two-sided run (run 9). Its kernel groups move
    +-30 % at run 9 (a host that hit them unevenly). It borrows the 2 % spread of GPU 0's runs, so the
    unevenness is kept as extra; judged against its own spread (a threshold of one run) it would be usual."""
    monkeypatch.setattr(host_effects, "MIN_USUAL_RUNS", min_runs)
    rng = np.random.default_rng(5)
    groups, gpu_runs = 8, [list(range(8)), [8, 9, 10]]
    series, run, group, x = [], [], [], []
    for gpu, runs in enumerate(gpu_runs):
        for g in range(groups):
            for r in runs:
                uneven = 0.3 * (1 if g % 2 else -1) if r == 9 else 0.0
                series.append(gpu * groups + g), run.append(r), group.append(g)
                x.append(12.0 + 0.1 * g + uneven + rng.normal(0, 0.02))
    n = len(x)
    fit = estimate(
        np.array(series),
        np.array(run),
        np.zeros(n, dtype=np.int64),  # one latency class
        np.array(group),
        np.array(group),
        np.array(x),
        min_log_effect=0.05,
        z_needed=3.3,
        run_gpu=np.array([0] * 8 + [1] * 3),
    )
    assert fit.effects.loc[[(r, 0) for r in range(1, 7)], "extra"].max() == 0.0  # GPU 0's runs are usual
    if min_runs == 1:
        assert fit.effects.loc[(9, 0), "extra"] == 0.0  # its own yardstick: never beyond usual
    else:
        assert fit.effects.loc[(9, 0), "extra"] > 0.3


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.lists(
            st.one_of(st.floats(-40, 40), st.just(np.nan), st.just(np.inf), st.just(-np.inf)), min_size=3, max_size=3
        ),
        min_size=1,
        max_size=30,
    )
)
def test_window_medians_are_numpy_s_nanmedian(rows):
    """One sort for every window of the host-effect estimate's neighbours: np.nanmedian's floats, all-NaN
    windows NaN, infinities counted as values."""
    windows = np.array(rows, dtype=float).reshape(len(rows), 1, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        expected = np.nanmedian(windows, axis=2)
    np.testing.assert_array_equal(host_effects.window_nanmedians(windows), expected)
