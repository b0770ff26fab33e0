"""Where the project's local state lives: DAGSTER_HOME, the download cache and the catalogue URL, each
with its one default.

The CLI, the Dagster resources and the embedded catalogue all fall back to the same folder when
DAGSTER_HOME is unset; release downloads, the artifact store and script environments share one cache
root. Each default is said here once so they cannot drift apart. Plain Python (no Dagster), so domain
code such as `catalogue.store`, `liger.release` and `execution` can use it too.
"""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_DAGSTER_HOME = ".dagster_home"  # relative to the working directory, like `dagster dev`'s own default
CACHE_DIR_ENV = "KERNELINDEX_CACHE_DIR"
CATALOGUE_URL_ENV = "KERNELINDEX_CATALOGUE_URL"


def dagster_home() -> Path:
    """DAGSTER_HOME, or the project's local `.dagster_home` when it is unset."""
    return Path(os.environ.get("DAGSTER_HOME") or Path.cwd() / DEFAULT_DAGSTER_HOME)


def cache_root() -> Path:
    """$KERNELINDEX_CACHE_DIR, or ~/.cache/kernelindex-pipeline when it is unset or empty."""
    return Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "kernelindex-pipeline")


def catalogue_url(given: str | None = None) -> str | None:
    """The catalogue URL a command was given, else $KERNELINDEX_CATALOGUE_URL, else None: the embedded
    catalogue under DAGSTER_HOME (`catalogue.store.default_catalogue_path`)."""
    return given or os.environ.get(CATALOGUE_URL_ENV) or None
