"""What the scripts' environment installs, and its offline failure."""

import sys
import textwrap

import pytest

from kernelindex_pipeline.execution.environment import (
    prepare_environment,
    scan_script_imports,
    script_requirements,
)
from kernelindex_pipeline.execution.outcomes import EnvironmentBuildError


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
        prepare_environment("9.9.9", scripts_dir=scripts_dir, cache_dir=tmp_path / "envs", wheel_dir=wheels, base_python=sys.executable)
    message = str(raised.value)
    assert "liger-kernel==9.9.9" in message and str(wheels) in message
    # The half-built environment carries no marker, so the next try rebuilds it instead of reusing it.
    assert not list((tmp_path / "envs").glob("*/kernelindex-environment.json"))


def test_missing_wheel_directory_is_refused(tmp_path):
    scripts_dir = make_release(tmp_path / "release", {"benchmark_a.py": "import torch\n"})
    with pytest.raises(EnvironmentBuildError, match="does not exist"):
        prepare_environment("9.9.9", scripts_dir=scripts_dir, cache_dir=tmp_path / "envs", wheel_dir=tmp_path / "nowhere")


def test_the_work_tree_keeps_the_release_declared_ranges(tmp_path):
    from kernelindex_pipeline.execution.workdir import prepare_workdir

    make_release(
        tmp_path / "release",
        {"benchmark_a.py": "import torch\nimport transformers\n"},
        pkg_info='Requires-Dist: transformers>=5.0.0; extra == "dev"\n',
    )
    workdir = prepare_workdir(tmp_path / "release", tmp_path / "work")
    assert script_requirements(workdir.scripts_dir) == {"transformers": "transformers>=5.0.0"}
