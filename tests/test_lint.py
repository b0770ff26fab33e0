"""The code passes the repository's ruff configuration (lint + import order, `[tool.ruff]` in pyproject.toml), and
the docs site builds with `mkdocs build --strict`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT


def test_ruff_check_is_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed: it is in the [test] extra (bash scripts/setup installs it)"
    completed = subprocess.run([ruff, "check", "--no-cache", str(ROOT)], capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stdout + completed.stderr


def test_ruff_format_leaves_the_tree_as_it_is():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert ruff, "ruff is not installed: it is in the [test] extra (bash scripts/setup installs it)"
    completed = subprocess.run(
        [ruff, "format", "--check", "--no-cache", str(ROOT)], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 0, "run `ruff format .`:\n" + completed.stdout + completed.stderr


def test_the_docs_site_builds_strictly(tmp_path):
    """`mkdocs build --strict` (mkdocs.yml, docs/): a dangling link or anchor, a page missing from the nav or a
    nav entry without its page fails the build."""
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent)) or shutil.which("mkdocs")
    assert mkdocs, "mkdocs is not installed: it is in the [test] extra (bash scripts/setup installs it)"
    completed = subprocess.run(
        [mkdocs, "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"), "--site-dir", str(tmp_path / "site")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert (tmp_path / "site" / "index.html").is_file()


def _lint_imports(root: Path) -> subprocess.CompletedProcess:
    """import-linter's contracts (`[tool.importlinter]` in pyproject.toml) over the package under `root`."""
    lint_imports = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    assert lint_imports, "import-linter is not installed: it is in the [test] extra (bash scripts/setup installs it)"
    return subprocess.run(
        [lint_imports, "--no-cache", "--config", str(root / "pyproject.toml")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},  # the package under root, ahead of the installed one
    )


def test_the_layers_contracts_are_kept():
    """Each package imports only those below it, and no domain package imports Dagster
    (docs/concepts/architecture.md, "Layers")."""
    completed = _lint_imports(ROOT)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "2 kept, 0 broken" in completed.stdout, completed.stdout


def _copy_with(tmp_path: Path, module: str, line: str) -> Path:
    """The package and pyproject.toml copied under tmp_path, `line` appended to `module` (a path in the package)."""
    shutil.copytree(
        ROOT / "kernelindex_pipeline", tmp_path / "kernelindex_pipeline", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "kernelindex_pipeline" / module
    target.write_text(target.read_text("utf-8") + "\n" + line + "\n", encoding="utf-8")
    return tmp_path


def test_an_upward_import_breaks_the_layers_contract(tmp_path):
    """records/ is below every other package: its importing the CLI is reported, with the import and its line."""
    root = _copy_with(tmp_path, "records/names.py", "import kernelindex_pipeline.cli.imports  # noqa")
    completed = _lint_imports(root)
    assert completed.returncode != 0, completed.stdout
    assert "each package imports only the packages below it BROKEN" in completed.stdout, completed.stdout
    assert "kernelindex_pipeline.records.names -> kernelindex_pipeline.cli.imports" in completed.stdout, (
        completed.stdout
    )


def test_dagster_in_detection_breaks_the_plain_python_contract(tmp_path):
    root = _copy_with(tmp_path, "detection/changes.py", "import dagster  # noqa")
    completed = _lint_imports(root)
    assert completed.returncode != 0, completed.stdout
    assert "only defs/, cli/ and definitions.py import Dagster BROKEN" in completed.stdout, completed.stdout
    assert "kernelindex_pipeline.detection.changes -> dagster" in completed.stdout, completed.stdout
