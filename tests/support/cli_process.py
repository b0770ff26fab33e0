"""The command line as a real process, started as an operator starts it (`python -m
kernelindex_pipeline.cli`), with Python's own warnings off so that stderr holds only what the CLI says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CLI = (sys.executable, "-W", "ignore", "-m", "kernelindex_pipeline.cli")


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: str | Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI with `args` to its end (a 600 s guard against a hang); `env` is added to this one."""
    return subprocess.run(
        [*CLI, *args],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
