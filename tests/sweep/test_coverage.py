"""Coverage of a sweep through real script processes: a previous successful sweep of the partition sets
the expectation; the next sweep has a script that crashes half-way, one that runs out of memory, one that
hangs, one the sweep does not select, and a kernel no script of the release writes."""

import csv
import shutil

import pytest

from kernelindex_pipeline.sweep.coverage import SweepCoverage, expected_cases
from kernelindex_pipeline.sweep.protocol import SweepRequest
from kernelindex_pipeline.sweep.run import run_sweep
from tests.support.standin_release import SCRIPTS, build_fake_torch, build_release_tarball, build_site

VERSION = "0.0.2"
GPU = "nvidia-h100-80gb-hbm3"
GEGLU = """
from utils import run_benchmarks, speed_bench

if __name__ == "__main__":
    config = {{"bsz": 2, "hidden_size": 1024, "dtype": "torch.bfloat16"}}
    for mode in {modes!r}:
        run_benchmarks(speed_bench, "geglu", "speed", "ms", "T", "sequence length", [1024, 2048],
                       ["liger", "huggingface"], [mode], [config])
    {ending}
"""
SPEED = """
from utils import run_benchmarks, speed_bench

if __name__ == "__main__":
    run_benchmarks(speed_bench, "{kernel}", "speed", "ms", "V", "vocab size", [4096, 8192], ["liger", "torch"],
                   ["forward", "full"], [{{"B": 8, "T": 2048}}])
"""
PREVIOUS = {
    "benchmark_model_configs.py": SCRIPTS["benchmark_model_configs.py"],
    "benchmark_rms_norm.py": SCRIPTS["benchmark_rms_norm.py"],
    "benchmark_geglu.py": GEGLU.format(modes=["forward", "backward", "full"], ending="pass"),
    "benchmark_swiglu.py": SPEED.format(kernel="swiglu"),
    "benchmark_cross_entropy.py": SPEED.format(kernel="cross_entropy"),
    "benchmark_softmax.py": SPEED.format(kernel="softmax"),
}
NOW = {
    **PREVIOUS,
    # forward rows written, then a crash before backward and full
    "benchmark_geglu.py": GEGLU.format(
        modes=["forward"], ending='raise RuntimeError("CUDA error: an illegal memory access was encountered")'
    ),
    "benchmark_cross_entropy.py": SCRIPTS["benchmark_cross_entropy.py"],  # out of memory
    "benchmark_softmax.py": SCRIPTS["benchmark_softmax.py"],  # hangs
}


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("coverage")
    site = build_site(root, VERSION)
    torch = build_fake_torch(root / "torch", "NVIDIA H100 80GB HBM3")

    def sweep(name, release_scripts, **fields):
        tarball = build_release_tarball(root / name / "release", VERSION, scripts=release_scripts)
        return run_sweep(
            SweepRequest(
                gpu=GPU,
                liger_version=VERSION,
                release=str(tarball),
                work_dir=str(root / name / "work"),
                env_cache_dir=str(root / "envs"),
                wheel_dir=str(site["wheels"]),
                extra_pythonpath=[str(torch)],
                extra_env={"PATH": site["path"]},
                script_timeout_s=10,  # the hung script waits it out; the others take well under 1 s
                **fields,
            )
        )

    previous = sweep("previous", PREVIOUS)
    expected_csv = root / "previous.csv"
    shutil.copyfile(previous.csv_path, expected_csv)
    with expected_csv.open("a", newline="") as handle:  # a kernel that no script of the release writes
        writer = csv.writer(handle)
        writer.writerow(
            [
                "fused_moe",
                "liger",
                "forward",
                "speed",
                "ms",
                "E",
                "experts",
                "8",
                "1.0",
                "0.9",
                "1.1",
                "{}",
                "NVIDIA H100 80GB HBM3",
                "2026-01-01 00:00:00",
                VERSION,
            ]
        )
    now = sweep(
        "now",
        NOW,
        expected_csv=str(expected_csv),
        scripts=[s for s in NOW if s not in ("benchmark_swiglu.py", "benchmark_model_configs.py")],
    )  # swiglu left out by the sweep's config
    return {"previous": previous, "now": now, "expected_csv": expected_csv}


def by_script(result):
    return {s.script: s for s in SweepCoverage.from_dict(result.coverage).scripts}


@pytest.mark.slow  # about 25 s on a quiet two-core machine: two sweeps, one waiting out its hung script
def test_a_previous_successful_sweep_covers_itself(sweeps):
    previous = SweepCoverage.from_dict(sweeps["previous"].coverage)
    assert previous.expectation == "release_history"  # the stand-in release ships one rms_norm row
    assert previous.totals()["missing"] == {}
    assert not sweeps["previous"].failed


def test_a_script_that_crashes_half_way_shows_its_missing_cases(sweeps):
    now = sweeps["now"]
    coverage = SweepCoverage.from_dict(now.coverage)
    assert (coverage.expectation, coverage.source) == ("previous_sweep", str(sweeps["expected_csv"]))
    scripts = by_script(now)
    geglu = scripts["benchmark_geglu.py"]
    # previous: 3 modes x 2 providers x 2 lengths; now: forward only, then the crash
    assert (geglu.status, geglu.expected, geglu.measured, geglu.missing) == ("failed", 12, 4, {"crash": 8})
    assert {(c["kernel_operation_mode"], c["reason"]) for c in geglu.missing_cases} == {
        ("backward", "crash"),
        ("full", "crash"),
    }
    assert len(geglu.missing_cases) == 8


def test_every_other_missing_case_has_its_reason(sweeps):
    scripts = by_script(sweeps["now"])
    assert scripts["benchmark_cross_entropy.py"].missing == {"out_of_memory": 8}
    assert scripts["benchmark_softmax.py"].missing == {"timeout": 8}
    assert (scripts["benchmark_swiglu.py"].status, scripts["benchmark_swiglu.py"].missing) == (
        "not_run",
        {"skipped_by_config": 8},
    )
    assert scripts["(no script)"].missing == {"no_script": 1}
    rms = scripts["benchmark_rms_norm.py"]
    assert (rms.status, rms.expected, rms.measured, rms.missing, rms.unexpected) == ("ok", 24, 24, {}, 0)
    totals = SweepCoverage.from_dict(sweeps["now"].coverage).totals()
    assert totals["expected"] == 12 + 8 + 8 + 8 + 1 + 24
    assert totals["missing"] == {"crash": 8, "no_script": 1, "out_of_memory": 8, "skipped_by_config": 8, "timeout": 8}
    assert any(
        line.startswith("coverage: 28/61 expected cases measured (from the previous sweep)")
        for line in sweeps["now"].summary_lines()
    )


def test_history_expectation_takes_each_kernels_newest_version():
    rows = [
        {
            "kernel_name": "k",
            "kernel_provider": "liger",
            "kernel_operation_mode": "full",
            "metric_name": "speed",
            "x_name": "T",
            "x_value": str(x),
            "extra_benchmark_config_str": "{}",
            "liger_version": v,
        }
        for x, v in [(1, "0.5.10"), (2, "0.5.9"), (3, "0.6.0"), (4, "0.6.0")]
    ]
    assert {case[5] for case in expected_cases(rows)["k"]} == {"3", "4"}  # 0.6.0 > 0.5.10 > 0.5.9
