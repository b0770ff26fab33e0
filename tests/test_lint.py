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
