"""scripts/gpu_check end to end on a CPU host with stand-ins: offline (wheel directory holding the
stand-in liger-kernel wheels and sdists of two releases), through its bootstrap venv, the real sweeps,
records, validation, one temporary catalogue, the regression detector over the two releases, the
report and the evidence tree."""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.standin_release import (
    build_fake_nvidia_smi,
    build_fake_torch,
    build_liger_wheel,
    build_release_tarball,
)

REPO = ROOT
VERSION, OLDER = "0.0.2", "0.0.1"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu-check")
    for version in (VERSION, OLDER):
        wheels = build_liger_wheel(root / "wheels", version).parent
        build_release_tarball(wheels, version)  # the sdists travel in the wheel directory
    build_fake_nvidia_smi(root / "bin")
    return {"root": root, "wheels": wheels, "path": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"}


def gpu_check(site, *args, device="NVIDIA H200", versions=f"{VERSION},{OLDER}"):
    fake = build_fake_torch(site["root"] / f"torch-{device}", device)
    env = {**os.environ, "PATH": site["path"], "KERNELINDEX_GPU_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [
            str(REPO / "scripts" / "gpu_check"),
            "--wheels",
            str(site["wheels"]),
            "--liger-version",
            versions,
            "--env-cache-dir",
            str(site["root"] / "envs"),
            "--extra-pythonpath",
            str(fake),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_gpu_check_offline_through_its_bootstrap(site):
    evidence = site["root"] / "evidence"
    completed = gpu_check(
        site,
        "--kernels",
        "rms_norm,tiled_swiglu",
        "--evidence",
        str(evidence),
        "--bootstrap",
        "--bootstrap-dir",
        str(site["root"] / "bootstrap"),
        "--rounds",
        "2",
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.startswith(f"GPU check PASSED: nvidia-h200 x liger {VERSION}, {OLDER}")
    assert "benchmark_rms_norm.py: ok, 24 rows" in completed.stdout
    # Per release: 54 records of the speed rows, (full profile) 6 peak-memory runs with their protocol,
    # and the sentinel's 11 (2 operations, 2 cases, 2 implementations, 1 protocol, 4 runs).
    assert "catalogue (temporary SQLite): 72 new, 0 already present" in completed.stdout
    # It ran from the bootstrap venv, the scripts from their own cached environments.
    assert (site["root"] / "bootstrap" / "bin" / "python").exists()

    assert sorted(p.name for p in evidence.iterdir()) == [
        OLDER,
        VERSION,
        "regressions.json",
        "regressions.md",
        "report",
        "summary.json",
        "summary.txt",
    ]
    for version in (VERSION, OLDER):
        assert sorted(p.name for p in (evidence / version).iterdir()) == [
            "all_benchmark_data.csv",
            "environment.json",
            "logs.tar.gz",
            "records.jsonl",
            "samples.tar.gz",
            "summary.txt",
            "sweep.json",
        ]
    summary = json.loads((evidence / "summary.json").read_text())
    assert summary["passed"] is True
    this = summary["versions"][VERSION]
    assert (this["rows"], this["runs"], this["records"]) == (36, 40, 72)
    assert this["records_by_kind"]["ExecutionEnvironment"] == 1
    assert (
        this["raw_samples"]["speed_runs"] == this["raw_samples"]["runs_with_raw_samples"] == 30 + 4
    )  # Liger + sentinel
    assert [m["status"] for m in this["sentinel"]] == ["ok"] * 4
    assert this["coverage"]["totals"]["missing"] == {}
    # The H200 is in the hardware table (the project's own extension), so no probe facts were needed.
    assert summary["catalogue_notes"] == []

    # Both releases ran on one environment: every series spans the two versions.
    records = [
        json.loads(line) for v in (VERSION, OLDER) for line in (evidence / v / "records.jsonl").read_text().splitlines()
    ]
    environments = {json.dumps(r, sort_keys=True) for r in records if r["kind"] == "ExecutionEnvironment"}
    assert len(environments) == 1
    environment = json.loads(environments.pop())
    assert environment["spec"]["hardware"] == {"vendor": "nvidia", "product": "NVIDIA H200", "architecture": "sm_90"}
    assert environment["spec"]["software"]["framework"]["version"] == "2.5.1+standin"
    assert "settings" not in environment["spec"]  # nvidia-smi state is a label, not identity
    assert environment["metadata"]["labels"]["power_limit_watts"] == "700"
    regressions = summary["regressions"]
    # Two releases are two runs per series: every series (30 Liger + 4 sentinel latency series, 6 peak-memory
    # series) is accounted for as insufficient (a change needs two runs on each side), none as "no change".
    assert regressions["series"] == regressions["insufficient"] == 40 and regressions["judged"] == 0
    saved = json.loads((evidence / "regressions.json").read_text())
    assert saved["series"] == 0 and saved["insufficient"] == 40 and saved["changes"] == []
    assert (evidence / "report" / "index.html").is_file() and list((evidence / "report" / "kernels").glob("*.html"))

    with tarfile.open(evidence / VERSION / "logs.tar.gz") as archive:
        names = archive.getnames()
    assert {
        "logs/round-1/benchmark_rms_norm.log",
        "logs/round-2/benchmark_tiled_mlp.log",
        "logs/round-2/all_benchmark_data.csv",
        "logs/host.json",
        "logs/sentinel-start.log",
    } <= set(names)
    with tarfile.open(evidence / VERSION / "samples.tar.gz") as archive:
        samples = archive.getnames()
    runs = [r for r in records if r["kind"] == "BenchmarkRun" and r["metadata"]["labels"]["liger_version"] == VERSION]
    artifacts = {
        r["spec"]["timing"]["rawSamples"]["digest"].removeprefix("sha256:")
        for r in runs
        if "rawSamples" in r["spec"].get("timing", {})
    }
    # Two rounds: each Liger run's artifact lists its rounds' call artifacts, all in the tarball.
    assert {f"logs/samples/{digest}.json" for digest in artifacts} < set(samples)
    with tarfile.open(evidence / VERSION / "samples.tar.gz") as archive:
        listed = [json.load(archive.extractfile(f"logs/samples/{d}.json")) for d in sorted(artifacts)]
    rounds = [content for content in listed if content["format"] == "kernelindex-sweep-rounds/v1"]
    assert len(rounds) == 30 and all(len(content["rounds"]) == 2 for content in rounds)
    assert {r["artifact"]["digest"].removeprefix("sha256:") for c in rounds for r in c["rounds"]} <= {
        Path(n).stem for n in samples
    }


def test_gpu_check_without_cuda_says_so(site):
    completed = gpu_check(site, device=None, versions=VERSION)
    assert completed.returncode == 2
    assert "no CUDA device on this host" in completed.stderr


# A selection of liger-kernel 0.8.5's PKG-INFO lines (its sdist on PyPI), each verbatim.
LIGER_0_8_5_REQUIRES = """Metadata-Version: 2.4
Name: liger_kernel
Version: 0.8.5
Requires-Dist: torch>=2.1.2
Requires-Dist: triton>=2.3.1
Provides-Extra: cutile
Requires-Dist: cuda-tile>=1.5.0; extra == "cutile"
Provides-Extra: cutedsl
Requires-Dist: nvidia-cutlass-dsl>=4.6.0; extra == "cutedsl"
Requires-Dist: apache-tvm-ffi>=0.1.0; extra == "cutedsl"
Provides-Extra: lck
Requires-Dist: liger-cute-kernels==0.8.5; extra == "lck"
Provides-Extra: dev
Requires-Dist: transformers>=5.0.0; extra == "dev"
"""


def test_download_wheels_takes_an_extra_s_requirements_from_the_release_metadata():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_check_module", REPO / "scripts" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.extra_requirements(LIGER_0_8_5_REQUIRES, ["cutedsl"]) == [
        "nvidia-cutlass-dsl>=4.6.0",
        "apache-tvm-ffi>=0.1.0",
    ]
    assert module.extra_requirements(LIGER_0_8_5_REQUIRES, ["cutedsl", "lck"])[-1] == "liger-cute-kernels==0.8.5"
    assert module.extra_requirements(LIGER_0_8_5_REQUIRES, []) == []  # never torch/triton: the host has them
