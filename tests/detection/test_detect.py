"""Regression detection: synthetic series with known answers (property tests), causes, source runs,
memory series, and a slice of Liger's real CI runs (tests/fixtures/liger-ci-slice: the runs of 23
kernels of the ten H100 files in ../shared/data/liger-ci, made by tests/fixtures/liger-ci-slice/make_slice.py)."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernelindex_pipeline.cli import main
from kernelindex_pipeline.detection.changepoints import find_changes, t_quantile, t_sf2
from kernelindex_pipeline.detection.changes import GpuSeriesKey, RegressionInputError, SourceRun
from kernelindex_pipeline.detection.detect import (
    SESSION_GAP_S,
    _group_medians,
    _Observations,
    _source_runs,
    detect_in_record_files,
    detect_regressions,
)
from kernelindex_pipeline.detection.document import regressions_json
from kernelindex_pipeline.detection.settings import DetectionSettings
from tests.support.ci_slice import unpack_ci_slice
from tests.support.factories import SampleCatalogue
from tests.support.factories import detection_run as run

START = datetime(2025, 1, 3, tzinfo=UTC)
PROPERTY = settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def panel(levels: np.ndarray, *, versions=None, environments=None, kernels: int = 6, cases: int = 4) -> list[dict]:
    """Runs of kernels x cases series over len(levels[0]) weekly sweeps; levels[i, j] is the value of series
    i at sweep j (ns)."""
    out = []
    for i, row in enumerate(levels):
        kernel, case = f"kernel{i // cases}", f"case{i % cases}"
        for j, value in enumerate(row):
            when = START + timedelta(days=7 * j, minutes=i % 50)
            out.append(
                run(
                    kernel,
                    "liger",
                    case,
                    when,
                    float(value),
                    version=versions[j] if versions else "0.8.0",
                    environment=environments[j] if environments else "sha256:" + "e" * 64,
                )
            )
    assert kernels * cases == len(levels)
    return out


# ----------------------------------------------------------------------------- properties (synthetic)


@PROPERTY
@given(n=st.integers(8, 40), data=st.data(), seed=st.integers(0, 2**32 - 1), up=st.booleans())
def test_a_20_percent_step_on_3_percent_noise_is_found_at_the_right_run(n, data, seed, up):
    # Gaussian log noise of sd 3 %, cut at 2.5 sd: an untruncated draw of 3 sd right after the step can
    # honestly move the best estimate of where it happened by one run. Three runs on each side: with two,
    # two extreme draws on the short side can leave the change below the significance level.
    at = data.draw(st.integers(3, n - 3), label="first run after the step")
    rng = np.random.default_rng(seed)
    base = 200_000 * np.exp(np.clip(rng.normal(0, 0.03, size=(24, n)), -0.075, 0.075))
    factor = 1.2 if up else 1 / 1.2
    base[0, at:] *= factor  # one series steps; the other 23 are pure noise
    report = detect_regressions(panel(base))
    stepped = [c for c in report.changes if c.key.kernel == "kernel0" and c.trend.case_key == "case0"]
    assert len(stepped) == 1, [c.to_dict() for c in report.changes]
    change = stepped[0].to_dict()
    assert change["after"]["observedAt"] == stepped[0].trend.observed_at[at]
    assert change["before"]["observedAt"] == stepped[0].trend.observed_at[at - 1]
    assert change["direction"] == ("slowdown" if up else "speedup")
    assert change["ci95"][0] < change["magnitude"] < change["ci95"][1]
    assert abs(math.log(change["magnitude"] / factor)) < 0.08
    assert change["runsBefore"] == at and change["runsAfter"] == n - at


def _ten_percent_noise(n: int, seed: int) -> np.ndarray:
    """24 series of pure 10 % log noise over n runs, at three latency levels (20 µs, 0.3 ms, 5 ms)."""
    rng = np.random.default_rng(seed)
    return rng.choice([20_000.0, 300_000.0, 5_000_000.0], size=(24, 1)) * np.exp(rng.normal(0, 0.10, size=(24, n)))


def _with_a_slow_run(levels: np.ndarray, slow: int, factor: float = 1.8) -> np.ndarray:
    """The same values with every series `factor` slower at run `slow` (a slow host)."""
    slowed = levels.copy()
    slowed[:, slow] *= factor
    return slowed


def _where(change, removed_run: int | None = None) -> tuple:
    """(series, first run after the change), as run numbers of the whole panel; `removed_run`: the change was
    found in the panel without that run, where every later run's number is one lower."""
    index = change.split.index
    if removed_run is not None and index >= removed_run:
        index += 1
    return (change.key, change.trend.case_key, index)


@pytest.mark.slow  # both tests of the slow run: 86 s together on two shared cores (40 examples each)
@PROPERTY
@given(n=st.integers(5, 30), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_a_whole_run_factor_of_1_8_on_pure_10_percent_noise_makes_no_change_the_noise_does_not_make(n, data, seed):
    # Any run but the second and the second-to-last: with one neighbour on a side, the smaller of the two
    # deviations underestimates the run's factor, and on 10 % noise with five kernel groups the rest can
    # make a change next to it (a known limit of the run effects' neighbours).
    slow = data.draw(st.sampled_from([0, *range(2, n - 2), n - 1]), label="the slow run")
    levels = _ten_percent_noise(n, seed)
    report = detect_regressions(panel(_with_a_slow_run(levels, slow)))
    assert len(report.trends) == 24 and not report.insufficient

    # Pure 10 % noise may look like a step as often as the significance level allows, next to the slow run as
    # anywhere else (a bound on how many, or where, fails on some seeds by design); so the claim is that every
    # change reported is one the same noise makes without the slow factor, or without the slow run at all (at
    # the first or last run its factor cannot be estimated: the value only weighs less, much as if the run were
    # missing). The factor is estimated give or take its standard error, so a change at the margin of the
    # significance level (p within 10x of it) may cross it either way.
    expected = {_where(c) for c in detect_regressions(panel(levels)).changes} | {
        _where(c, removed_run=slow) for c in detect_regressions(panel(np.delete(levels, slow, axis=1))).changes
    }
    made = [c for c in report.changes if _where(c) not in expected and c.split.p_value < report.settings.alpha / 10]
    assert not made, [c.to_dict() for c in made]


@pytest.mark.slow
@PROPERTY
@given(n=st.integers(5, 30), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_a_whole_run_factor_of_1_8_inside_the_series_is_the_largest_host_effect_reported(n, data, seed):
    # inside: a run with two neighbours on each side (the first and last runs have one side only, where the
    # deviation only lowers the run's weight; the second and second-to-last, see the test above)
    slow = data.draw(st.integers(2, n - 3), label="the slow run")
    report = detect_regressions(panel(_with_a_slow_run(_ten_percent_noise(n, seed), slow)))
    # reported as run-wide host effects (per latency class, merged where they agree); with four kernel groups
    # per class a 6 % wobble of another run can pass as an effect too, but the slow run's is the largest
    day = (START + timedelta(days=7 * slow)).strftime("%Y-%m-%d")
    at_slow = [h for h in report.host_effects if h.kernel is None and h.observed_at[:10] == day]
    assert at_slow and all(1.4 < h.factor < 2.3 for h in at_slow)
    assert max(report.host_effects, key=lambda h: abs(math.log(h.factor))).observed_at[:10] == day


def test_a_series_of_two_runs_is_insufficient_not_unchanged():
    report = detect_regressions(panel(np.array([[1e6, 3e6]] * 4), kernels=1))
    assert report.trends == [] and len(report.insufficient) == 4 and report.changes == []
    assert not report.data_sufficient
    assert "not evidence of 'no regression'" in report.summary()
    assert regressions_json(report)["insufficientSeries"] == [
        {"kernel": "kernel0", "gpu": "nvidia-h100-80gb-hbm3", "metric": "latency", "runs": 2, "series": 4}
    ]


def test_a_one_run_excursion_in_the_middle_is_not_a_change():
    values = np.full((24, 10), 1e6)
    values[0, 5] = 2e6  # one series, one run: an outlier, not a persistent shift
    assert detect_regressions(panel(values)).changes == []


def test_a_series_stepping_at_two_consecutive_runs_gets_no_change_between_two_runs_that_agree():
    # Liger's layer_norm at 16384 on the CI runs: 5.0 5.0 | 0.97 | 1.24 1.24 | 1.03 | 0.89 x4. A segment
    # of one run is shorter than min_segment, so the best cuts leave one between the two runs at 1.24;
    # a change is reported between its two boundary runs, and those agree: no change there
    x = np.log([5.0, 5.0, 0.974, 1.242, 1.238, 1.026, 0.889, 0.894, 0.894, 0.89])
    splits = find_changes(x, 0.0125, DetectionSettings())
    assert 4 not in [s.index for s in splits]
    assert [s.index for s in splits] == [2, 6]  # 5.0 -> the rest, and the last step down to 0.89
    for s in splits:  # every boundary run sits with its own side
        before, after = x[s.start : s.index].mean(), x[s.index : s.stop].mean()
        assert abs(x[s.index - 1] - before) < abs(x[s.index - 1] - after)
        assert abs(x[s.index] - after) < abs(x[s.index] - before)


def test_a_level_held_only_by_runs_whose_host_is_in_doubt_is_no_change():
    # kto_loss backward (liger, batch 2) on the CI runs, host effects out, with its noise: the two runs of
    # 7644a0f (a host session that slowed most short kernels 1.2-3x) 7 % slower, the next run back
    x = np.array([12.62025, 12.64922, 12.65291, 12.65608, 12.65281, 12.6364, 12.65898, 12.73198, 12.73538, 12.66814])
    every_run_settled = find_changes(x, 0.01428, DetectionSettings())
    assert [s.index for s in every_run_settled] == [7]  # what detection reported before it knew the runs' host
    settled = np.array([True] * 7 + [False, False] + [True])
    assert find_changes(x, 0.01428, DetectionSettings(), settled=settled) == []
    # the same session, but the next run holds the level: a change, at the session's first run
    held = x.copy()
    held[9] = held[8]
    assert [s.index for s in find_changes(held, 0.01428, DetectionSettings(), settled=settled)] == [7]


def test_detection_reads_which_runs_are_settled_from_the_host_effects_it_takes_out():
    # short kernels 2x slower at runs 7 and 8 (a host effect of their class); a long kernel 9 % slower in
    # that session, then back (no change) or held at run 9 (a change)
    def levels(last: float) -> np.ndarray:
        rng = np.random.default_rng(7)
        base = np.r_[np.full(12, 20_000.0), np.full(12, 3_000_000.0)].reshape(24, 1)
        values = base * np.exp(rng.normal(0, 0.005, size=(24, 10)))
        values[:12, 7:9] *= 2.0
        values[20:, 7:9] *= 1.09
        values[20:, 9] *= last
        return values

    held = detect_regressions(panel(levels(1.09)))
    assert {(c.key.kernel, c.split.index) for c in held.changes} == {("kernel5", 7)}
    assert {h.observed_at[:10] for h in held.host_effects} == {
        (START + timedelta(days=7 * j)).strftime("%Y-%m-%d") for j in (7, 8)
    }
    assert detect_regressions(panel(levels(1.015))).changes == []


def test_student_t_tail_and_quantile():
    # reference values of Student's t distribution
    assert t_sf2(2.0, 10) == pytest.approx(0.07339, abs=1e-5)
    assert t_sf2(1.0, 1) == pytest.approx(0.5, abs=1e-9)
    assert t_quantile(0.05, 10) == pytest.approx(2.228, abs=1e-3)
    assert t_sf2(0.0, 5) == pytest.approx(1.0)


def test_settings_are_checked():
    with pytest.raises(ValueError, match="significance level.*1.5"):
        DetectionSettings(alpha=1.5)
    with pytest.raises(ValueError, match="minimum effect.*-0.1"):
        DetectionSettings(min_effect=-0.1)


def test_min_effect_and_alpha_are_honoured():
    x = np.log(np.r_[np.full(6, 1.0), np.full(6, 1.04)]) + np.tile([0.001, -0.001], 6)
    assert find_changes(x, 0.002, DetectionSettings()) == []  # 4 %: below the 5 % minimum
    assert [s.index for s in find_changes(x, 0.002, DetectionSettings(min_effect=0.02))] == [6]


# -------------------------------------------------------------------------------------------- causes


def test_detection_alone_names_environment_or_unknown_never_a_version_label():
    n = 8
    levels = np.full((24, n), 100_000.0) * np.exp(np.tile([0.01, -0.01], (24, n // 2)))
    versions = ["0.8.0"] * 4 + ["0.9.0"] * 4
    environments = ["sha256:" + "a" * 64] * 6 + ["sha256:" + "b" * 64] * 2
    levels[0, 4:] *= 1.5  # at the version change
    levels[1, 6:] *= 0.6  # at the environment change
    levels[2, 2:] *= 1.3  # nothing changes there
    report = detect_regressions(panel(levels, versions=versions, environments=environments))
    causes = {(c.key.kernel, c.trend.case_key): (c.cause, c.direction) for c in report.changes}
    # a different version label alone names no cause (issue 17: it was right for 2.4 % of changes); the
    # commits between the runs do (liger/attribution.py, tests/liger/test_attribution.py)
    assert causes == {
        ("kernel0", "case0"): ("unknown", "slowdown"),
        ("kernel0", "case1"): ("environment", "speedup"),
        ("kernel0", "case2"): ("unknown", "slowdown"),
    }
    [labelled] = [c.to_dict() for c in report.changes if c.key.kernel == "kernel0" and c.trend.case_key == "case0"]
    assert (labelled["before"]["ligerVersion"], labelled["after"]["ligerVersion"]) == ("0.8.0", "0.9.0")


def test_every_kernel_of_a_class_moving_at_one_run_and_staying_is_the_host():
    n = 8
    # every kernel of the class moves at run 5 and stays: the whole host moved, not 24 regressions of Liger
    # (kernels whose time grows with the size: a flat kernel is launch-bound and judged against the host's
    # speed, where such a move is no change at all, see test_a_launch_bound_series_is_judged_against_the_hosts_speed)
    sizes = np.tile([100_000.0, 140_000.0, 200_000.0, 280_000.0], 6).reshape(24, 1)
    levels = sizes * np.exp(np.tile([0.01, -0.01], (24, n // 2)))
    levels[:, 5:] *= 1.4
    report = detect_regressions(panel(levels))
    assert {c.cause for c in report.changes} == {"host"} and len(report.changes) == 24


# --------------------------------------------------------------------------------- inputs and shapes


def test_source_runs_in_a_catalogue_are_sweeps_split_by_gaps_and_environments():
    runs = []
    for sweep in range(6):
        t0 = START + timedelta(hours=2 * sweep)  # two hours apart, like the two 7644a0f runs
        for i in range(12):
            runs.append(
                run(f"k{i % 4}", "liger", f"c{i}", t0 + timedelta(minutes=3 * i), 1e5 * (1 + 0.01 * (sweep % 2)))
            )
    report = detect_regressions(runs)
    assert len(report.sources) == 6
    assert [s.observed_at for s in report.sources] == sorted(s.observed_at for s in report.sources)
    # the same case twice within seconds (Liger's CI does that): one sweep with a repeat, not two sweeps;
    # a software change starts another one
    twice = [run("k", "liger", "c", START, 1e5), run("k", "liger", "c", START + timedelta(seconds=12), 1e5)]
    assert len(detect_regressions(twice).sources) == 1
    other = [*twice, run("k", "liger", "c", START + timedelta(minutes=1), 1e5, environment="sha256:" + "f" * 64)]
    assert len(detect_regressions(other).sources) == 2


def test_memory_series_are_judged_and_kept_apart_from_latency():
    runs = []
    for j in range(8):
        when = START + timedelta(days=7 * j)
        for case in ("a", "b", "c"):
            runs.append(run("rms_norm", "liger", case, when, 1e6))
            mib = 300 if (case == "a" and j >= 4) else 200
            runs.append(
                run("rms_norm", "liger", case, when, mib * 2**20, memory=True, version="0.8.0" if j < 4 else "0.9.0")
            )
    report = detect_regressions(runs)
    assert len(report.trends) == 6
    [change] = report.changes
    d = change.to_dict()
    assert (d["metric"], d["direction"], d["cause"], d["caseKey"]) == ("peak_memory", "slowdown", "unknown", "a")
    assert d["magnitude"] == pytest.approx(1.5)


def test_sample_catalogue_runs_with_all_their_records():
    catalogue = SampleCatalogue()
    for j in range(6):
        for provider in ("liger", "torch", "huggingface"):
            slower = 1.25 if provider == "liger" and j >= 3 else 1.0
            catalogue.run(
                provider=provider,
                median_ns=int(1_000_000 * slower * (1 + 0.004 * (j % 2))),
                version="0.8.0" if j < 3 else "0.8.1",
                timestamp=f"2025-0{j + 1}-01 00:00:00",
            )
    report = detect_regressions(catalogue.manifests())
    [change] = report.changes
    assert (change.key.provider, change.cause, change.direction) == ("liger", "unknown", "slowdown")
    assert report.has_regressions and "| unknown | rms_norm |" in report.markdown()


def test_record_files_must_exist_and_hold_runs(tmp_path):
    with pytest.raises(RegressionInputError, match="nope.jsonl: no such file"):
        detect_in_record_files([tmp_path / "nope.jsonl"])
    empty = tmp_path / "empty" / "records.jsonl"
    empty.parent.mkdir()
    empty.write_text(
        json.dumps(
            {
                "apiVersion": "kernelindex.dev/v1alpha1",
                "kind": "BenchmarkProtocol",
                "metadata": {"name": "p"},
                "spec": {},
            }
        )
        + "\n"
    )
    with pytest.raises(RegressionInputError, match="no BenchmarkRun"):
        detect_in_record_files([empty])


# ------------------------------------------------------------------------------ Liger's real CI runs


@pytest.fixture(scope="module")
def ci_slice(tmp_path_factory) -> list[Path]:
    """The slice as `transform` lays it out: <source>/records.jsonl."""
    return unpack_ci_slice(tmp_path_factory.mktemp("liger-ci"))


@pytest.fixture(scope="module")
def ci_result(ci_slice, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("regressions")
    assert main(["regressions", "--records", *map(str, ci_slice), "--out", str(out)]) == 0
    assert (out / "regressions.html").exists()
    return json.loads((out / "regressions.json").read_text())


def test_real_runs_same_code_pair_has_almost_no_changes(ci_result):
    pair = [
        c
        for c in ci_result["changes"]
        if (c["before"]["source"], c["after"]["source"]) == ("7644a0f-v0.7.0", "7644a0f")
    ]
    assert ci_result["series"] > 200
    assert len(pair) <= 0.005 * ci_result["series"]


def test_real_runs_slow_host_is_a_host_effect(ci_result):
    # both 7644a0f runs were on a slow host: kernels of 10-100 us 1.5-2.5x slower, reported per run
    slow = [h for h in ci_result["hostEffects"] if h["source"] in ("7644a0f-v0.7.0", "7644a0f") and h["kernel"] is None]
    assert {h["source"] for h in slow} == {"7644a0f-v0.7.0", "7644a0f"}
    assert all(h["factor"] > 1.05 for h in slow) and max(h["factor"] for h in slow) > 1.4
    # and not as a list of series regressions into or out of the slow pair
    edges = [
        c
        for c in ci_result["changes"]
        if c["after"]["source"] == "7644a0f-v0.7.0" or c["before"]["source"] == "7644a0f"
    ]
    assert len(edges) <= 0.01 * ci_result["series"]


def test_real_runs_layer_norm_945_speedup_between_0_6_3_and_0_6_4(ci_result):
    found = [
        c
        for c in ci_result["changes"]
        if c["kernel"] == "layer_norm"
        and c["mode"] == "backward"
        and c["provider"] == "liger"
        and c["before"]["ligerVersion"] == "0.6.3"
        and c["after"]["ligerVersion"] == "0.6.4"
    ]
    # no clone in the tests: the code differs (d5648bf -> 49e6353) but no commit could be listed
    assert found and all(c["cause"] == "unknown" and c["direction"] == "speedup" for c in found)
    assert all("no Liger clone" in c["causes"][0]["note"] for c in found)
    assert any("hidden8192" in c["caseKey"] and 0.55 <= c["magnitude"] <= 0.82 for c in found)


def test_real_runs_cpo_and_simpo_forward_drop_at_0_6_1(ci_result):
    for kernel in ("fused_linear_cpo_loss", "fused_linear_simpo_loss"):
        found = [
            c
            for c in ci_result["changes"]
            if c["kernel"] == kernel
            and c["mode"] == "forward"
            and c["after"]["ligerVersion"] == "0.6.1"
            and c["before"]["ligerVersion"] == "0.6.0"
        ]
        assert found and all(c["cause"] == "unknown" and c["magnitude"] < 0.05 for c in found)


def test_cli_usage_errors(tmp_path, capsys):
    assert main(["regressions", "--records", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path)]) == 1
    assert "missing.jsonl: no such file" in capsys.readouterr().err
    assert main(["regressions", "--records", str(tmp_path / "x"), "--alpha", "2", "--out", str(tmp_path)]) == 2
    assert "significance level" in capsys.readouterr().err


def test_changes_are_grouped_by_cause_and_sorted_by_magnitude(ci_result):
    order = ["liger_kernel", "benchmark_script", "environment", "host", "unknown"]
    causes = [order.index(c["cause"]) for c in ci_result["changes"]]
    assert causes == sorted(causes)
    # by |log magnitude|, as far as the JSON's four decimals tell it (1.0599 and 0.9435 round apart)
    magnitudes = [c["magnitude"] for c in ci_result["changes"] if c["cause"] == "unknown"]
    assert len(magnitudes) > 1
    for a, b in zip(magnitudes[:-1], magnitudes[1:], strict=True):
        rounding = 5e-5 / min(a, b) + 5e-5 / min(a, b, 1.0)
        assert abs(math.log(a)) >= abs(math.log(b)) - rounding, (a, b)


# ----------------------------------------------------------------------------- run facts and adapters


def test_detection_reads_runs_only_through_run_facts_and_imports_no_source():
    """No module of detection/ imports liger/ or the site (a source plugs in through an adapter named in
    run_facts.SOURCE_ADAPTERS)."""
    import ast

    import kernelindex_pipeline.detection as detection

    for path in sorted(Path(detection.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text())
        imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
        assert not [m for m in imported if "liger" in m or "reporting" in m], (path.name, imported)


def test_a_second_source_plugs_in_with_its_adapter_and_unknown_sources_are_counted():
    from kernelindex_pipeline.detection.run_facts import RunFacts
    from kernelindex_pipeline.liger.run_facts import run_facts as liger_facts

    levels = np.full((24, 8), 100_000.0) * np.exp(np.tile([0.01, -0.01], (24, 4)))
    levels[0, 4:] *= 1.5
    runs = panel(levels)
    for r in runs:
        r["spec"]["sourceNative"]["source"] = "other-bench"

    def other(manifest) -> RunFacts | str:
        facts = liger_facts(manifest)
        return facts if isinstance(facts, str) else facts._replace(version="v-other", code_ref="abc1234")

    assert detect_regressions(runs).trends == []  # nobody knows "other-bench": every run skipped, with the reason
    [reason] = detect_regressions(runs).skipped
    assert "no run-facts adapter" in reason and "liger-kernel-bench" in reason
    report = detect_regressions(runs, adapters={"other-bench": other})
    [change] = report.changes
    assert change.trend.case_key == "case0" and change.to_dict()["after"]["codeRef"] == "abc1234"
    assert regressions_json(report)["sources"][0]["codeRef"] == "abc1234"


def test_runs_are_ordered_by_the_adapters_order_key():
    """A run of older code measured later is placed where its code belongs, when the adapter says so."""
    from kernelindex_pipeline.liger.run_facts import run_facts as liger_facts

    n = 8
    levels = np.full((24, n), 100_000.0) * np.exp(np.tile([0.01, -0.01], (24, n // 2)))
    levels[0, 3:] *= 1.5  # series 0 steps at sweep 3 ...
    levels[0, n - 1] /= 1.5  # ... but the last sweep measured the code of before the step
    code_time = {j: (START + timedelta(days=7 * j)).timestamp() for j in range(n)}
    code_time[n - 1] = code_time[1] + 3600.0  # its code sits between sweeps 1 and 2

    def by_code(manifest):
        facts = liger_facts(manifest)
        if isinstance(facts, str):
            return facts
        sweep = (datetime.fromisoformat(facts.observed_at.replace("Z", "+00:00")) - START).days // 7
        return facts._replace(order=code_time[sweep])

    in_time = detect_regressions(panel(levels))
    assert not [c for c in in_time.changes if c.split.index == 3 and c.trend.case_key == "case0"]
    report = detect_regressions(panel(levels), adapters={"liger-kernel-bench": by_code})
    [change] = [c for c in report.changes if c.trend.case_key == "case0" and c.key.kernel == "kernel0"]
    assert change.to_dict()["after"]["observedAt"][:10] == (START + timedelta(days=21)).strftime("%Y-%m-%d")
    assert change.split.index == 4  # sweeps 0, 1, the last one, 2 | 3 ...


# ------------------------------------------------------------------------ noise sources (issue 17 item 3)


@PROPERTY
@given(n=st.integers(9, 24), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_a_block_of_slow_host_runs_is_a_host_effect_not_two_steps(n, data, seed):
    """Two to five consecutive runs on a slow host (every kernel 1.6-2x slower, shorter ones more), with
    two runs or more on each side: reported as host effects at every run of the block, no change at its
    edges."""
    length = data.draw(st.integers(2, min(5, n - 4)), label="runs in the block")
    first = data.draw(st.integers(2, n - length - 2), label="first slow run")
    rng = np.random.default_rng(seed)
    level = rng.choice([20_000.0, 60_000.0, 300_000.0], size=(24, 1))
    levels = level * np.exp(rng.normal(0, 0.03, size=(24, n)))
    clean = detect_regressions(panel(levels))
    levels[:, first : first + length] *= np.where(level < 50_000, 2.0, 1.6)
    report = detect_regressions(panel(levels))
    # no step of the block's size (x1.6 or more) into or out of it
    assert not [c for c in report.changes if abs(math.log(c.magnitude)) > 0.3], [c.to_dict() for c in report.changes]
    # and no change of its own: every change is one the same noise makes without the block, as in the test
    # of one slow run (the block's factors are estimated, so one at the margin of the significance level,
    # p within 10x of it, may cross it either way)
    expected = {(c.key, c.trend.case_key, c.split.index) for c in clean.changes}
    made = [
        c
        for c in report.changes
        if (c.key, c.trend.case_key, c.split.index) not in expected and c.split.p_value < report.settings.alpha / 10
    ]
    assert not made, [c.to_dict() for c in made]
    block_days = {(START + timedelta(days=7 * j)).strftime("%Y-%m-%d") for j in range(first, first + length)}
    at_block = {h.observed_at[:10] for h in report.host_effects if h.kernel is None and h.factor > 1.3}
    assert at_block == block_days


def test_a_flat_gpu_bound_series_takes_no_host_correction_and_memory_none():
    """Kernels that slow down with the host at two runs, and in the same latency class one kernel whose
    values do not move at all (GPU-bound): the run effect is taken out of the first, not of the second;
    peak memory is never corrected."""
    n = 10
    rng = np.random.default_rng(3)
    levels = np.full((24, n), 100_000.0) * np.exp(rng.normal(0, 0.01, size=(24, n)))
    sensitive = np.arange(24) < 20  # kernels 0-4; kernel5 (series 20-23) reads the same on any host
    for slow in (3, 6):
        levels[sensitive, slow] *= 1.6
    runs = panel(levels)
    for j in range(n):  # a memory series of kernel0 that reads the same on every run
        runs.append(run("kernel0", "liger", "case0", START + timedelta(days=7 * j), 300 * 2**20, memory=True))
    report = detect_regressions(runs)
    assert report.changes == []
    flat = [t for t in report.trends if t.key.kernel == "kernel5"]
    moving = [t for t in report.trends if t.key.kernel == "kernel0" and t.key.metric == "latency"]
    memory = [t for t in report.trends if t.key.metric == "peak_memory"]
    assert len(flat) == 4 and len(moving) == 4 and len(memory) == 1
    # "none": within the flat series' own noise (1 %); its slope on the host is estimated from ten runs
    # of that noise, so it is 0 give or take about 0.02 (a correction of 0.01 on the 0.47 effect)
    for t in memory:
        assert np.max(np.abs(np.log(t.corrected / t.values))) < 1e-9, (t.key, t.values, t.corrected)
    for t in flat:
        assert np.max(np.abs(np.log(t.corrected / t.values))) < 0.02, (t.key, t.values, t.corrected)
    for t in moving:
        assert np.max(np.abs(np.log(t.corrected[[3, 6]] / t.values[[3, 6]]))) > 0.3


# A known failure of the host correction (open): on the panel of n=8, seed=720, up=False the newest run's
# host effect is estimated at +0.09 log for kernel0 alone (no host effect reported), so one run after the
# step the corrected series reads as a second step and stays pending (x0.838 at index 8) instead of a change
# at index 7. Hypothesis drew that case for one version of this test's source (derandomized examples follow
# the source); the detection at 221ea99, before this stop's restructuring, gives the same result.
KNOWN_HOST_CORRECTION_FAILURE = (
    "host correction: a step in one series of 24 at the run before the newest is partly taken as a host effect "
    "(n=8, seed=720, up=False); test_the_known_case_of_the_host_correction_failure pins it"
)


@pytest.mark.slow  # two detections per example: about 1.5 times the other property tests
@PROPERTY
@given(n=st.integers(8, 30), seed=st.integers(0, 2**32 - 1), up=st.booleans())
def test_a_step_at_the_newest_run_is_pending_never_a_change_one_run_early(n, seed, up):
    _pending_then_a_change(n, seed, up)


@pytest.mark.xfail(strict=True, reason=KNOWN_HOST_CORRECTION_FAILURE)
def test_the_known_case_of_the_host_correction_failure():
    """Fails today (strict: when the host correction is fixed this passes, and both xfail marks go)."""
    _pending_then_a_change(8, 720, False)


def _pending_then_a_change(n: int, seed: int, up: bool) -> None:
    # From eight runs: on six, two draws of +1.9 and +2.5 sd just before the step and one of -2.5 sd at
    # it leave a 25 % step at p = 0.003, honestly not pending (with the detection of before this test's
    # CI failure as with today's)
    rng = np.random.default_rng(seed)
    base = 200_000 * np.exp(np.clip(rng.normal(0, 0.03, size=(24, n)), -0.075, 0.075))
    base[0, n - 1] *= 1.25 if up else 1 / 1.25  # one series steps at the newest run
    report = detect_regressions(panel(base))
    assert not [c for c in report.changes if c.key.kernel == "kernel0" and c.trend.case_key == "case0"]
    [pending] = [c for c in report.pending if c.key.kernel == "kernel0" and c.trend.case_key == "case0"]
    d = pending.to_dict()
    assert d["after"]["observedAt"] == pending.trend.observed_at[-1] and d["runsAfter"] == 1
    assert (
        d["direction"] == ("slowdown" if up else "speedup")
        and abs(math.log(d["magnitude"] / (1.25 if up else 0.8))) < 0.1
    )
    assert regressions_json(report)["pending"] == [c.to_dict() for c in report.pending]
    assert report.counts()["pending"] == len(report.pending) <= 2  # the step, and noise at most once more
    # one run later the step has its second run: a change, no longer pending
    later = np.c_[base, base[:, -1:] * np.exp(rng.normal(0, 0.01, size=(24, 1)))]
    again = detect_regressions(panel(later))
    [change] = [c for c in again.changes if c.key.kernel == "kernel0" and c.trend.case_key == "case0"]
    assert change.split.index == n - 1
    assert not [c for c in again.pending if c.key.kernel == "kernel0" and c.trend.case_key == "case0"]


def test_pending_steps_have_their_own_section_on_the_page_and_in_the_json(tmp_path):
    from kernelindex_pipeline.reporting.regressions_page import write_regressions

    rng = np.random.default_rng(5)
    base = 200_000 * np.exp(np.clip(rng.normal(0, 0.01, size=(24, 8)), -0.025, 0.025))
    base[0, -1] *= 1.3
    paths = write_regressions(detect_regressions(panel(base)), tmp_path)
    saved = json.loads(paths.json.read_text())
    assert [(p["kernel"], p["caseKey"], p["runsAfter"]) for p in saved["pending"]] == [("kernel0", "case0", 1)]
    assert saved["counts"]["pending"] == 1 and saved["changes"] == []
    page = paths.page.read_text()
    assert '<section id="pending" data-pending-count="1">' in page and page.count('<tr class="pending">') == 1


def test_runs_are_named_by_version_and_commit_then_date_never_by_gpu_and_timestamp(tmp_path):
    from kernelindex_pipeline.detection.changes import run_name
    from kernelindex_pipeline.reporting.regressions_page import write_regressions

    stamp = "2025-08-01T00:15:17.000Z"
    ci = {"ligerVersion": "0.6.1", "codeRef": "2845fe83abc", "observedAt": stamp, "source": "2845fe8"}
    assert run_name(ci) == "0.6.1 (2845fe8) 2025-08-01"
    assert run_name({**ci, "codeRef": "v0.6.1"}) == "0.6.1 2025-08-01"  # a release tag says the version again
    catalogue_run = {**ci, "codeRef": None, "source": f"nvidia-h100-80gb-hbm3 {stamp}"}
    assert run_name(catalogue_run) == "0.6.1 2025-08-01"
    # on the page: a catalogue's runs (labelled by GPU and time) appear by version and date
    rng = np.random.default_rng(5)
    base = 200_000 * np.exp(np.clip(rng.normal(0, 0.01, size=(24, 8)), -0.025, 0.025))
    base[0, 4:] *= 1.3
    versions = ["0.8.0"] * 4 + ["0.9.0"] * 4
    page = write_regressions(detect_regressions(panel(base, versions=versions)), tmp_path).page.read_text()
    day = (START + timedelta(days=7 * 4)).strftime("%Y-%m-%d")
    assert f"and 0.9.0 {day}</summary>" in page
    assert "T00:" not in page.split('id="groups"')[-1].split("</section>")[0]


def test_the_answer_an_import_prints_names_the_worst_slowdowns_first(tmp_path):
    from kernelindex_pipeline.reporting.regressions_page import JSON_NAME, answer_lines, write_regressions

    rng = np.random.default_rng(5)
    base = 200_000 * np.exp(np.clip(rng.normal(0, 0.01, size=(24, 8)), -0.025, 0.025))
    base[0, 4:] *= 1.2
    base[4:8, 4:] *= 1.6  # kernel1, its four cases: one group, the worst
    write_regressions(detect_regressions(panel(base, versions=["0.8.0"] * 4 + ["0.9.0"] * 4)), tmp_path)
    lines = answer_lines(tmp_path / JSON_NAME)
    assert lines[0] == "regressions: 5 slowdowns in 1 group, the worst first:"
    assert lines[1].startswith("  ×1.6") and " kernel1 forward liger (+4 more) at 0.9.0 " in lines[1]
    assert lines[1].endswith(": unknown")
    assert answer_lines(tmp_path / "missing.json") == []


def test_a_launch_bound_series_is_judged_against_the_hosts_speed():
    """Six kernels take 140 us at every size (launch-bound: the time is the host's), six grow with the
    size (GPU-bound). From run 5 on the host's CPU is 25 % slower for good: the launch-bound kernels follow
    it, the GPU-bound ones do not. Not 24 steps: no change, except the one launch-bound series that really
    got 30 % slower at run 7."""
    n = 10
    rng = np.random.default_rng(11)
    launch = np.full((24, n), 140_000.0)
    gpu = np.tile([1e6, 2e6, 4e6, 8e6], 6).reshape(24, 1) * np.ones((1, n))  # each kernel's four sizes
    levels = np.vstack([launch, gpu]) * np.exp(rng.normal(0, 0.01, size=(48, n)))
    levels[:24, 5:] *= 1.25
    levels[1, 7:] *= 1.3  # kernel0 case1: a real change of its own
    report = detect_regressions(panel(levels, kernels=12))
    assert [(c.key.kernel, c.trend.case_key, c.split.index) for c in report.changes] == [("kernel0", "case1", 7)]
    assert report.pending == []


def test_a_catalogue_of_peak_memory_runs_only_is_judged_without_host_effects():
    runs = [
        run(
            "rms_norm",
            "liger",
            case,
            START + timedelta(days=7 * j),
            (300 if (case == "a" and j >= 4) else 200) * 2**20,
            memory=True,
        )
        for j in range(8)
        for case in "abcd"
    ]
    report = detect_regressions(runs)
    assert len(report.trends) == 4 and report.host_effects == []
    [change] = report.changes
    assert (change.trend.case_key, change.to_dict()["magnitude"]) == ("a", 1.5)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 6), st.floats(-30, 30, allow_nan=False)),
        min_size=1,
        max_size=60,
    ),
    st.booleans(),
)
def test_the_medians_of_groups_are_numpy_s_median_of_each_group(pairs, with_nan):
    """One sort instead of a np.median per (series, source run): the same floats, ties, even groups and
    NaN included."""
    groups = np.array([g for g, _ in pairs])
    values = np.array([v for _, v in pairs])
    if with_nan:
        values[0] = np.nan
    labels, group = np.unique(groups, return_inverse=True)
    counts = np.bincount(group)
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    expected = [np.median(values[group == g]) for g in range(len(labels))]
    np.testing.assert_array_equal(_group_medians(values, group, starts), np.array(expected))


def _source_runs_one_by_one(obs, keys, t):
    """detect._source_runs as it was, an observation at a time: the reference its vectorised form must equal."""
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


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3),  # series (its GPU: series % 2)
            st.integers(0, 20),  # time, in half hours: some runs apart by the session gap, some not
            st.sampled_from(["env-a", "env-b"]),
            st.sampled_from([None, "ci", "sweep"]),
            st.sampled_from(["0.6.0", "0.7.0", "unlabelled"]),
            st.sampled_from([None, "abc1234", "v0.7.0"]),
            st.one_of(st.none(), st.integers(0, 5)),  # the adapter's place on the timeline
        ),
        min_size=1,
        max_size=40,
    )
)
def test_source_runs_are_those_cut_an_observation_at_a_time(rows):
    """The source runs of a catalogue's observations (cut at a GPU, a gap, an environment or origin; each run's
    versions, code refs and origin tallied): those the loop over every observation made, Counter order included."""
    obs = _Observations()
    keys = [GpuSeriesKey("k", "full", "liger", "i", "w", "p", f"gpu-{s % 2}", "latency") for s in range(4)]
    for series, half_hours, environment, origin, version, code_ref, place in rows:
        obs.sid.append(series)
        obs.observed.append(f"2026-01-01T{half_hours // 2:02d}:{30 * (half_hours % 2):02d}:00Z")
        obs.order.append(math.nan if place is None else float(place))
        obs.environment.append(environment)
        obs.origin.append(origin)
        obs.version.append(version)
        obs.code_ref.append(code_ref)
        obs.source.append(None)
    t = np.array([1800.0 * h for _, h, *_ in rows])
    run_of, runs = _source_runs(obs, keys, t)
    want_run_of, want = _source_runs_one_by_one(obs, keys, t)
    assert run_of.tolist() == want_run_of.tolist()
    assert runs == want
    assert [list(r.versions.items()) for r in runs] == [list(r.versions.items()) for r in want]
    assert [list(r.code_refs.items()) for r in runs] == [list(r.code_refs.items()) for r in want]
