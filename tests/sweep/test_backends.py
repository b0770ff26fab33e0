"""Backend-resolved identity through the real orchestration on a CPU: Liger 0.8.5's own dispatcher
(tests/fixtures/liger-0.8.5-backends, verbatim) in a stand-in liger-kernel wheel, real script
subprocesses with the sample hook, a stand-in torch/triton. Two backends of one op become two series;
a dispatcher that raises is a clear problem of its script, and the other scripts' rows are kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelindex_pipeline.liger import import_csv
from kernelindex_pipeline.liger.measured_rows import split_provider
from kernelindex_pipeline.liger.normalize import MeasuredContext
from kernelindex_pipeline.records.schema import validate_manifest
from kernelindex_pipeline.sweep.backends import backend_variants
from kernelindex_pipeline.sweep.outcomes import ConfigurationError
from kernelindex_pipeline.sweep.protocol import SweepRequest
from kernelindex_pipeline.sweep.run import run_sweep
from tests.support import FIXTURES
from tests.support.standin_release import (
    SCRIPTS,
    add_liger_dispatcher_needs,
    build_fake_nvidia_smi,
    build_fake_torch,
    build_liger_wheel,
    build_plain_wheel,
    build_release_tarball,
)

H100 = "nvidia-h100-80gb-hbm3"
VERSION = "0.8.5"
BACKENDS = FIXTURES / "liger-0.8.5-backends"

# Stand-in op modules that register like 0.8.5's ops/backends/_triton and _cutedsl (same names and gates),
# except cross_entropy's CuTe DSL rank: 10 here (as 0.8.5's swiglu, softmax, ...) so that the extra changes what
# resolves; 0.8.5 ranks it 60, behind Triton (tests/sweep/test_backends_liger_0_8_5.py runs the real ranks).
TRITON_OPS = """
from liger_kernel.backends import Capability, register_op

@register_op("cross_entropy", impl_name="nvidia-triton", capability=Capability(modules=["triton"]), preference_rank=50)
def cross_entropy(x):
    return x
"""
CUTEDSL_OPS = """
from liger_kernel.backends import Capability, register_op

@register_op("cross_entropy", impl_name="nvidia-cutedsl", capability=Capability(min_cc=(9, 0), modules=["cutlass.cute", "torch"]), preference_rank=10)
def cross_entropy(x):
    return x
"""
FUNCTIONAL = """
from liger_kernel.backends import dispatch
from liger_kernel.backends.registry import declare_op_locations

declare_op_locations("cross_entropy", ("liger_kernel.ops.backends._triton.cross_entropy", "liger_kernel.ops.backends._cutedsl.cross_entropy"))


def liger_cross_entropy(x):
    return dispatch("cross_entropy", x)
"""
CROSS_ENTROPY_SCRIPT = """
import triton
from liger_kernel.functional import liger_cross_entropy
from utils import QUANTILES, SingleBenchmarkRunOutput, run_benchmarks


def bench(input):
    fn = (lambda: liger_cross_entropy(1.0)) if input.kernel_provider == "liger" else (lambda: None)
    ms_50, ms_20, ms_80 = triton.testing.do_bench(fn, quantiles=QUANTILES, rep=100)
    return SingleBenchmarkRunOutput(y_20=ms_20, y_50=ms_50, y_80=ms_80)


if __name__ == "__main__":
    config = {"vocab_size": 128256, "bsz": 2, "seq_len": 4096}
    run_benchmarks(bench, "cross_entropy", "speed", "ms", "BT", "B * T", [1024, 2048], ["liger", "torch"], ["forward"], [config])
"""


def _backend_files() -> dict[str, str]:
    files = {f"liger_kernel/backends/{p.name}": p.read_text() for p in BACKENDS.glob("*.py")}
    files.update(
        {
            "liger_kernel/functional.py": FUNCTIONAL,
            "liger_kernel/ops/__init__.py": "",
            "liger_kernel/ops/backends/__init__.py": "",
            "liger_kernel/ops/backends/_triton/__init__.py": "",
            "liger_kernel/ops/backends/_triton/cross_entropy.py": TRITON_OPS,
            "liger_kernel/ops/backends/_cutedsl/__init__.py": "",
            "liger_kernel/ops/backends/_cutedsl/cross_entropy.py": CUTEDSL_OPS,
        }
    )
    return files


def _wheels(directory: Path) -> Path:
    """The stand-in liger-kernel with its `cutedsl` extra (as 0.8.5's setup.py declares it) and a stand-in
    nvidia-cutlass-dsl that makes `cutlass.cute` importable."""
    build_liger_wheel(
        directory,
        VERSION,
        _backend_files(),
        metadata='Provides-Extra: cutedsl\nRequires-Dist: nvidia-cutlass-dsl>=4.6.0; extra == "cutedsl"\n',
    )
    build_plain_wheel(directory, "nvidia-cutlass-dsl", "4.6.0", {"cutlass/__init__.py": "", "cutlass/cute.py": ""})
    return directory


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    import os

    root = tmp_path_factory.mktemp("backends")
    build_fake_nvidia_smi(root / "bin")
    torch_dir = add_liger_dispatcher_needs(build_fake_torch(root / "torch", "NVIDIA H100 80GB HBM3"))
    cutlass = root / "cutlass-dsl"  # what `pip install liger-kernel[cutedsl]` makes importable
    (cutlass / "cutlass").mkdir(parents=True)
    (cutlass / "cutlass" / "__init__.py").write_text("")
    (cutlass / "cutlass" / "cute.py").write_text("")
    scripts = {
        "benchmark_cross_entropy.py": CROSS_ENTROPY_SCRIPT,
        "benchmark_rms_norm.py": SCRIPTS["benchmark_rms_norm.py"],
        "benchmark_model_configs.py": SCRIPTS["benchmark_model_configs.py"],
    }
    return {
        "root": root,
        "tarball": build_release_tarball(root / "release", VERSION, scripts),
        "wheels": _wheels(root / "wheels"),
        "path": f"{root / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "torch": torch_dir,
        "cutlass": cutlass,
    }


def sweep(site, name, *, cutedsl=True, **fields):
    request = SweepRequest(
        gpu=H100,
        liger_version=VERSION,
        release=str(site["tarball"]),
        work_dir=str(site["root"] / name),
        env_cache_dir=str(site["root"] / "envs"),
        wheel_dir=str(site["wheels"]),
        extra_pythonpath=[str(site["torch"])] + ([str(site["cutlass"])] if cutedsl else []),
        extra_env={"PATH": site["path"]},
        script_timeout_s=30,
        rounds=1,
        **fields,
    )
    result = run_sweep(request)
    imported = import_csv(
        result.csv_path, gpu=H100, liger_version=VERSION, measured=MeasuredContext(**result.measured_context())
    )
    return result, imported


def implementations(imported, kernel="cross_entropy"):
    return {
        m["metadata"]["name"]: m
        for m in imported.iter_kind("ImplementationRevision")
        if f"-{kernel.replace('_', '-')}-" in m["metadata"]["name"]
    }


@pytest.mark.slow
def test_the_resolved_backend_is_part_of_the_implementation(site):
    with_cutedsl, imported = sweep(site, "resolved-cutedsl")
    outcome = next(o for o in with_cutedsl.outcomes if o.script == "benchmark_cross_entropy.py")
    assert outcome.ok and outcome.backends["resolved"] == {"cross_entropy": ["nvidia-cutedsl"]}  # rank 10 beats 50
    names = sorted(implementations(imported))
    assert names == ["liger-bench-cross-entropy-liger-nvidia-cutedsl-v0-8-5", "liger-bench-cross-entropy-torch-v2-5-1"]
    liger = implementations(imported)["liger-bench-cross-entropy-liger-nvidia-cutedsl-v0-8-5"]
    assert liger["spec"]["callable"]["symbol"] == "liger_kernel.backends.dispatch:nvidia-cutedsl"
    assert liger["metadata"]["labels"]["liger_backend"] == "nvidia-cutedsl"
    # The extra that made the difference is the environment's software (a stand-in has no dist metadata,
    # so only the probe's list of what it looks for is checked here).
    assert "liger_extras" in with_cutedsl.host

    without, imported = sweep(site, "resolved-triton", cutedsl=False)
    outcome = next(o for o in without.outcomes if o.script == "benchmark_cross_entropy.py")
    assert outcome.backends["resolved"] == {"cross_entropy": ["nvidia-triton"]}
    assert "liger-bench-cross-entropy-liger-nvidia-triton-v0-8-5" in implementations(imported)
    # rms_norm calls no dispatched op: its identity is what it always was.
    assert any(
        m["metadata"]["name"] == "liger-bench-rms-norm-liger-v0-8-5"
        for m in imported.iter_kind("ImplementationRevision")
    )


@pytest.mark.slow
def test_the_cutedsl_extra_installed_for_the_scripts_is_environment_software(site):
    result, imported = sweep(
        site, "extra-cutedsl", cutedsl=False, liger_extras=["cutedsl"], scripts=["benchmark_cross_entropy.py"]
    )
    assert "liger-kernel[cutedsl]==0.8.5" in result.environment["installed"]
    outcome = next(o for o in result.outcomes if o.script == "benchmark_cross_entropy.py")
    assert outcome.backends["resolved"] == {"cross_entropy": ["nvidia-cutedsl"]}  # the extra made it available
    assert result.host["liger_extras"] == {"nvidia-cutlass-dsl": "4.6.0"}
    [environment] = imported.iter_kind("ExecutionEnvironment")
    assert environment["spec"]["software"]["libraries"]["nvidia_cutlass_dsl"] == "4.6.0"
    without, _ = sweep(site, "extra-none", cutedsl=False, scripts=["benchmark_cross_entropy.py"])
    assert without.environment["path"] != result.environment["path"]  # an environment of its own
    assert "nvidia_cutlass_dsl" not in without.software.get("libraries", {})


@pytest.mark.slow
def test_two_backends_of_one_op_become_two_series(site, tmp_path):
    result, imported = sweep(
        site,
        "two-backends",
        backends={"cross_entropy": ["nvidia-triton", "nvidia-cutedsl"]},
        scripts=["benchmark_cross_entropy.py"],
    )
    assert [v["env"] for v in result.variants] == [
        {"LIGER_KERNEL_IMPL_CROSS_ENTROPY": "nvidia-triton"},
        {"LIGER_KERNEL_IMPL_CROSS_ENTROPY": "nvidia-cutedsl"},
    ]
    assert [(o.variant, o.backends["resolved"]) for o in result.outcomes] == [
        ("cross_entropy=nvidia-triton", {"cross_entropy": ["nvidia-triton"]}),
        ("cross_entropy=nvidia-cutedsl", {"cross_entropy": ["nvidia-cutedsl"]}),
    ]
    impls = implementations(imported)
    assert sorted(impls) == [
        "liger-bench-cross-entropy-liger-nvidia-cutedsl-v0-8-5",
        "liger-bench-cross-entropy-liger-nvidia-triton-v0-8-5",
        "liger-bench-cross-entropy-torch-v2-5-1",
    ]
    runs = [r for r in imported.runs() if r["spec"]["sourceNative"]["benchmark"].startswith("cross_entropy")]
    for run in runs:
        assert validate_manifest(run) == []
    by_impl = {}
    for run in runs:
        by_impl.setdefault(run["spec"]["implementationDigest"], []).append(run)
    # two x values per implementation: each backend a series of its own; torch measured in both
    # variants is one series whose runs pool both (two rounds' worth of samples)
    assert sorted(len(v) for v in by_impl.values()) == [2, 2, 2]
    torch_runs = [r for r in runs if "/torch/" in r["spec"]["sourceNative"]["externalId"]]
    assert len(torch_runs) == 2 and all("confidence95" in r["spec"]["timing"]["latencyNs"] for r in torch_runs)
    liger_runs = [r for r in runs if "/torch/" not in r["spec"]["sourceNative"]["externalId"]]
    assert not any("confidence95" in r["spec"]["timing"]["latencyNs"] for r in liger_runs)  # one round each
    assert {r["spec"]["sourceNative"]["externalId"].split("/")[2] for r in runs} == {
        "liger@nvidia-triton",
        "liger@nvidia-cutedsl",
        "torch",
    }
    # The site compares them: each backend a provider of its own in the kernel's data, each against the baseline.
    from kernelindex_pipeline.reporting.site import build_site
    from kernelindex_pipeline.reporting.site_files import read_js_payload

    site = build_site(imported.manifests.values(), tmp_path / "site")
    data = read_js_payload((site.path.parent / "data" / "cross-entropy.js").read_text(encoding="utf-8"))
    providers = {p["name"]: p["role"] for p in data["providers"]}
    assert providers["liger@nvidia-triton"] == providers["liger@nvidia-cutedsl"] == "liger"
    assert providers["torch"] == "baseline"


@pytest.mark.slow
def test_a_dispatcher_that_raises_is_named_and_other_scripts_keep_their_rows(site):
    result, imported = sweep(site, "raises", backends={"cross_entropy": ["nvidia-cutile"]})
    broken = next(o for o in result.outcomes if o.script == "benchmark_cross_entropy.py")
    assert broken.status.value == "failed"
    assert "ImplNotAvailableError" in broken.error_line
    [problem] = [p for p in broken.problems if p["kind"] == "dispatch_failed"]
    assert (
        "'cross_entropy'" in problem["message"] and "No 'nvidia-cutile' implementation registered" in problem["message"]
    )
    assert "backends setting" in problem["message"]
    fine = next(o for o in result.outcomes if o.script == "benchmark_rms_norm.py")
    assert fine.ok and fine.rows == 24
    assert result.rows == 24  # the rms_norm rows, nothing of the failed script
    assert imported.report.runs == 24


def test_the_backends_setting_is_checked_before_anything_runs():
    assert [v.name for v in backend_variants(None)] == ["resolved"]
    assert [
        v.env
        for v in backend_variants({"swiglu": ["nvidia-triton", "nvidia-cutedsl"], "cross_entropy": "nvidia-triton"})
    ] == [
        {"LIGER_KERNEL_IMPL_CROSS_ENTROPY": "nvidia-triton", "LIGER_KERNEL_IMPL_SWIGLU": "nvidia-triton"},
        {"LIGER_KERNEL_IMPL_CROSS_ENTROPY": "nvidia-triton", "LIGER_KERNEL_IMPL_SWIGLU": "nvidia-cutedsl"},
    ]
    for bad in ({"swiglu": []}, {"swiglu": ["Triton!"]}, {"SwiGLU": ["nvidia-triton"]}, ["nvidia-triton"]):
        with pytest.raises(ConfigurationError, match="backends"):
            backend_variants(bad)
    assert split_provider("liger@nvidia-cutedsl") == ("liger", "nvidia-cutedsl")
    assert split_provider("liger@nvidia-cutedsl+nvidia-triton") == ("liger", "nvidia-cutedsl+nvidia-triton")
    assert split_provider("liger") == ("liger", None)
    assert split_provider("liger@Bad Name") == ("liger@Bad Name", None)
