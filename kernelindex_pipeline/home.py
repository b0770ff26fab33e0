"""Where the project's local state lives: DAGSTER_HOME, with its one default.

The CLI, the Dagster resources and the embedded catalogue all fall back to the same folder when
DAGSTER_HOME is unset; the default is said here once so they cannot drift apart. Plain Python (no
Dagster), so domain code such as `catalogue.store` can use it too.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DAGSTER_HOME = ".dagster_home"  # relative to the working directory, like `dagster dev`'s own default


def dagster_home() -> Path:
    """DAGSTER_HOME, or the project's local `.dagster_home` when it is unset."""
    return Path(os.environ.get("DAGSTER_HOME") or Path.cwd() / DEFAULT_DAGSTER_HOME)
