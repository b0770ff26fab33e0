"""Each run's efficiency (reporting/efficiency.py): ceilings, flags, the sidecar, and no digest touched."""

from __future__ import annotations

import copy
import os

import pytest

from kernelindex_pipeline.liger.catalogue import default_catalogue
from kernelindex_pipeline.liger.identity import gpu_slug
from kernelindex_pipeline.liger.measured_rows import L2_LABEL
from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.reporting.efficiency import (
    FLAG_ABOVE_MEASURED,
    FLAG_ABOVE_PEAK,
    FLAG_L2,
    FLAG_LOW,
    STATUS_NO_COST,
    STATUS_NO_PEAK,
    default_peaks,
    derive_efficiency,
    place_sidecar,
    read_sidecar,
    write_sidecar,
)
from tests.support import FIXTURES
from tests.support.cli_process import run_cli
from tests.support.factories import SampleCatalogue

H100 = "NVIDIA H100 80GB HBM3"
MIB = 2**20


def softmax_run(catalogue: SampleCatalogue, rows: int, hidden: int, median_ns: int, **kwargs) -> dict:
    """A softmax forward on fp32 rows x hidden: 2 x rows x hidden x 4 bytes move (read x, write y)."""
    return catalogue.run(
        kernel="softmax",
        axes={"rows": rows, "hidden": hidden},
        dtype="fp32",
        tensors={"x": {"shape": [rows, hidden], "dtype": "fp32"}},
        median_ns=median_ns,
        **kwargs,
    )


def copy_sentinel(catalogue: SampleCatalogue, elements: int, median_ns: int, **kwargs) -> dict:
    return catalogue.run(
        kernel="sentinel_copy_1gib",
        mode="start",
        provider="torch",
        axes={"elements": elements},
        dtype="fp32",
        tensors={"source": {"shape": [elements], "dtype": "fp32"}},
        median_ns=median_ns,
        **kwargs,
    )


def facts_of(report, run):
    return report.runs[digest_of(run)]


def test_achieved_bandwidth_and_percent_of_the_datasheet_peak():
    catalogue = SampleCatalogue()
    # 2 x 65536 x 4096 x 4 bytes = 2 GiB (2^31 bytes) in 1 ms: 2.147 TB/s of the H100's 3.35 TB/s
    run = softmax_run(catalogue, 65536, 4096, 1_000_000)
    facts = facts_of(derive_efficiency(catalogue.manifests()), run)
    assert facts.status == "ok" and facts.bound == "bytes" and facts.bytes == 2**31
    assert facts.achieved == pytest.approx(2**31 / 1e-3)
    assert facts.pct_of_peak == pytest.approx(2**31 / 1e-3 / 3.35e12 * 100)
    assert facts.measured_ceiling is None and facts.pct_of_measured is None  # no sentinel on this environment
    assert facts.flags == []


def test_two_ceilings_datasheet_and_the_sweeps_measured_copy():
    catalogue = SampleCatalogue()
    run = softmax_run(catalogue, 65536, 4096, 1_000_000)  # 2.147 TB/s
    # the sweep's copy sentinel: 2 x 2^28 x 4 bytes (2 GiB) in 0.8 ms = 2.684 TB/s measured on the same host
    copy_sentinel(catalogue, 2**28, 800_000)
    report = derive_efficiency(catalogue.manifests())
    facts = facts_of(report, run)
    assert facts.measured_ceiling == pytest.approx(2**31 / 0.8e-3)
    assert facts.pct_of_measured == pytest.approx(80.0)
    assert facts.pct_of_peak == pytest.approx(2**31 / 1e-3 / 3.35e12 * 100)
    assert FLAG_ABOVE_MEASURED not in facts.flags


def test_above_the_measured_ceiling_is_implausible():
    catalogue = SampleCatalogue()
    run = softmax_run(catalogue, 65536, 4096, 1_000_000)  # 2.147 TB/s
    copy_sentinel(catalogue, 2**28, 1_250_000)  # measured 1.718 TB/s: the run reads 125 %
    facts = facts_of(derive_efficiency(catalogue.manifests()), run)
    assert facts.pct_of_measured == pytest.approx(125.0)
    assert FLAG_ABOVE_MEASURED in facts.flags and not facts.plausible
    assert FLAG_LOW not in facts.flags


def test_the_best_sentinel_run_of_an_environment_is_its_ceiling():
    catalogue = SampleCatalogue()
    copy_sentinel(catalogue, 2**28, 1_000_000, timestamp="2025-08-05 00:00:00")
    copy_sentinel(catalogue, 2**28, 800_000, timestamp="2025-08-05 01:00:00")
    report = derive_efficiency(catalogue.manifests())
    assert list(report.measured.values()) == [pytest.approx(2**31 / 0.8e-3)]


def test_working_set_that_fits_in_l2_is_flagged_implausible():
    catalogue = SampleCatalogue()
    # 2 x 1024 x 1024 x 4 = 8 MiB, inside the H100's 50 MiB L2; 8 MiB in 2 µs = 4.19 TB/s (125 %)
    small = softmax_run(catalogue, 1024, 1024, 2_000)
    facts = facts_of(derive_efficiency(catalogue.manifests()), small)
    assert facts.l2_bytes == 50 * MIB and facts.l2_set_bytes == 8 * MIB
    assert FLAG_L2 in facts.flags and FLAG_ABOVE_PEAK in facts.flags and not facts.plausible
    assert FLAG_LOW not in facts.flags


def test_embedding_table_in_l2_is_flagged_though_its_traffic_is_not():
    """The forward's gathers re-read the table: when the table fits in L2 the reading is implausible."""
    catalogue = SampleCatalogue()
    axes = {"batch": 8, "seq": 2048, "hidden": 4096, "vocab": 1024}
    tensors = {"input_ids": {"shape": [8, 2048], "dtype": "int64"}, "weight": {"shape": [1024, 4096], "dtype": "fp32"}}
    run = catalogue.run(kernel="embedding", axes=axes, dtype="fp32", tensors=tensors, median_ns=200_000)
    facts = facts_of(derive_efficiency(catalogue.manifests()), run)
    assert facts.bytes > 50 * MIB and facts.l2_set_bytes == 16 * MIB
    assert FLAG_L2 in facts.flags


def test_the_sweep_hosts_reported_l2_wins_over_the_datasheet():
    catalogue = SampleCatalogue()
    run = softmax_run(catalogue, 1024, 1024, 20_000, environment_labels={L2_LABEL: str(4 * MIB)})
    facts = facts_of(derive_efficiency(catalogue.manifests()), run)
    assert facts.l2_bytes == 4 * MIB and FLAG_L2 not in facts.flags


def test_low_efficiency_under_the_operators_threshold():
    catalogue = SampleCatalogue()
    run = softmax_run(catalogue, 65536, 4096, 4_000_000)  # 0.537 TB/s = 16 % of 3.35 TB/s
    assert FLAG_LOW in facts_of(derive_efficiency(catalogue.manifests()), run).flags
    assert FLAG_LOW not in facts_of(derive_efficiency(catalogue.manifests(), low_threshold=0.1), run).flags
    with pytest.raises(ValueError, match="threshold"):
        derive_efficiency(catalogue.manifests(), low_threshold=30)


def test_flop_bound_run_uses_the_peak_of_its_dtype():
    catalogue = SampleCatalogue()
    axes = {"batch": 4, "seq": 1024, "hidden": 4096, "intermediate": 11008}
    tensors = {
        "x": {"shape": [4, 1024, 4096], "dtype": "bf16"},
        "w_gate": {"shape": [11008, 4096], "dtype": "bf16"},
        "w_up": {"shape": [11008, 4096], "dtype": "bf16"},
        "w_down": {"shape": [4096, 11008], "dtype": "bf16"},
    }
    run = catalogue.run(kernel="swiglu", axes=axes, tensors=tensors, median_ns=2_000_000)
    facts = facts_of(derive_efficiency(catalogue.manifests()), run)
    flops = 6 * 4 * 1024 * 4096 * 11008
    assert facts.bound == "flops" and facts.flops == flops and facts.dtype == "bf16"
    assert facts.pct_of_peak == pytest.approx(flops / 2e-3 / 989.5e12 * 100)


def test_a_kernel_without_a_formula_reads_no_cost_model_never_zero():
    catalogue = SampleCatalogue()
    run = catalogue.run(kernel="dyt", axes={"rows": 4096, "hidden": 1024})
    facts = facts_of(derive_efficiency(catalogue.manifests()), run)
    assert facts.status == STATUS_NO_COST and "no cost model" in facts.reason
    assert facts.pct_of_peak is None and facts.achieved is None and facts.flags == []


def test_a_gpu_without_a_sourced_peak_reads_no_peak():
    catalogue = SampleCatalogue()
    run = softmax_run(catalogue, 1024, 4096, 100_000, gpu="NVIDIA A10G")
    facts = facts_of(derive_efficiency(catalogue.manifests()), run)
    assert facts.status == STATUS_NO_PEAK and facts.pct_of_peak is None and facts.achieved > 0


def test_every_gpu_of_the_catalogue_has_a_sourced_peak_or_says_why_not():
    peaks = default_peaks()
    for name in default_catalogue("full").hardware:
        assert peaks.get(gpu_slug(name)) is not None or name in peaks.unsourced, name
    for name in (
        "NVIDIA A100-SXM4-40GB",
        "NVIDIA A100-SXM4-80GB",
        "NVIDIA A100-PCIE-40GB",
        "NVIDIA A100 80GB PCIe",
        "NVIDIA H100 80GB HBM3",
        "NVIDIA H100 PCIe",
        "NVIDIA H100 NVL",
        "NVIDIA H200",
        "NVIDIA B200",
        "NVIDIA B300 SXM6 AC",
        "NVIDIA GeForce RTX 3090",
        "NVIDIA GeForce RTX 4090",
    ):
        found = peaks.get(gpu_slug(name))
        assert found is not None and found.bf16TFLOPS and found.fp32TFLOPS and found.source, name


def _ci_slice_manifests() -> list[dict]:
    """Records of real Liger CI rows (rms_norm on H100, liger and huggingface)."""
    from kernelindex_pipeline.liger import import_csv

    return list(import_csv(FIXTURES / "liger-ci" / "7644a0f.csv").manifests.values())


def test_derived_figures_never_change_a_digest(tmp_path):
    manifests = _ci_slice_manifests()
    pristine = copy.deepcopy(manifests)
    digests = [digest_of(m) for m in manifests]
    report = derive_efficiency(manifests)
    write_sidecar(report, tmp_path)
    assert manifests == pristine and [digest_of(m) for m in manifests] == digests
    assert any(r.status == "ok" for r in report.runs.values())
    assert set(report.runs) <= set(digests)  # keyed by the records' own digests, beside them


def test_sidecar_round_trips(tmp_path):
    report = derive_efficiency(_ci_slice_manifests())
    path = write_sidecar(report, tmp_path)
    again = read_sidecar(path)
    assert again.runs == report.runs and again.low_threshold == report.low_threshold
    assert path.read_bytes() == write_sidecar(report, tmp_path / "..").read_bytes()  # byte-stable
    (tmp_path / "bad.jsonl").write_text('{"kind": "something else"}\n')
    with pytest.raises(ValueError, match="line 1"):
        read_sidecar(tmp_path / "bad.jsonl")


@pytest.mark.slow
def test_export_carries_the_figures_in_a_sidecar_not_in_the_records(tmp_path, sqlite_url):
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from kernelindex_pipeline.records.io import load_manifests

    manifests = _ci_slice_manifests()
    with CatalogueStore.open(sqlite_url) as store:
        store.publish(manifests, partition="ci|0.7.0")
    out = tmp_path / "export"
    completed = run_cli("export", "--catalogue", sqlite_url, "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    exported = {digest_of(m) for _, m in load_manifests(out / "kernelindex-catalogue.jsonl")}
    assert exported == {digest_of(m) for m in manifests}
    assert "pctOfPeak" not in (out / "kernelindex-catalogue.jsonl").read_text()
    sidecar = read_sidecar(out / "efficiency.jsonl")
    assert set(sidecar.runs) <= exported and any(r.pct_of_peak for r in sidecar.runs.values())


def test_regressions_page_says_how_a_change_moved_efficiency(tmp_path):
    from kernelindex_pipeline.detection.detect import detect_regressions
    from kernelindex_pipeline.reporting.regressions_page import write_regressions

    catalogue = SampleCatalogue()
    for sweep in range(6):  # Liger 30 % slower from the fourth sweep (a new version) on; torch unchanged
        for provider in ("liger", "torch"):
            slower = 1.3 if provider == "liger" and sweep >= 3 else 1.0
            softmax_run(
                catalogue,
                65536,
                4096,
                int(1_000_000 * slower * (1 + 0.004 * (sweep % 2))),
                provider=provider,
                version="0.8.0" if sweep < 3 else "0.8.1",
                timestamp=f"2025-0{sweep + 1}-01 00:00:00",
            )
    manifests = catalogue.manifests()
    regressions = detect_regressions(manifests)
    assert len(regressions.slowdowns) == 1
    page = write_regressions(regressions, tmp_path, efficiency=derive_efficiency(manifests)).page.read_text()
    # 2 GiB in ~1.002 ms = 64 % of 3.35 TB/s before, in ~1.302 ms = 49 % after
    assert "64 % → 49 % of peak" in page
    assert "of peak" not in write_regressions(regressions, tmp_path / "plain").page.read_text()


def test_a_sweep_hosts_reported_l2_becomes_its_environment_label():
    from kernelindex_pipeline.sweep.environment import environment_labels
    from kernelindex_pipeline.sweep.host import HostCapture

    labels = environment_labels(HostCapture(cuda_available=True, l2_cache_bytes=52428800))
    assert labels[L2_LABEL] == "52428800"
    assert L2_LABEL not in environment_labels(HostCapture(cuda_available=True))


def test_the_reports_series_path_gives_the_same_figures_as_every_run():
    """derive_series_efficiency derives efficiency from the series (no work per run); the facts of the runs they draw
    are the ones the per-run derivation (sidecar, export, asset) gives."""
    from kernelindex_pipeline.reporting.efficiency import derive_series_efficiency
    from kernelindex_pipeline.reporting.series import RecordIndex, build_series

    catalogue = SampleCatalogue()
    for sweep in range(3):
        softmax_run(
            catalogue,
            65536,
            4096,
            1_000_000 + 1000 * sweep,
            version=f"0.8.{sweep}",
            timestamp=f"2025-0{sweep + 1}-01 00:00:00",
        )
        softmax_run(catalogue, 1024, 1024, 2_000, version=f"0.8.{sweep}", timestamp=f"2025-0{sweep + 1}-01 00:00:00")
        catalogue.run(
            kernel="dyt",
            axes={"rows": 4096, "hidden": 1024},
            version=f"0.8.{sweep}",
            timestamp=f"2025-0{sweep + 1}-01 00:00:00",
        )
    copy_sentinel(catalogue, 2**28, 800_000)
    index = RecordIndex(catalogue.manifests())
    every = derive_efficiency(index)
    drawn = derive_series_efficiency(index, build_series(index))
    assert set(drawn.runs) == set(every.runs)  # one run per series and version here: every run is a point
    assert {d: drawn.runs[d] for d in drawn.runs} == {d: every.runs[d] for d in drawn.runs}
    assert drawn.status_counts() == every.status_counts() == {"ok": 7, "no cost model": 3}


def test_a_placed_sidecar_is_the_derivation_s_file_until_the_next_one_replaces_it(tmp_path, monkeypatch):
    """Placed beside an export or a site as a link to the derivation's file (no 800 MB copy a night); the
    derivation's next file replaces its own, so what was placed keeps the bytes it had until placed again.
    Where no link can be made, a copy."""
    derived, export = tmp_path / "efficiency", tmp_path / "export"
    derived.mkdir(), export.mkdir()
    sidecar = derived / "efficiency.jsonl"
    sidecar.write_text("night 1\n")
    placed = place_sidecar(sidecar, export)
    assert os.path.samefile(placed, sidecar) and placed.read_text() == "night 1\n"
    (derived / "next").write_text("night 2\n")
    os.replace(derived / "next", sidecar)  # as every writer of a sidecar does
    assert placed.read_text() == "night 1\n"
    assert place_sidecar(sidecar, export).read_text() == "night 2\n" and os.path.samefile(placed, sidecar)

    def no_links(*_):
        raise OSError(18, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_links)
    other = tmp_path / "site"
    other.mkdir()
    copied = place_sidecar(sidecar, other)
    assert copied.read_text() == "night 2\n" and not os.path.samefile(copied, sidecar)
    assert not list(other.glob("*.tmp"))
