"""What the scripts' environment installs, and its offline failure."""

import sys
import textwrap

import pytest

from kernelindex_pipeline.sweep.environment import (
    prepare_environment,
    scan_script_imports,
    script_requirements,
)
from kernelindex_pipeline.sweep.outcomes import EnvironmentBuildError
from tests.support.factories import sample_host_capture


def make_release(root, scripts, pkg_info=""):
    scripts_dir = root / "benchmark" / "scripts"
    scripts_dir.mkdir(parents=True)
    (root / "test").mkdir()
    (root / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: liger_kernel\nVersion: 0.0.1\n" + pkg_info)
    for name, text in scripts.items():
        (scripts_dir / name).write_text(textwrap.dedent(text))
    return scripts_dir


def test_scan_finds_module_level_third_party_imports_only(tmp_path):
    scripts_dir = make_release(
        tmp_path,
        {
            "utils.py": "import csv\nimport torch\n",
            "benchmark_a.py": """
                import os
                import torch.nn as nn
                from transformers.models.llama.modeling_llama import LlamaMLP
                from utils import run
                from test.transformers.reference import Reference
                from liger_kernel.ops import thing
                import yaml
                try:
                    import cutlass
                except ImportError:
                    cutlass = None

                def later():
                    import cuda.tile
                """,
        },
    )
    assert scan_script_imports(scripts_dir) == {"torch", "transformers", "liger_kernel", "yaml"}


def test_requirements_take_the_release_declared_range_and_skip_the_host_stack(tmp_path):
    scripts_dir = make_release(
        tmp_path,
        {"benchmark_a.py": "import torch, triton\nimport transformers\nimport yaml\n"},
        pkg_info='Requires-Dist: torch>=2.1.2\nRequires-Dist: transformers>=4.52.0; extra == "dev"\n',
    )
    assert script_requirements(scripts_dir) == {"transformers": "transformers>=4.52.0", "yaml": "PyYAML"}


def test_offline_build_without_the_wheel_names_the_wheel_directory(tmp_path):
    scripts_dir = make_release(tmp_path / "release", {"benchmark_a.py": "import torch\n"})
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    with pytest.raises(EnvironmentBuildError) as raised:
        prepare_environment(
            "9.9.9", scripts_dir=scripts_dir, cache_dir=tmp_path / "envs", wheel_dir=wheels, base_python=sys.executable
        )
    message = str(raised.value)
    assert "liger-kernel==9.9.9" in message and str(wheels) in message
    # The half-built environment carries no marker, so the next try rebuilds it instead of reusing it.
    assert not list((tmp_path / "envs").glob("*/kernelindex-environment.json"))


def test_missing_wheel_directory_is_refused(tmp_path):
    scripts_dir = make_release(tmp_path / "release", {"benchmark_a.py": "import torch\n"})
    with pytest.raises(EnvironmentBuildError, match="does not exist"):
        prepare_environment(
            "9.9.9", scripts_dir=scripts_dir, cache_dir=tmp_path / "envs", wheel_dir=tmp_path / "nowhere"
        )


def test_the_work_tree_keeps_the_release_declared_ranges(tmp_path):
    from kernelindex_pipeline.sweep.workdir import prepare_workdir

    make_release(
        tmp_path / "release",
        {"benchmark_a.py": "import torch\nimport transformers\n"},
        pkg_info='Requires-Dist: transformers>=5.0.0; extra == "dev"\n',
    )
    workdir = prepare_workdir(tmp_path / "release", tmp_path / "work")
    assert script_requirements(workdir.scripts_dir) == {"transformers": "transformers>=5.0.0"}


# --- ExecutionEnvironment identity (issue 18): what makes "the same conditions" --------------------------


def _environment_of(capture, hostname):
    from kernelindex_pipeline.liger.builders import MeasuredContext, execution_environment
    from kernelindex_pipeline.liger.catalogue import default_catalogue

    measured = MeasuredContext(software=capture.software(), labels=capture.labels(hostname))
    name = "NVIDIA H100 80GB HBM3"
    return execution_environment(name, default_catalogue().hardware[name], measured)


def test_two_hosts_of_one_gpu_type_with_one_stack_share_an_environment():
    from kernelindex_pipeline.records.canonical import digest_of

    first = _environment_of(sample_host_capture(), "gpu-a")
    # another host: OS kernel build, OS point release, exact driver patch, Python, hostname all differ
    second = _environment_of(
        sample_host_capture(
            kernel="5.15.0-122-generic", operating_system="Ubuntu 22.04.5 LTS", driver="550.90.07", python="3.11.10"
        ),
        "gpu-b",
    )
    assert digest_of(first) == digest_of(second)  # one cohort in KernelIndex (its key is the spec digest)
    assert first["spec"]["software"] == {
        "driver": "550",
        "cudaToolkit": "12.4",
        "framework": {"name": "torch", "version": "2.5.1+cu124"},
        "libraries": {"triton": "3.1.0"},
    }
    assert (
        first["metadata"]["labels"]["hostname"] == "gpu-a"
        and second["metadata"]["labels"]["os_kernel"] == "5.15.0-122-generic"
    )


def test_identity_fields_split_environments():
    from kernelindex_pipeline.records.canonical import digest_of

    base = digest_of(_environment_of(sample_host_capture(), "gpu-a"))
    for change in ({"driver": "560.35.03"}, {"cuda_runtime": "12.6"}, {"torch": "2.6.0+cu124"}, {"triton": "3.2.0"}):
        assert digest_of(_environment_of(sample_host_capture(**change), "gpu-a")) != base, change


def test_measured_project_versions_name_release_tags():
    from kernelindex_pipeline.sweep.environment import measured_project_versions, release_tag

    assert measured_project_versions("0.8.5", sample_host_capture()) == {
        "liger-kernel": "v0.8.5",
        "pytorch": "v2.5.1",
        "transformers": "v4.46.3",
    }
    assert release_tag("2.6.0.dev20241001+cu124") is None  # a nightly has no tag to name
    assert release_tag("not a version") is None


def test_each_hosts_facts_ride_its_own_runs_through_one_catalogue(tmp_path):
    """Two hosts of one GPU type share one ExecutionEnvironment (one digest, one cohort), and a catalogue keeps
    one manifest per digest, the first host's: each run carries its own host's facts in its labels (issue 32,
    item 3), so the second host's runs still say its hostname, OS kernel and exact driver."""
    from kernelindex_pipeline.catalogue.store import CatalogueStore
    from tests.support import kernelindex_scenarios as scenarios

    host_a, _ = scenarios.standin_sweep("host-a")
    host_b, _ = scenarios.standin_sweep("host-b", kernel="5.15.0-122-generic", driver="550.90.07", day="2026-12-02")
    with CatalogueStore.open(f"sqlite:///{tmp_path / 'catalogue.sqlite'}") as store:
        store.publish(host_a, partition="sweep:a")
        store.publish(host_b, partition="sweep:b")
        environments = list(store.manifests(["ExecutionEnvironment"]))
        runs = list(store.manifests(["BenchmarkRun"]))
    measured = [e for e in environments if e["spec"]["software"]]
    assert len(measured) == 1  # identity only: one environment for both hosts
    by_host = {}
    for run in runs:
        labels = run["metadata"]["labels"]
        by_host.setdefault(labels["hostname"], set()).add((labels["os_kernel"], labels["driver"]))
    assert by_host == {
        "host-a": {("5.15.0-119-generic", "550.54.15")},
        "host-b": {("5.15.0-122-generic", "550.90.07")},
    }
    assert sum(1 for r in runs if r["metadata"]["name"].startswith("kernelindex-sentinel")) == 8  # theirs too
