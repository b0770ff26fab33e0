"""Where the project's local state lives: DAGSTER_HOME, the Dagster instance in it, the download cache
and the catalogue URL, each with its one default.

The CLI, the Dagster resources and the embedded catalogue all fall back to the same folder when
DAGSTER_HOME is unset; release downloads, the artifact store and script environments share one cache
root. Each default is said here once so they cannot drift apart. It imports no Dagster (the instance
in DAGSTER_HOME is `defs.instance.local_instance`), so domain code such as `catalogue.store`,
`liger.release` and `sweep` can use it too.
"""

from __future__ import annotations

import os
from pathlib import Path

DAGSTER_HOME_ENV = "DAGSTER_HOME"
DEFAULT_DAGSTER_HOME = ".dagster_home"  # relative to the working directory, like `dagster dev`'s own default
CACHE_DIR_ENV = "KERNELINDEX_CACHE_DIR"
CATALOGUE_URL_ENV = "KERNELINDEX_CATALOGUE_URL"
EMBEDDED_CATALOGUE = (
    "kernelindex-catalogue.sqlite"  # the catalogue's SQLite file under DAGSTER_HOME, when no URL is set
)
# the per-series judgements regression detection reuses across refreshes (detection/judgements.py), under
# DAGSTER_HOME's storage folder like the other values the assets keep
REGRESSION_JUDGEMENTS = Path("storage") / "regression-judgements.json"
SITE_DIR = "report"  # the catalogue_report asset's site, under DAGSTER_HOME
LIGER_CLONE_DIR = "liger-git"  # the Liger clone the import commands make (and the liger_git resource's default)
LIGER_GIT_ENV = "KERNELINDEX_LIGER_GIT"  # a Liger clone of the operator's, instead of that one
LIGER_URL_ENV = "KERNELINDEX_LIGER_URL"  # where the import commands clone Liger from ("none": they make no clone)
SITE_URL_ENV = "KERNELINDEX_SITE_URL"  # where `kernelindex-pipeline serve` (or your own server) shows the site
SITE_HOST, SITE_PORT = "127.0.0.1", 8765  # `serve`'s defaults: loopback only


def site_url() -> str:
    """The address the UI links the site at: $KERNELINDEX_SITE_URL, else `serve`'s default."""
    return os.environ.get(SITE_URL_ENV) or f"http://{SITE_HOST}:{SITE_PORT}/"


def dagster_home() -> Path:
    """DAGSTER_HOME, or the project's local `.dagster_home` when it is unset."""
    return Path(os.environ.get(DAGSTER_HOME_ENV) or Path.cwd() / DEFAULT_DAGSTER_HOME)


def prepared_dagster_home() -> Path:
    """DAGSTER_HOME as an absolute path, created when new and set in this process's environment (so
    Dagster and every process started from here find the same instance; see `defs.instance`)."""
    home = dagster_home().resolve()
    home.mkdir(parents=True, exist_ok=True)
    os.environ[DAGSTER_HOME_ENV] = str(home)
    return home


def cache_root() -> Path:
    """$KERNELINDEX_CACHE_DIR, or ~/.cache/kernelindex-pipeline when it is unset or empty."""
    return Path(os.environ.get(CACHE_DIR_ENV) or Path.home() / ".cache" / "kernelindex-pipeline")


def catalogue_url(given: str | None = None) -> str | None:
    """The catalogue URL a command was given, else $KERNELINDEX_CATALOGUE_URL, else None: the embedded
    catalogue under DAGSTER_HOME (`default_catalogue_path`)."""
    return given or os.environ.get(CATALOGUE_URL_ENV) or None


def default_catalogue_path(home: str | os.PathLike[str] | None = None) -> Path:
    """``<home or $DAGSTER_HOME or ./.dagster_home>/kernelindex-catalogue.sqlite``: the embedded catalogue."""
    return (Path(home) if home else dagster_home()) / EMBEDDED_CATALOGUE


def default_judgement_store(home: str | os.PathLike[str] | None = None) -> Path:
    """``<home or $DAGSTER_HOME or ./.dagster_home>/storage/regression-judgements.json``: the judgement store
    of the `benchmark_regressions` asset."""
    return (Path(home) if home else dagster_home()) / REGRESSION_JUDGEMENTS


def liger_clone(home: str | os.PathLike[str] | None = None) -> str | None:
    """The Liger clone attribution reads: $KERNELINDEX_LIGER_GIT if set, else DAGSTER_HOME/liger-git where
    an import command made it (None: neither)."""
    given = os.environ.get(LIGER_GIT_ENV)
    if given:
        return given
    made = (Path(home) if home is not None else dagster_home()) / LIGER_CLONE_DIR
    return str(made) if made.is_dir() else None
