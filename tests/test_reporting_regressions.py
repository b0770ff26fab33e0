"""Series grouping and regression detection on constructed series."""

from __future__ import annotations

import pytest

from kernelindex_pipeline.reporting import detect_regressions
from kernelindex_pipeline.reporting.regressions import INSUFFICIENT, NO_CHANGE, SLOWDOWN, SPEEDUP
from kernelindex_pipeline.reporting.samples import SampleCatalogue
from kernelindex_pipeline.reporting.series import build_series, find_sweeps, parse_case_key


def two_versions(old_median, new_median, *, old_band=0.02, versions=("0.8.0", "0.8.1"), **kw):
    catalogue = SampleCatalogue()
    catalogue.run(version=versions[0], median_ns=old_median, band=old_band, timestamp="2025-08-01 10:00:00", **kw)
    catalogue.run(version=versions[1], median_ns=new_median, timestamp="2025-09-01 10:00:00", **kw)
    return catalogue


def test_clear_slowdown_is_a_regression_with_figures():
    # old band 0.98-1.02 ms; new median 1.5 ms is 47% beyond p80, far past the 10% threshold
    result = detect_regressions(two_versions(1_000_000, 1_500_000, kernel="swiglu", provider="liger").manifests())
    assert result.has_regressions
    [item] = result.regressions
    assert item.verdict == SLOWDOWN
    assert (item.kernel, item.mode, item.provider) == ("swiglu", "forward", "liger")
    assert item.gpu == "NVIDIA H100 80GB HBM3"
    assert item.case_key == "batch8-hidden4096-bf16"
    assert (item.old_version, item.new_version) == ("0.8.0", "0.8.1")
    assert (item.old_median_ns, item.new_median_ns) == (1_000_000, 1_500_000)
    assert (item.old_p20_ns, item.old_p80_ns) == (980_000, 1_020_000)
    assert item.change_pct == pytest.approx(50.0)
    assert item.beyond_band_pct == pytest.approx((1_500_000 / 1_020_000 - 1) * 100)
    assert "0.8.0 → 0.8.1" in result.markdown() and "+50.0%" in result.to_markdown()
    assert result.counts()["regressions"] == 1
    assert result.compared == 1 and result.insufficient == []


def test_change_inside_the_noise_band_is_not_flagged():
    # old band 0.9-1.1 ms (p20/p80 given explicitly); new 1.05 ms lies inside it
    catalogue = SampleCatalogue()
    catalogue.run(version="0.8.0", median_ns=1_000_000, p20_ns=900_000, p80_ns=1_100_000, band=None)
    catalogue.run(version="0.8.1", median_ns=1_050_000, timestamp="2025-09-01 10:00:00")
    result = detect_regressions(catalogue.manifests())
    assert not result.has_regressions
    assert [c.verdict for c in result.comparisons] == [NO_CHANGE]
    assert result.data_sufficient


def test_threshold_is_relative_to_the_band_edge():
    # new median 1.15 ms is 12.7% beyond p80 = 1.02 ms: a regression at 10%, not at 20%
    manifests = two_versions(1_000_000, 1_150_000).manifests()
    assert detect_regressions(manifests, threshold=0.10).has_regressions
    assert not detect_regressions(manifests, threshold=0.20).has_regressions
    # 1.12 ms is only 9.8% beyond p80: within a 10% threshold
    assert not detect_regressions(two_versions(1_000_000, 1_120_000).manifests()).has_regressions


def test_speedup_beyond_p20_is_an_improvement_not_a_regression():
    result = detect_regressions(two_versions(1_000_000, 600_000).manifests())
    assert not result.has_regressions
    [item] = result.improvements
    assert item.verdict == SPEEDUP and item.change_pct == pytest.approx(-40.0)


def test_single_version_is_insufficient_data_not_no_regression():
    catalogue = SampleCatalogue()
    catalogue.run(version="0.8.5", median_ns=1_000_000)
    result = detect_regressions(catalogue.manifests())
    assert result.comparisons == []
    assert not result.data_sufficient
    [insufficient] = result.insufficient_series
    assert result.insufficient == [insufficient] and result.compared == 0
    assert insufficient.reason == "measured at a single Liger version"
    assert insufficient.versions == ("0.8.5",)
    assert "not evidence of 'no regression'" in result.summary()


def test_missing_band_on_the_old_version_is_insufficient():
    result = detect_regressions(two_versions(1_000_000, 3_000_000, old_band=None).manifests())
    assert not result.has_regressions
    [pair] = result.comparisons
    assert pair.verdict == INSUFFICIENT and "no p20/p80 band" in pair.reason


def test_versions_are_ordered_by_packaging_not_by_text():
    # 0.10.0 is newer than 0.9.0 (text order says otherwise); 0.9.0 -> 0.10.0 got slower
    catalogue = SampleCatalogue()
    catalogue.run(version="0.10.0", median_ns=2_000_000, timestamp="2025-01-01 00:00:00")
    catalogue.run(version="0.9.0", median_ns=1_000_000, timestamp="2025-02-01 00:00:00")
    catalogue.run(version="0.2.1", median_ns=1_000_000, timestamp="2025-03-01 00:00:00")
    result = detect_regressions(catalogue.manifests())
    assert [(c.old_version, c.new_version, c.verdict) for c in result.comparisons] == [
        ("0.2.1", "0.9.0", NO_CHANGE), ("0.9.0", "0.10.0", SLOWDOWN)]


def test_latest_observation_wins_within_one_version():
    catalogue = SampleCatalogue()
    catalogue.run(version="0.8.0", median_ns=1_000_000, timestamp="2025-08-01 10:00:00")
    catalogue.run(version="0.8.1", median_ns=9_000_000, timestamp="2025-09-01 10:00:00")  # superseded
    catalogue.run(version="0.8.1", median_ns=1_010_000, timestamp="2025-09-02 10:00:00")
    [series] = build_series(catalogue.manifests()).series
    assert [(p.version, p.median_ns, p.runs_for_version) for p in series.points] == [
        ("0.8.0", 1_000_000, 1), ("0.8.1", 1_010_000, 2)]
    assert not detect_regressions(catalogue.manifests()).has_regressions


def test_series_are_kept_apart_by_provider_mode_gpu_and_workload():
    catalogue = SampleCatalogue()
    base = dict(version="0.8.0", median_ns=1_000_000)
    catalogue.run(**base)
    catalogue.run(**{**base, "version": "0.8.1", "median_ns": 5_000_000, "provider": "torch"})
    catalogue.run(**{**base, "version": "0.8.1", "median_ns": 5_000_000, "mode": "backward"})
    catalogue.run(**{**base, "version": "0.8.1", "median_ns": 5_000_000, "gpu": "NVIDIA A100-SXM4-80GB"})
    catalogue.run(**{**base, "version": "0.8.1", "median_ns": 5_000_000, "axes": {"batch": 16, "hidden": 4096}})
    series = build_series(catalogue.manifests())
    assert len(series) == 5
    result = detect_regressions(catalogue.manifests())
    assert not result.has_regressions and len(result.insufficient_series) == 5
    torch = next(s for s in series if s.provider == "torch")
    assert torch.role == "baseline"
    assert next(s for s in series if s.provider == "liger").role == "liger"


def test_bad_threshold_is_rejected_with_its_value():
    with pytest.raises(ValueError, match="threshold.*-0.5"):
        detect_regressions([], threshold=-0.5)


def test_case_key_parsing_and_sweeps():
    assert parse_case_key("batch8-seq1024-vocab128256-bf16") == ({"batch": 8, "seq": 1024, "vocab": 128256}, "bf16")
    catalogue = SampleCatalogue()
    # a sweep over seq at hidden=4096, a sweep over hidden at seq=512, and one lone fp32 case
    for seq in (512, 1024, 2048):
        catalogue.run(axes={"seq": seq, "hidden": 4096})
    for hidden in (1024, 2048):
        catalogue.run(axes={"seq": 512, "hidden": hidden})
    catalogue.run(axes={"seq": 512, "hidden": 4096}, dtype="fp32")
    workloads = [s.workload for s in build_series(catalogue.manifests())]
    sweeps = find_sweeps(workloads)
    described = sorted((s.x_axis, tuple(sorted(s.fixed.items())), s.dtype, len(s.workloads), len(s.owned))
                       for s in sweeps)
    # the crossing point seq=512/hidden=4096 is drawn on both lines, owned by one (tie: axis name order)
    assert described == [
        ("hidden", (("seq", 512),), "bf16", 3, 3),
        ("hidden", (("seq", 512),), "fp32", 1, 1),
        ("seq", (("hidden", 4096),), "bf16", 3, 2),
    ]
    owned = [d for s in sweeps for d in s.owned]
    assert sorted(owned) == sorted(w.digest for w in workloads)


def test_runs_without_their_referenced_records_still_form_series():
    # a partial catalogue export: only the runs; names come from sourceNative, roles from the provider table
    catalogue = SampleCatalogue()
    catalogue.run(provider="liger", version="0.8.0", median_ns=1_000_000)
    catalogue.run(provider="liger", version="0.8.1", median_ns=2_000_000, timestamp="2025-09-01 00:00:00")
    catalogue.run(provider="huggingface", version="0.8.1", median_ns=3_000_000)
    runs = [m for m in catalogue.manifests() if m["kind"] == "BenchmarkRun"]
    series = build_series(runs)
    assert {(s.provider, s.role, s.case_key) for s in series} == {
        ("liger", "liger", "batch8-hidden4096-bf16"), ("huggingface", "baseline", "batch8-hidden4096-bf16")}
    assert next(s for s in series if s.provider == "liger").workload.axes == {"batch": 8, "hidden": 4096}
    assert [c.verdict for c in detect_regressions(runs).comparisons] == [SLOWDOWN]


def test_providers_sharing_an_implementation_digest_stay_apart():
    # torch and torch_compile implementations have identical specs (one digest); torch is the baseline
    catalogue = SampleCatalogue()
    catalogue.run(provider="torch", median_ns=1_000_000)
    catalogue.run(provider="torch_compile", median_ns=5_000_000)
    series = build_series(catalogue.manifests())
    assert len({s.key.implementation_digest for s in series}) == 1
    assert {(s.provider, s.role, s.latest.median_ns) for s in series} == {
        ("torch", "baseline", 1_000_000), ("torch_compile", "other", 5_000_000)}
