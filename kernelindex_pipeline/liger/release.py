"""Liger-Kernel releases as immutable inputs: the sdist from the package index, cached by content.

`fetch_release("0.8.5")` runs `pip download --no-deps --no-binary :all: liger-kernel==0.8.5` once and
stores the archive in the content-addressed cache of `imports.archive` under `<cache>/liger-kernel/`.
Later calls reuse the cached file after re-hashing it; a file whose bytes no longer match its recorded
sha256 is moved aside and fetched again.

A release is untrusted input: `imports.archive` verifies the whole archive before anything is read
from it and extracts only regular files and directories, within limits (MAX_* there and in
docs/reference/bad-input.md). Here: which release (pip), where its history CSV is (`HISTORY_CSV`, read straight from the
verified archive, at most MAX_HISTORY_CSV_BYTES), and where its root is (the directory holding
benchmark/).
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

from packaging.version import InvalidVersion, Version

from kernelindex_pipeline.home import cache_root
from kernelindex_pipeline.imports.archive import (
    ArchiveCache,
    ArchiveError,
    CachedArchive,
    extract_archive,
    mib,
    sha256_file,
    utc_now,
    verify_archive,
)
from kernelindex_pipeline.imports.result import SourceSnapshot

PACKAGE = "liger-kernel"
HISTORY_CSV = "benchmark/data/all_benchmark_data.csv"
PARSER_VERSION = "kernelindex-pipeline-liger-csv/1"

# The history CSV is read into memory whole (0.8.5: 0.9 MB).
MAX_HISTORY_CSV_BYTES = 256 * 2**20


class ReleaseError(ArchiveError):
    """A release could not be fetched or read; the message says which and why. Verification and
    extraction raise its base, imports.archive.ArchiveError."""


def check_version(version: str) -> str:
    try:
        Version(version)
    except InvalidVersion:
        raise ReleaseError(f"{version!r} is not a release version (expected something like 0.8.5)") from None
    return version


def fetch_release(version: str, cache_dir: Path | str | None = None) -> CachedArchive:
    """The `liger-kernel==version` sdist, from the cache when its bytes still match, else from the index."""
    check_version(version)
    cache = ArchiveCache((Path(cache_dir) if cache_dir else cache_root()) / PACKAGE)
    return cache.lookup(version) or _download(version, cache)


def _pip_error(proc: subprocess.CompletedProcess) -> str:
    """pip's last `ERROR:` line (else its last line), cut to 200 characters: one sentence, not pip's
    whole -vv stderr."""
    lines = [line.strip() for line in (proc.stderr or proc.stdout or "").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    last = (errors or lines or [f"exit {proc.returncode}"])[-1]
    last = last.removeprefix("ERROR:").strip().rstrip(".")
    return last if len(last) <= 200 else last[:197] + "..."


def _download(version: str, cache: ArchiveCache) -> CachedArchive:
    with cache.staging() as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--disable-pip-version-check",
            "-vv",
            "-d",
            tmp,
            f"{PACKAGE}=={version}",
        ]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ReleaseError(f"pip download of {PACKAGE}=={version} failed: {exc}") from None
        files = [p for p in Path(tmp).iterdir() if p.name.endswith((".tar.gz", ".zip"))]
        if proc.returncode != 0 or len(files) != 1:
            raise ReleaseError(
                f"pip could not download the {PACKAGE}=={version} sdist ({_pip_error(proc)}); check that the "
                f"version exists (`pip index versions {PACKAGE}`) and that the package index is reachable"
            )
        # pip -vv lists the candidate links it found; the one ending in the saved file is the source.
        m = re.search(r"(https?://\S+/" + re.escape(files[0].name) + r")(?:#\S*)?", proc.stdout + proc.stderr)
        locator = m.group(1) if m else f"pypi:{PACKAGE}=={version}/{files[0].name}"
        return cache.store(version, files[0], locator)


def extract_release(artifact: CachedArchive | Path | str, dest: Path | str) -> Path:
    """Extract an sdist safely into `dest` (imports.archive.extract_archive; all or nothing); return the
    release root (the directory holding benchmark/). A cached artifact's sha256 is checked again."""
    path = artifact.path if isinstance(artifact, CachedArchive) else Path(artifact)
    sha256 = artifact.sha256 if isinstance(artifact, CachedArchive) else None
    return extract_archive(path, dest, sha256=sha256, find_root=_release_root)


def _release_root(extracted: Path, archive: str) -> Path:
    """The directory of an extracted sdist that holds benchmark/ (else its one top directory)."""
    for root in [
        *(p.parent.parent for p in sorted(extracted.glob("*/benchmark/data"))),
        *(p.parent.parent for p in extracted.glob("benchmark/data")),
    ]:
        return root
    roots = [p for p in extracted.iterdir() if p.is_dir()]
    if len(roots) == 1:
        return roots[0]
    raise ReleaseError(f"{archive}: no release root with benchmark/ inside")


def read_history_csv(artifact: CachedArchive) -> tuple[bytes, SourceSnapshot]:
    """The bytes of benchmark/data/all_benchmark_data.csv inside the sdist, and their snapshot.

    Verifies the whole archive first (sha256 and compressed stream), then reads the one member directly
    (no extraction to disk), refusing one over MAX_HISTORY_CSV_BYTES before reading it. The snapshot
    names the member as `<locator>#<member path>` with the member's sha256 and size (the bytes read; what
    KernelIndex's snapshot of a CSV digests), the sdist's in `archiveSha256`/`archiveSizeBytes`.
    """
    verify_archive(artifact.path, artifact.sha256)
    try:
        with tarfile.open(artifact.path, "r:*") as tar:
            member = next((m for m in tar if m.name.split("/", 1)[-1] == HISTORY_CSV), None)
            if member is None or not member.isreg():
                raise ReleaseError(f"{artifact.path.name} has no {HISTORY_CSV} (as a regular file)")
            if member.size > MAX_HISTORY_CSV_BYTES:
                raise ReleaseError(
                    f"{artifact.path.name}: {member.name} is {mib(member.size)}, over the {mib(MAX_HISTORY_CSV_BYTES)} limit for a history CSV"
                )
            f = tar.extractfile(member)
            data = f.read() if f else b""
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ReleaseError(f"cannot read {artifact.path.name}: {type(exc).__name__}: {exc}") from None
    snapshot = SourceSnapshot(
        locator=f"{artifact.locator}#{member.name}",
        resolvedVersion=artifact.version,
        sha256=hashlib.sha256(data).hexdigest(),
        sizeBytes=len(data),
        fetchedAt=artifact.fetched_at,
        parserVersion=PARSER_VERSION,
        archiveSha256=artifact.sha256,
        archiveSizeBytes=artifact.size,
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
        sha = sha256_file(path)
    except OSError as exc:
        raise ReleaseError(f"cannot read {path}: {exc}") from None
    return SourceSnapshot(path.resolve().as_uri(), None, sha, stat.st_size, utc_now(), PARSER_VERSION)


def snapshot_of_bytes(data: bytes, locator: str = "bytes:") -> SourceSnapshot:
    return SourceSnapshot(locator, None, hashlib.sha256(data).hexdigest(), len(data), utc_now(), PARSER_VERSION)
