"""Release archives as immutable, untrusted inputs: a content-addressed cache, whole-archive
verification and safe extraction. The history chain reads a release's history CSV out of a cached
sdist; the sweep extracts one to run its scripts (liger/release.py fetches them).

Cache layout under a package's directory: `sha256/<hex>/<file>` holds the bytes, `versions/<version>.json`
remembers which file a version is (sha256, size, fetched-at, locator). A cached file is re-hashed on
every lookup; one whose bytes no longer match is moved aside (`.corrupt`) and reported missing.

Before anything is read from an archive the whole of it is verified (`verify_archive`: its sha256 when
known, and the compressed stream read to the end so that gzip's CRC and length trailer are checked,
with the decompressed size capped). Extraction takes only regular files and directories (no symlinks,
hardlinks, devices or FIFOs at all: an sdist needs none, and a link is how tarfile's own `data` filter
was defeated, CVE-2025-4517), checks every target path, caps member count, per-member and total size,
and goes into a temporary directory renamed into place, so a refused or corrupt archive leaves nothing
behind. The limits are below (MAX_*) and in docs/reference/bad-input.md.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import lzma
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

# Limits on what an archive may hold (liger-kernel 0.8.5: 962 members, 42 MB unpacked, largest member
# 26 MB). Generous for growth, small enough that a bomb cannot fill a disk or RAM.
MAX_MEMBERS = 20_000
MAX_MEMBER_BYTES = 512 * 2**20
MAX_TOTAL_BYTES = 2 * 2**30

_DECOMPRESSORS = ((b"\x1f\x8b", gzip.open), (b"BZh", bz2.open), (b"\xfd7zXZ\x00", lzma.open))


class ArchiveError(RuntimeError):
    """An archive could not be verified, read or extracted; the message says which and why."""


@dataclass(frozen=True)
class CachedArchive:
    version: str
    path: Path  # the cached file
    sha256: str
    size: int
    fetched_at: str
    locator: str


def utc_now() -> str:
    """The fetched-at time of a cache entry (and of a source snapshot): milliseconds, UTC, `Z`."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MiB"


class ArchiveCache:
    """The content-addressed cache of one package's archives under `base` (layout: module docstring)."""

    def __init__(self, base: Path):
        self.base = Path(base)

    def _index(self, version: str) -> Path:
        return self.base / "versions" / f"{version}.json"

    def lookup(self, version: str) -> CachedArchive | None:
        """The cached archive of `version` when its bytes still match their sha256, else None."""
        index_file = self._index(version)
        if not index_file.is_file():
            return None
        try:
            entry = json.loads(index_file.read_text("utf-8"))
            path = self.base / "sha256" / entry["sha256"] / entry["filename"]
            if path.is_file() and sha256_file(path) == entry["sha256"]:
                return CachedArchive(
                    version, path, entry["sha256"], path.stat().st_size, entry["fetchedAt"], entry["locator"]
                )
            if path.is_file():  # corrupted or tampered: keep it for inspection, fetch afresh
                path.rename(path.with_name(path.name + ".corrupt"))
        except (OSError, ValueError, KeyError):
            pass  # an unreadable index entry is rebuilt by the next store
        return None

    def staging(self) -> tempfile.TemporaryDirectory:
        """A temporary directory inside the cache to download into (same filesystem: a rename stores)."""
        self.base.mkdir(parents=True, exist_ok=True)
        return tempfile.TemporaryDirectory(prefix="download-", dir=self.base)

    def store(self, version: str, downloaded: Path, locator: str) -> CachedArchive:
        """Move a downloaded file into the cache under its sha256 and remember it as `version`."""
        sha = sha256_file(downloaded)
        dest_dir = self.base / "sha256" / sha
        dest_dir.mkdir(parents=True, exist_ok=True)
        dest = dest_dir / downloaded.name
        if not dest.is_file() or sha256_file(dest) != sha:
            shutil.move(str(downloaded), dest)
        fetched_at = utc_now()
        entry = {
            "version": version,
            "sha256": sha,
            "filename": dest.name,
            "size": dest.stat().st_size,
            "fetchedAt": fetched_at,
            "locator": locator,
        }
        index_file = self._index(version)
        index_file.parent.mkdir(parents=True, exist_ok=True)
        tmp_index = index_file.with_suffix(".json.tmp")
        tmp_index.write_text(json.dumps(entry, indent=2), "utf-8")
        tmp_index.replace(index_file)
        return CachedArchive(version, dest, sha, entry["size"], fetched_at, locator)


def verify_archive(path: Path, sha256: str | None = None) -> None:
    """Raise ArchiveError unless `path` is a whole, intact archive: its sha256 is `sha256` (when given)
    and its compressed stream decompresses to the end (gzip/bzip2/xz check their CRC there) into at
    most MAX_TOTAL_BYTES plus tar headers. tarfile alone stops at the end-of-archive blocks and never
    reads the trailer, so a bit-flipped member would extract "ok"."""
    path = Path(path)
    try:
        if sha256 is not None and sha256_file(path) != sha256:
            raise ArchiveError(
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
                    raise ArchiveError(
                        f"{path.name}: unpacks to more than {mib(limit)} (limit {mib(MAX_TOTAL_BYTES)}): refused"
                    )
    except ArchiveError:
        raise
    except (OSError, EOFError, ValueError, lzma.LZMAError) as exc:  # BadGzipFile is an OSError
        raise ArchiveError(
            f"{path.name} is truncated or corrupt ({type(exc).__name__}: {exc}); delete it and fetch again"
        ) from None


def _checked_members(tar: tarfile.TarFile, archive: str) -> list[tarfile.TarInfo]:
    """Every member, refused unless it is a regular file or a directory with a relative, plain path,
    within the size and count limits. The paths are checked again against the target on extraction."""
    members: list[tarfile.TarInfo] = []
    total = 0
    for member in tar:
        if len(members) >= MAX_MEMBERS:
            raise ArchiveError(f"{archive}: more than {MAX_MEMBERS} members: refused")
        if member.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE):
            kind = "symlink" if member.issym() else "hardlink" if member.islnk() else "special or sparse file"
            raise ArchiveError(
                f"{archive}: member {member.name!r} is a {kind}; a release may hold only regular files and directories"
            )
        parts = Path(member.name).parts
        if not parts or Path(member.name).is_absolute() or ".." in parts or "\x00" in member.name:
            raise ArchiveError(f"{archive}: member {member.name!r} has an unsafe path")
        if member.size > MAX_MEMBER_BYTES:
            raise ArchiveError(
                f"{archive}: member {member.name!r} is {mib(member.size)}, over the {mib(MAX_MEMBER_BYTES)} limit per member"
            )
        total += member.size
        if total > MAX_TOTAL_BYTES:
            raise ArchiveError(f"{archive}: members add up to more than {mib(MAX_TOTAL_BYTES)}: refused")
        members.append(member)
    return members


def extract_archive(
    path: Path, dest: Path | str, *, sha256: str | None, find_root: Callable[[Path, str], Path]
) -> Path:
    """Extract an archive safely into `dest`; return the root `find_root(extracted, archive name)` names
    (it raises ArchiveError when there is none, and then nothing is extracted).

    All or nothing: the archive is verified and extracted into a temporary directory beside `dest`
    (which must not exist yet or be empty), which replaces `dest` only when everything succeeded."""
    path, dest = Path(path), Path(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ArchiveError(f"cannot extract {path.name} into {dest}: it exists and is not an empty directory")
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
                        raise ArchiveError(
                            f"{path.name}: member {member.name!r} would land outside the extraction directory"
                        )
                # The data filter as a second line of defence (modes, owners); links never reach it.
                tar.extractall(staging, members=members, filter="data")
        except (tarfile.TarError, OSError, EOFError) as exc:  # FilterError is a TarError
            raise ArchiveError(f"cannot extract {path.name}: {type(exc).__name__}: {exc}") from None
        root = find_root(staging, path.name)
        if dest.exists():
            dest.rmdir()
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return dest / root.relative_to(staging)
