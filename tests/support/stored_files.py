"""The artifact store's files of this test session (conftest's `artifact_store` fixture points the store at it)."""

from __future__ import annotations

from pathlib import Path


def stored_file(ref: dict) -> Path:
    """The artifact store's file of a record's {"uri", "digest"} (the store of this test session)."""
    from kernelindex_pipeline.sweep.artifact_store import ArtifactStore

    return Path(ArtifactStore.from_environment().path_of(ref["digest"].removeprefix("sha256:")))
