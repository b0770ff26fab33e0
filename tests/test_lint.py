"""The code passes the repository's ruff configuration (lint + import order, `[tool.ruff]` in pyproject.toml)."""

from __future__ import annotations

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
