"""scripts/gpu_check end to end on a CPU host with stand-ins: offline (wheel directory holding the
stand-in liger-kernel wheel and sdist), through its bootstrap venv, the real sweep, records,
validation, a temporary catalogue and the evidence files."""

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from standin_release import build_fake_nvidia_smi, build_fake_torch, build_liger_wheel, build_release_tarball

REPO = Path(__file__).resolve().parent.parent
VERSION = "0.0.1"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu-check")
    wheels = build_liger_wheel(root / "wheels", VERSION).parent
    build_release_tarball(wheels, VERSION)  # the sdist travels in the wheel directory
    build_fake_nvidia_smi(root / "bin")
    return {"root": root, "wheels": wheels, "path": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}"}


def gpu_check(site, *args, device="NVIDIA H200"):
    fake = build_fake_torch(site["root"] / f"torch-{device}", device)
    env = {**os.environ, "PATH": site["path"], "KERNELINDEX_GPU_PYTHON": sys.executable}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(REPO / "scripts" / "gpu_check"), "--wheels", str(site["wheels"]), "--liger-version", VERSION,
         "--env-cache-dir", str(site["root"] / "envs"), "--extra-pythonpath", str(fake), *args],
        capture_output=True, text=True, timeout=600, env=env,
    )


def test_gpu_check_offline_through_its_bootstrap(site):
    evidence = site["root"] / "evidence"
    completed = gpu_check(
        site, "--kernels", "rms_norm,tiled_swiglu", "--evidence", str(evidence),
        "--bootstrap", "--bootstrap-dir", str(site["root"] / "bootstrap"),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.startswith("GPU check PASSED: nvidia-h200 x liger 0.0.1")
    assert "benchmark_rms_norm.py: ok, 24 rows" in completed.stdout
    # 54 records of the speed rows, (full profile) 6 peak-memory runs with their protocol, and the
    # sentinel's 11 (2 operations, 2 cases, 2 implementations, 1 protocol, 4 runs)
    assert "catalogue (temporary SQLite): 72 new, 0 already present" in completed.stdout
    # It ran from the bootstrap venv, the scripts from their own cached environment.
    assert (site["root"] / "bootstrap" / "bin" / "python").exists()

    assert sorted(p.name for p in evidence.iterdir()) == [
        "all_benchmark_data.csv", "environment.json", "logs.tar.gz", "records.jsonl", "summary.json", "summary.txt",
    ]
    summary = json.loads((evidence / "summary.json").read_text())
    assert summary["passed"] is True
    assert (summary["rows"], summary["runs"], summary["records"]) == (36, 40, 72)
    assert summary["records_by_kind"]["ExecutionEnvironment"] == 1
    # The H200 is in the hardware table (the project's own extension), so no probe facts were needed.
    assert summary["catalogue_note"] is None
    records = [json.loads(line) for line in (evidence / "records.jsonl").read_text().splitlines()]
    (environment,) = [r for r in records if r["kind"] == "ExecutionEnvironment"]
    assert environment["spec"]["hardware"] == {"vendor": "nvidia", "product": "NVIDIA H200", "architecture": "sm_90"}
    assert environment["spec"]["software"]["framework"]["version"] == "2.5.1+standin"
    assert environment["spec"]["settings"]["powerLimitWatts"] == 700.0
    with tarfile.open(evidence / "logs.tar.gz") as archive:
        names = archive.getnames()
    assert {"logs/benchmark_rms_norm.log", "logs/benchmark_tiled_mlp.log", "logs/host.json"} <= set(names)


def test_gpu_check_without_cuda_says_so(site):
    completed = gpu_check(site, device=None)
    assert completed.returncode == 2
    assert "no CUDA device on this host" in completed.stderr
