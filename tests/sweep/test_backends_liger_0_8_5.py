"""liger-kernel 0.8.5 itself, on a CPU: the real wheel from PyPI (pure Python) installed with --no-deps
next to the stand-in torch/triton. Its real `liger_kernel` package (`__init__`, `functional`, the
`backends` dispatcher) imports without CUDA; the one thing the dispatcher's import needs of torch is
`torch.compiler.disable` (a decorator on `dispatch()`, standin_release.TORCH_FOR_LIGER_DISPATCH). Its
real resolution order is checked through its real `functional` wrappers, and the sample hook must
record what the real dispatcher resolved, in a script subprocess and through a whole sweep.

Liger's own kernel modules cannot import here (they are Triton kernels: `triton.language`); its
dispatcher records that as discovery failures and goes on. So the implementations the dispatcher
chooses between are registered through Liger's own `register_op`, with the names, capability gates and
preference ranks of 0.8.5's `ops/backends/_triton` and `_cutedsl` modules.

Downloads from the package index (as CI can): a failed download fails these tests, never skips them."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelindex_pipeline.liger import import_csv
from kernelindex_pipeline.liger.normalize import MeasuredContext
from kernelindex_pipeline.sweep.backends import DISPATCH_SPOOL_FD_VARIABLE, read_dispatches
from kernelindex_pipeline.sweep.protocol import SweepRequest
from kernelindex_pipeline.sweep.run import run_sweep
from kernelindex_pipeline.sweep.samples import HOOK_DIR, private_spool
from tests.support.standin_release import (
    add_liger_dispatcher_needs,
    build_fake_nvidia_smi,
    build_fake_torch,
    build_release_tarball,
)

pytestmark = pytest.mark.network

VERSION = "0.8.5"
WHEEL = "liger_kernel-0.8.5-py3-none-any.whl"
WHEEL_SHA256 = "60789cd576af073ab9b192b570d2597fd0cdad489cd62fb44fb16256d43754c9"  # PyPI's file, 910,117 bytes
H100 = "nvidia-h100-80gb-hbm3"

# 0.8.5's registrations (liger_kernel/ops/backends/_triton/{swiglu,cross_entropy}.py and
# _cutedsl/{swiglu,cross_entropy}.py): same op, impl name, capability and preference rank. 0.8.5 ranks
# the CuTe DSL cross_entropy at 60, behind Triton's 50 (tied-to-slower on Blackwell, says its comment),
# swiglu's at 10. `standin-*` are ours: available anywhere, for the pins to choose from.
STANDIN_IMPLS = """
from liger_kernel.backends import Capability, register_op


def _impl(name):
    def forward(*args, **kwargs):
        return name
    return forward


CUTEDSL = Capability(min_cc=(9, 0), modules=["cutlass.cute", "torch"])
for op, cutedsl_rank in (("swiglu", 10), ("cross_entropy", 60)):
    register_op(op, impl_name="nvidia-triton", capability=Capability(modules=["triton"]), preference_rank=50)(_impl("nvidia-triton"))
    register_op(op, impl_name="nvidia-cutedsl", capability=CUTEDSL, preference_rank=cutedsl_rank)(_impl("nvidia-cutedsl"))
    for rank, name in ((70, "standin-a"), (80, "standin-b"), (90, "standin-c")):
        register_op(op, impl_name=name, preference_rank=rank)(_impl(name))
"""

# One call of the real liger_kernel.functional.swiglu under the phase's set_impl() and impl= argument.
CALL_SWIGLU = """
import importlib.metadata
import json
import sys

import torch

import liger_kernel  # the real package: its __init__ imports functional, which imports the dispatcher
import standin_liger_impls  # noqa: F401
from liger_kernel import functional
from liger_kernel.backends import available_impls, set_impl
from liger_kernel.backends.registry import get_discovery_failures

phase = json.loads(sys.argv[1])
if phase.get("set_impl"):
    set_impl(phase["set_impl"])
x = torch.randn(4, 8)
try:
    ran = functional.swiglu(x, x, impl=phase.get("impl"))
except Exception as error:
    ran = f"{type(error).__name__}: {error}"
print(json.dumps({
    "ran": ran,
    "cuda": torch.cuda.is_available(),
    "liger_kernel": liger_kernel.__file__,
    "version": importlib.metadata.version("liger-kernel"),
    "available": available_impls("swiglu"),
    "discovery_failures": {path: f"{kind.__name__}: {message}" for path, (kind, message) in get_discovery_failures().items()},
}))
"""

# The registrations are part of the script (the sweep checks that the scripts' imports resolve in
# their environment; a module of our own on the path would not).
CROSS_ENTROPY_SCRIPT = (
    STANDIN_IMPLS
    + """
import torch
import triton
from liger_kernel.functional import cross_entropy
from utils import QUANTILES, SingleBenchmarkRunOutput, run_benchmarks


def bench(input):
    logits, target = torch.randn(input.x, 128), torch.randn(input.x)
    fn = (lambda: cross_entropy(logits, target)) if input.kernel_provider == "liger" else (lambda: None)
    ms_50, ms_20, ms_80 = triton.testing.do_bench(fn, quantiles=QUANTILES, rep=100)
    return SingleBenchmarkRunOutput(y_20=ms_20, y_50=ms_50, y_80=ms_80)


if __name__ == "__main__":
    config = {"vocab_size": 128256, "bsz": 2, "seq_len": 4096}
    run_benchmarks(bench, "cross_entropy", "speed", "ms", "BT", "B * T", [1024, 2048], ["liger", "torch"], ["forward"], [config])
"""
)


@pytest.fixture(scope="module")
def wheel_dir(tmp_path_factory) -> Path:
    """liger-kernel 0.8.5's wheel from the package index (pip download, as CI can)."""
    directory = tmp_path_factory.mktemp("liger-0.8.5-wheel")
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--disable-pip-version-check",
        "-d",
        str(directory),
        f"liger-kernel=={VERSION}",
    ]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"pip could not download liger-kernel {VERSION} (needs the package index): {proc.stderr[-1500:]}"
    )
    wheel = directory / WHEEL
    assert hashlib.sha256(wheel.read_bytes()).hexdigest() == WHEEL_SHA256, f"{wheel.name} is not PyPI's 0.8.5 wheel"
    return directory


def _standins(root: Path, device_name: str | None) -> Path:
    """Stand-in torch/triton (one CUDA device named `device_name` at sm_90, or none) with what Liger's
    dispatcher reads, `cutlass.cute` (what liger-kernel[cutedsl] makes importable: the CuTe DSL gate's
    module check holds) and the registrations of STANDIN_IMPLS as an importable module."""
    torch_dir = add_liger_dispatcher_needs(build_fake_torch(root, device_name))
    (torch_dir / "cutlass").mkdir()
    (torch_dir / "cutlass" / "__init__.py").write_text("")
    (torch_dir / "cutlass" / "cute.py").write_text("")
    (torch_dir / "standin_liger_impls.py").write_text(STANDIN_IMPLS)
    return torch_dir


@pytest.fixture(scope="module")
def cpu_site(wheel_dir, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("liger-0.8.5-cpu")
    target = root / "site"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-index",
            "--no-compile",
            "--disable-pip-version-check",
            "--target",
            str(target),
            str(wheel_dir / WHEEL),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-1500:]
    (root / "call_swiglu.py").write_text(CALL_SWIGLU)
    return {"root": root, "target": target, "torch": _standins(root / "standins", None)}


def _call(site: dict, phase: dict, variables: dict[str, str]) -> tuple[dict, dict]:
    """One real dispatch in a subprocess with the sample hook on (its dispatch spool as the runner passes
    it): what the call ran, and what the hook recorded (read back by sweep/backends.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LIGER_KERNEL_")}
    with private_spool(site["root"]) as spool:
        env.update(variables, **{DISPATCH_SPOOL_FD_VARIABLE: str(spool.fileno())})
        env["PYTHONPATH"] = os.pathsep.join(map(str, (HOOK_DIR, site["torch"], site["target"])))
        proc = subprocess.run(
            [sys.executable, str(site["root"] / "call_swiglu.py"), json.dumps(phase)],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=site["root"],
            pass_fds=(spool.fileno(),),
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout.splitlines()[-1]), read_dispatches(spool).summary()


# (phase, LIGER_KERNEL_IMPL* variables, what runs, the step that decided): each step outranks every later one.
ORDER = [
    ({}, {}, "nvidia-triton", "preference_rank"),  # cutedsl's rank 10 is lower, but it needs sm_90+
    ({"set_impl": "standin-a"}, {}, "standin-a", "set_impl"),
    ({"set_impl": "standin-a"}, {"LIGER_KERNEL_IMPL": "standin-b"}, "standin-b", "global_variable"),
    (
        {"set_impl": "standin-a"},
        {"LIGER_KERNEL_IMPL": "standin-b", "LIGER_KERNEL_IMPL_SWIGLU": "standin-c"},
        "standin-c",
        "op_variable",
    ),
    # impl= wins over all; "triton" is the legacy alias the dispatcher translates
    (
        {"set_impl": "standin-a", "impl": "triton"},
        {"LIGER_KERNEL_IMPL": "standin-b", "LIGER_KERNEL_IMPL_SWIGLU": "standin-c"},
        "nvidia-triton",
        "argument",
    ),
]


@pytest.mark.parametrize(("phase", "variables", "runs", "step"), ORDER, ids=[step for *_, step in ORDER])
def test_the_real_dispatcher_imports_without_cuda_and_the_hook_records_its_resolution_order(
    cpu_site, phase, variables, runs, step
):
    seen, recorded = _call(cpu_site, phase, variables)
    assert seen["liger_kernel"].startswith(str(cpu_site["target"])) and seen["version"] == VERSION
    assert seen["cuda"] is False
    assert seen["available"] == ["nvidia-triton", "standin-a", "standin-b", "standin-c"]  # lowest rank first
    # Liger's own kernel modules were looked for, and failed as Triton kernels do without Triton:
    assert seen["discovery_failures"]["liger_kernel.ops.backends._triton.swiglu"].startswith("ModuleNotFoundError")
    assert seen["ran"] == runs
    assert recorded["resolved"] == {"swiglu": [runs]} and recorded["chosen_by"] == {"swiglu": [step]}
    assert recorded["variables"] == variables and recorded["errors"] == []


def test_an_implementation_the_cpu_cannot_run_is_the_real_dispatchers_error_recorded(cpu_site):
    seen, recorded = _call(cpu_site, {"impl": "nvidia-cutedsl"}, {})
    assert seen["ran"].startswith(
        "ImplNotAvailableError: Implementation 'nvidia-cutedsl' for op 'swiglu' is not available: CUDA device not available"
    )
    [error] = recorded["errors"]
    assert error["op"] == "swiglu" and error["error"] == seen["ran"][:500]
    assert recorded["resolved"] == {}


def test_a_sweep_of_the_real_0_8_5_records_the_backend_its_dispatcher_resolved(wheel_dir, tmp_path):
    """The sweep installs the real wheel (--no-deps, offline from the wheel directory) into the
    scripts' environment; the script calls the real liger_kernel.functional.cross_entropy."""
    build_fake_nvidia_smi(tmp_path / "bin")
    torch_dir = _standins(tmp_path / "standins", "NVIDIA H100 80GB HBM3")  # sm_90: the CuTe DSL gate holds
    tarball = build_release_tarball(tmp_path / "release", VERSION, {"benchmark_cross_entropy.py": CROSS_ENTROPY_SCRIPT})

    def sweep(name, **fields):
        request = SweepRequest(
            gpu=H100,
            liger_version=VERSION,
            release=str(tarball),
            work_dir=str(tmp_path / name),
            env_cache_dir=str(tmp_path / "envs"),
            wheel_dir=str(wheel_dir),
            extra_pythonpath=[str(torch_dir)],
            extra_env={"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"},
            script_timeout_s=60,
            rounds=1,
            **fields,
        )
        result = run_sweep(request)
        measured = MeasuredContext(**result.measured_context())
        return result, import_csv(result.csv_path, gpu=H100, liger_version=VERSION, measured=measured)

    def liger_implementations(imported):
        return sorted(
            m["metadata"]["name"]
            for m in imported.iter_kind("ImplementationRevision")
            if "-cross-entropy-liger" in m["metadata"]["name"]
        )

    result, imported = sweep("resolved")
    assert result.environment["installed"][0] == f"liger-kernel=={VERSION}"
    [outcome] = result.outcomes
    assert outcome.ok, outcome.error_line
    # 0.8.5 resolves cross_entropy to Triton (rank 50) even where the CuTe DSL one (rank 60) can run
    assert outcome.backends["resolved"] == {"cross_entropy": ["nvidia-triton"]}
    assert outcome.backends["chosen_by"] == {"cross_entropy": ["preference_rank"]}
    assert liger_implementations(imported) == ["liger-bench-cross-entropy-liger-nvidia-triton-v0-8-5"]

    result, imported = sweep("pinned", backends={"cross_entropy": ["nvidia-triton", "nvidia-cutedsl"]})
    assert [(o.variant, o.backends["resolved"], o.backends["chosen_by"]) for o in result.outcomes] == [
        ("cross_entropy=nvidia-triton", {"cross_entropy": ["nvidia-triton"]}, {"cross_entropy": ["op_variable"]}),
        ("cross_entropy=nvidia-cutedsl", {"cross_entropy": ["nvidia-cutedsl"]}, {"cross_entropy": ["op_variable"]}),
    ]
    assert liger_implementations(imported) == [
        "liger-bench-cross-entropy-liger-nvidia-cutedsl-v0-8-5",
        "liger-bench-cross-entropy-liger-nvidia-triton-v0-8-5",
    ]
