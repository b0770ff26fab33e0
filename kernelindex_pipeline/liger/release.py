"""Liger-Kernel releases as immutable inputs: the sdist from the package index, cached by content.

`fetch_release("0.8.5")` runs `pip download --no-deps --no-binary :all: liger-kernel==0.8.5` once,
stores the archive under `<cache>/liger-kernel/sha256/<hex>/<file>` and remembers
`<cache>/liger-kernel/versions/<version>.json` (sha256, size, fetched-at, locator). Later calls reuse
the cached file after re-hashing it; a file whose bytes no longer match its recorded sha256 is moved
aside and fetched again. Extraction uses tarfile's `data` filter (no absolute paths, no `..`, no links
out of the target, no device files).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

PACKAGE = "liger-kernel"
HISTORY_CSV = "benchmark/data/all_benchmark_data.csv"
PARSER_VERSION = "kernelindex-pipeline-liger-csv/1"


class ReleaseError(RuntimeError):
    """A release could not be fetched, verified or read; the message says which and why."""


@dataclass(frozen=True)
class SourceSnapshot:
    """Where an input came from and exactly which bytes were read."""

    locator: str
    resolvedVersion: str | None
    sha256: str
    sizeBytes: int
    fetchedAt: str
    parserVersion: str = PARSER_VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ReleaseArtifact:
    version: str
    path: Path  # the cached sdist
    sha256: str
    size: int
    fetched_at: str
    locator: str


def default_cache_dir() -> Path:
    env = os.environ.get("KERNELINDEX_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "kernelindex-pipeline"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _check_version(version: str) -> str:
    try:
        Version(version)
    except InvalidVersion:
        raise ReleaseError(f"{version!r} is not a release version (expected something like 0.8.5)") from None
    return version


def fetch_release(version: str, cache_dir: Path | str | None = None) -> ReleaseArtifact:
    """The `liger-kernel==version` sdist, from the cache when its bytes still match, else from the index."""
    _check_version(version)
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    base = root / PACKAGE
    index_file = base / "versions" / f"{version}.json"
    if index_file.is_file():
        try:
            entry = json.loads(index_file.read_text("utf-8"))
            path = base / "sha256" / entry["sha256"] / entry["filename"]
            if path.is_file() and _sha256_file(path) == entry["sha256"]:
                return ReleaseArtifact(version, path, entry["sha256"], path.stat().st_size, entry["fetchedAt"], entry["locator"])
            if path.is_file():  # corrupted or tampered: keep it for inspection, fetch afresh
                path.rename(path.with_name(path.name + ".corrupt"))
        except (OSError, ValueError, KeyError):
            pass  # an unreadable index entry is rebuilt below
    return _download(version, base, index_file)


def _download(version: str, base: Path, index_file: Path) -> ReleaseArtifact:
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="liger-sdist-", dir=base) as tmp:
        cmd = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
            "--disable-pip-version-check", "-vv", "-d", tmp, f"{PACKAGE}=={version}",
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ReleaseError(f"pip download of {PACKAGE}=={version} failed: {exc}") from None
        files = [p for p in Path(tmp).iterdir() if p.name.endswith((".tar.gz", ".zip"))]
        if proc.returncode != 0 or len(files) != 1:
            tail = " ".join((proc.stderr or proc.stdout or "").strip().splitlines()[-3:])
            raise ReleaseError(
                f"pip could not download the {PACKAGE}=={version} sdist (exit {proc.returncode}): {tail} "
                "-- check the version exists (kernelindex-pipeline uses `pip index versions liger-kernel`) "
                "and that the package index is reachable"
            )
        tmp_file = files[0]
        sha = _sha256_file(tmp_file)
        # pip -vv lists the candidate links it found; the one ending in the saved file is the source.
        m = re.search(r"(https?://\S+/" + re.escape(tmp_file.name) + r")(?:#\S*)?", proc.stdout + proc.stderr)
        locator = m.group(1) if m else f"pypi:{PACKAGE}=={version}/{tmp_file.name}"
        dest_dir = base / "sha256" / sha
        dest_dir.mkdir(parents=True, exist_ok=True)
        dest = dest_dir / tmp_file.name
        if not dest.is_file() or _sha256_file(dest) != sha:
            shutil.move(str(tmp_file), dest)
    fetched_at = _now()
    entry = {"version": version, "sha256": sha, "filename": dest.name, "size": dest.stat().st_size,
             "fetchedAt": fetched_at, "locator": locator}
    index_file.parent.mkdir(parents=True, exist_ok=True)
    tmp_index = index_file.with_suffix(".json.tmp")
    tmp_index.write_text(json.dumps(entry, indent=2), "utf-8")
    tmp_index.replace(index_file)
    return ReleaseArtifact(version, dest, sha, entry["size"], fetched_at, locator)


def extract_release(artifact: ReleaseArtifact | Path | str, dest: Path | str) -> Path:
    """Extract an sdist safely into `dest`; return the release root (the directory holding benchmark/)."""
    path = artifact.path if isinstance(artifact, ReleaseArtifact) else Path(artifact)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    try:
        with tarfile.open(path, "r:*") as tar:
            tar.extractall(dest, filter="data")
    except (tarfile.TarError, OSError) as exc:  # FilterError is a TarError
        raise ReleaseError(f"cannot extract {path}: {exc}") from None
    candidates = [p.parent.parent for p in dest.glob("*/benchmark/data")] + [p.parent.parent for p in dest.glob("benchmark/data")]
    for root in candidates:
        return root
    roots = [p for p in dest.iterdir() if p.is_dir()]
    if len(roots) == 1:
        return roots[0]
    raise ReleaseError(f"{path}: no release root with benchmark/ inside")


def read_history_csv(artifact: ReleaseArtifact) -> tuple[bytes, SourceSnapshot]:
    """The bytes of benchmark/data/all_benchmark_data.csv inside the sdist, and the snapshot of the sdist.

    Reads the one member directly (no extraction to disk). The snapshot names the sdist (its sha256
    and size) and the member as `<locator>#<member path>`.
    """
    try:
        with tarfile.open(artifact.path, "r:*") as tar:
            member = next(
                (m for m in tar.getmembers() if m.isfile() and m.name.split("/", 1)[-1] == HISTORY_CSV), None
            )
            if member is None:
                raise ReleaseError(f"{artifact.path.name} has no {HISTORY_CSV}")
            f = tar.extractfile(member)
            data = f.read() if f else b""
    except tarfile.TarError as exc:
        raise ReleaseError(f"cannot read {artifact.path}: {exc}") from None
    snapshot = SourceSnapshot(
        locator=f"{artifact.locator}#{member.name}",
        resolvedVersion=artifact.version,
        sha256=artifact.sha256,
        sizeBytes=artifact.size,
        fetchedAt=artifact.fetched_at,
    )
    return data, snapshot


def list_release_versions() -> list[str]:
    """Every `liger-kernel` version on the package index, oldest first (newest last)."""
    cmd = [sys.executable, "-m", "pip", "index", "versions", PACKAGE, "--json", "--disable-pip-version-check"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        versions = json.loads(proc.stdout)["versions"]
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError, TypeError) as exc:
        raise ReleaseError(f"cannot list {PACKAGE} versions from the package index: {exc}") from None
    return sorted(versions, key=Version)


def snapshot_of_file(path: Path) -> SourceSnapshot:
    """A snapshot for a local CSV given by path."""
    try:
        stat = path.stat()
        sha = _sha256_file(path)
    except OSError as exc:
        raise ReleaseError(f"cannot read {path}: {exc}") from None
    return SourceSnapshot(path.resolve().as_uri(), None, sha, stat.st_size, _now())


def snapshot_of_bytes(data: bytes, locator: str = "bytes:") -> SourceSnapshot:
    return SourceSnapshot(locator, None, hashlib.sha256(data).hexdigest(), len(data), _now())
