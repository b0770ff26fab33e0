"""Liger-Kernel releases as immutable inputs: the sdist from the package index, cached by content.

`fetch_release("0.8.5")` runs `pip download --no-deps --no-binary :all: liger-kernel==0.8.5` once,
stores the archive under `<cache>/liger-kernel/sha256/<hex>/<file>` and remembers
`<cache>/liger-kernel/versions/<version>.json` (sha256, size, fetched-at, locator). Later calls reuse
the cached file after re-hashing it; a file whose bytes no longer match its recorded sha256 is moved
aside and fetched again.

A release is untrusted input. Before anything is read from an sdist the whole archive is verified
(`verify_archive`: its sha256 when known, and the compressed stream read to the end so that gzip's
CRC and length trailer are checked, with the decompressed size capped). Extraction takes only regular
files and directories (no symlinks, hardlinks, devices or FIFOs at all: an sdist needs none, and a
link is how tarfile's own `data` filter was defeated, CVE-2025-4517), checks every target path, caps
member count, per-member and total size, and goes into a temporary directory renamed into place, so a
refused or corrupt archive leaves nothing behind. The limits are below (MAX_*) and in the README.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
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

from kernelindex_pipeline.home import cache_root

PACKAGE = "liger-kernel"
HISTORY_CSV = "benchmark/data/all_benchmark_data.csv"
PARSER_VERSION = "kernelindex-pipeline-liger-csv/1"

# Limits on what an sdist may hold (liger-kernel 0.8.5: 962 members, 42 MB unpacked, largest member
# 26 MB, history CSV 0.9 MB). Generous for growth, small enough that a bomb cannot fill a disk or RAM.
MAX_MEMBERS = 20_000
MAX_MEMBER_BYTES = 512 * 2**20
MAX_TOTAL_BYTES = 2 * 2**30
MAX_HISTORY_CSV_BYTES = 256 * 2**20  # read into memory whole

_DECOMPRESSORS = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))


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


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def check_version(version: str) -> str:
    try:
        Version(version)
    except InvalidVersion:
        raise ReleaseError(f"{version!r} is not a release version (expected something like 0.8.5)") from None
    return version


def fetch_release(version: str, cache_dir: Path | str | None = None) -> ReleaseArtifact:
    """The `liger-kernel==version` sdist, from the cache when its bytes still match, else from the index."""
    check_version(version)
    root = Path(cache_dir) if cache_dir else cache_root()
    base = root / PACKAGE
    index_file = base / "versions" / f"{version}.json"
    if index_file.is_file():
        try:
            entry = json.loads(index_file.read_text("utf-8"))
            path = base / "sha256" / entry["sha256"] / entry["filename"]
            if path.is_file() and _sha256_file(path) == entry["sha256"]:
                return ReleaseArtifact(
                    version, path, entry["sha256"], path.stat().st_size, entry["fetchedAt"], entry["locator"]
                )
            if path.is_file():  # corrupted or tampered: keep it for inspection, fetch afresh
                path.rename(path.with_name(path.name + ".corrupt"))
        except (OSError, ValueError, KeyError):
            pass  # an unreadable index entry is rebuilt below
    return _download(version, base, index_file)


def _pip_error(proc: subprocess.CompletedProcess) -> str:
    """pip's last `ERROR:` line (else its last line), cut to 200 characters: one sentence, not pip's
    whole -vv stderr."""
    lines = [line.strip() for line in (proc.stderr or proc.stdout or "").splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("ERROR:")]
    last = (errors or lines or [f"exit {proc.returncode}"])[-1]
    last = last.removeprefix("ERROR:").strip().rstrip(".")
    return last if len(last) <= 200 else last[:197] + "..."


def _download(version: str, base: Path, index_file: Path) -> ReleaseArtifact:
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="liger-sdist-", dir=base) as tmp:
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
    entry = {
        "version": version,
        "sha256": sha,
        "filename": dest.name,
        "size": dest.stat().st_size,
        "fetchedAt": fetched_at,
        "locator": locator,
    }
    index_file.parent.mkdir(parents=True, exist_ok=True)
    tmp_index = index_file.with_suffix(".json.tmp")
    tmp_index.write_text(json.dumps(entry, indent=2), "utf-8")
    tmp_index.replace(index_file)
    return ReleaseArtifact(version, dest, sha, entry["size"], fetched_at, locator)


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


def verify_archive(path: Path, sha256: str | None = None) -> None:
    """Raise ReleaseError unless `path` is a whole, intact archive: its sha256 is `sha256` (when given)
    and its compressed stream decompresses to the end (gzip/bzip2/xz check their CRC there) into at
    most MAX_TOTAL_BYTES plus tar headers. tarfile alone stops at the end-of-archive blocks and never
    reads the trailer, so a bit-flipped member would extract "ok"."""
    path = Path(path)
    try:
        if sha256 is not None and _sha256_file(path) != sha256:
            raise ReleaseError(
                f"{path.name}: sha256 does not match the recorded {sha256}: the file changed; delete it and fetch again"
            )
        with open(path, "rb") as raw:
            magic = raw.read(6)
        opener = next((op for prefix, op in _DECOMPRESSORS if magic.startswith(prefix)), None)
        if opener is None:
            return  # an uncompressed tar: there is no checksum beyond the headers tarfile checks
        limit = MAX_TOTAL_BYTES + (MAX_MEMBERS + 2) * 2 * tarfile.BLOCKSIZE
        total = 0
        with opener(path, "rb") as stream:
            while block := stream.read(1 << 20):
                total += len(block)
                if total > limit:
                    raise ReleaseError(
                        f"{path.name}: unpacks to more than {_mib(limit)} (limit {_mib(MAX_TOTAL_BYTES)}): refused"
                    )
    except ReleaseError:
        raise
    except (OSError, EOFError, ValueError, lzma.LZMAError) as exc:  # BadGzipFile is an OSError
        raise ReleaseError(
            f"{path.name} is truncated or corrupt ({type(exc).__name__}: {exc}); delete it and fetch again"
        ) from None


def _checked_members(tar: tarfile.TarFile, archive: str) -> list[tarfile.TarInfo]:
    """Every member, refused unless it is a regular file or a directory with a relative, plain path,
    within the size and count limits. The paths are checked again against the target on extraction."""
    members: list[tarfile.TarInfo] = []
    total = 0
    for member in tar:
        if len(members) >= MAX_MEMBERS:
            raise ReleaseError(f"{archive}: more than {MAX_MEMBERS} members: refused")
        if member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE):
            kind = "symlink" if member.issym() else "hardlink" if member.islnk() else "special or sparse file"
            raise ReleaseError(
                f"{archive}: member {member.name!r} is a {kind}; a release may hold only regular files and directories"
            )
        parts = Path(member.name).parts
        if not parts or Path(member.name).is_absolute() or ".." in parts or "\x00" in member.name:
            raise ReleaseError(f"{archive}: member {member.name!r} has an unsafe path")
        if member.size > MAX_MEMBER_BYTES:
            raise ReleaseError(
                f"{archive}: member {member.name!r} is {_mib(member.size)}, over the {_mib(MAX_MEMBER_BYTES)} limit per member"
            )
        total += member.size
        if total > MAX_TOTAL_BYTES:
            raise ReleaseError(f"{archive}: members add up to more than {_mib(MAX_TOTAL_BYTES)}: refused")
        members.append(member)
    return members


def extract_release(artifact: ReleaseArtifact | Path | str, dest: Path | str) -> Path:
    """Extract an sdist safely into `dest`; return the release root (the directory holding benchmark/).

    All or nothing: the archive is verified and extracted into a temporary directory beside `dest`
    (which must not exist yet or be empty), which replaces `dest` only when everything succeeded."""
    path = artifact.path if isinstance(artifact, ReleaseArtifact) else Path(artifact)
    sha256 = artifact.sha256 if isinstance(artifact, ReleaseArtifact) else None
    dest = Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ReleaseError(f"cannot extract {path.name} into {dest}: it exists and is not an empty directory")
    verify_archive(path, sha256)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        try:
            with tarfile.open(path, "r:*") as tar:
                members = _checked_members(tar, path.name)
                base = os.path.realpath(staging)
                for member in members:
                    target = os.path.realpath(os.path.join(base, member.name))
                    if os.path.commonpath([base, target]) != base:
                        raise ReleaseError(
                            f"{path.name}: member {member.name!r} would land outside the extraction directory"
                        )
                # The data filter as a second line of defence (modes, owners); links never reach it.
                tar.extractall(staging, members=members, filter="data")
        except (tarfile.TarError, OSError, EOFError) as exc:  # FilterError is a TarError
            raise ReleaseError(f"cannot extract {path.name}: {type(exc).__name__}: {exc}") from None
        root = _release_root(staging, path.name)
        if dest.exists():
            dest.rmdir()
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dest / root.relative_to(staging)


def _release_root(extracted: Path, archive: str) -> Path:
    for root in [
        *(p.parent.parent for p in sorted(extracted.glob("*/benchmark/data"))),
        *(p.parent.parent for p in extracted.glob("benchmark/data")),
    ]:
        return root
    roots = [p for p in extracted.iterdir() if p.is_dir()]
    if len(roots) == 1:
        return roots[0]
    raise ReleaseError(f"{archive}: no release root with benchmark/ inside")


def read_history_csv(artifact: ReleaseArtifact) -> tuple[bytes, SourceSnapshot]:
    """The bytes of benchmark/data/all_benchmark_data.csv inside the sdist, and the snapshot of the sdist.

    Verifies the whole archive first (sha256 and compressed stream), then reads the one member directly
    (no extraction to disk), refusing one over MAX_HISTORY_CSV_BYTES before reading it. The snapshot
    names the sdist (its sha256 and size) and the member as `<locator>#<member path>`.
    """
    verify_archive(artifact.path, artifact.sha256)
    try:
        with tarfile.open(artifact.path, "r:*") as tar:
            member = next((m for m in tar if m.name.split("/", 1)[-1] == HISTORY_CSV), None)
            if member is None or not member.isreg():
                raise ReleaseError(f"{artifact.path.name} has no {HISTORY_CSV} (as a regular file)")
            if member.size > MAX_HISTORY_CSV_BYTES:
                raise ReleaseError(
                    f"{artifact.path.name}: {member.name} is {_mib(member.size)}, over the {_mib(MAX_HISTORY_CSV_BYTES)} limit for a history CSV"
                )
            f = tar.extractfile(member)
            data = f.read() if f else b""
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise ReleaseError(f"cannot read {artifact.path.name}: {type(exc).__name__}: {exc}") from None
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
