"""The Dagster instance in DAGSTER_HOME, as the import commands, the bisection job's tests and the daemon
supervisor open it: the home given the project's dagster.yaml when new, its storage created once."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from dagster import DagsterInstance
from filelock import FileLock


def local_instance(home: Path) -> DagsterInstance:
    """DAGSTER_HOME's instance (home given a copy of the project's dagster.yaml when new).

    Dagster creates and migrates its SQLite storage when an instance is first made; two processes
    doing that at once on a fresh home break it ("table runs already exists", "more than one head
    present"), sometimes for good. So that step is serialised across processes with a file lock in
    DAGSTER_HOME (filelock: released when the holder dies), and ends only once every storage database
    exists (some are created on first use)."""
    with FileLock(home / ".kernelindex-instance.lock"):
        config = home / "dagster.yaml"
        if not config.exists():  # written whole, never seen half-copied by another process
            with tempfile.NamedTemporaryFile("wb", dir=home, prefix=".dagster.yaml.", delete=False) as tmp:
                with open(Path(__file__).resolve().parents[1] / "data" / "dagster.yaml", "rb") as source:
                    shutil.copyfileobj(source, tmp)
            os.replace(tmp.name, config)
        instance = DagsterInstance.get()
        instance.get_runs_count()
        instance.get_dynamic_partitions("kernelindex-instance-check")
        instance.all_instigator_state()
    return instance
