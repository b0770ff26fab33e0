"""Liger-Kernel's own CI results as a source: Liger-format benchmark CSVs given as URLs or local paths.

Liger's benchmark workflow publishes each run's whole `all_benchmark_data.csv` on its gh-pages branch
(`https://raw.githubusercontent.com/linkedin/Liger-Kernel/gh-pages/benchmarks/<dir>/benchmark.csv`).
A file is fetched whole (bounded in size and time), sliced by (kebab(gpu_name), liger_version) exactly
like the committed history, and each slice is one part of that partition: a partition gathers the
parts of every listed file that names it (weekly runs of one version), and each part becomes records
on its own, as `transform` would make them from that file.

Locators are hostile input: only https URLs (plain http only to a loopback host, for local mirrors
and tests) or existing local files; the size cap holds while streaming; user info and query values
of a URL (tokens) are redacted everywhere they are shown or stored.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import requests

from kernelindex_pipeline.liger.partition import PartitionCsv, parts_digest, slice_history
from kernelindex_pipeline.redaction import redact_locator

MAX_FILE_BYTES = 256 * 2**20  # the largest CI file seen is under 1 MB; a whole history is about 10 MB
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0  # between two chunks, not for the whole body
_CHUNK = 1 << 16


class CiSourceError(ValueError):
    """A CI locator that cannot be read: names the (redacted) locator and what to fix."""


def _is_loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class CiFile:
    locator: str  # redacted
    data: bytes
    fetched_at: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def fetch(locator: str, *, max_bytes: int = MAX_FILE_BYTES, session: requests.Session | None = None) -> CiFile:
    """The bytes of one CI file (https URL, loopback http URL, or local path), at most `max_bytes`."""
    shown = redact_locator(locator)
    parts = urlsplit(locator)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"
    if parts.scheme in ("http", "https"):
        if parts.scheme == "http" and not _is_loopback(parts.hostname):
            raise CiSourceError(f"{shown}: plain http is only allowed to a loopback host; use https")
        return CiFile(shown, _download(locator, shown, max_bytes, session), now)
    if parts.scheme and len(parts.scheme) > 1:  # "C:\\..." has a one-letter scheme
        raise CiSourceError(f"{shown}: unsupported locator scheme {parts.scheme!r}; give an https URL or a local path")
    path = Path(locator).expanduser()
    if not path.is_file():
        raise CiSourceError(f"{shown}: no such file")
    size = path.stat().st_size
    if size > max_bytes:
        raise CiSourceError(f"{shown}: {size} bytes is more than the {max_bytes}-byte limit for a CI file")
    return CiFile(str(path.resolve()), path.read_bytes(), now)


def _download(url: str, shown: str, max_bytes: int, session: requests.Session | None) -> bytes:
    http = session or requests.Session()
    try:
        with http.get(url, stream=True, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S), allow_redirects=True) as response:
            if response.status_code != 200:
                raise CiSourceError(f"{shown}: HTTP {response.status_code} {response.reason or ''}".rstrip())
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise CiSourceError(f"{shown}: {declared} bytes is more than the {max_bytes}-byte limit for a CI file")
            body = bytearray()
            for chunk in response.iter_content(_CHUNK):
                body += chunk
                if len(body) > max_bytes:
                    raise CiSourceError(f"{shown}: more than the {max_bytes}-byte limit for a CI file")
            return bytes(body)
    except requests.RequestException as error:
        # The exception text may carry the full URL: name the redacted locator and the error class only.
        raise CiSourceError(f"{shown}: download failed ({type(error).__name__})") from None
    finally:
        if session is None:
            http.close()


def read_locator_list(path: Path) -> list[str]:
    """Locators of a list file: one per line; blank lines and lines starting with '#' are ignored."""
    if not path.is_file():
        return []
    lines = (line.strip() for line in path.read_text("utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def add_to_locator_list(path: Path, locators: Iterable[str]) -> list[str]:
    """Append the locators the list does not hold yet (local paths made absolute); return those added."""
    present = set(read_locator_list(path))
    added = []
    for locator in locators:
        normal = locator if urlsplit(locator).scheme in ("http", "https") else str(Path(locator).expanduser().resolve())
        if normal not in present:
            present.add(normal)
            added.append(normal)
    if added:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as out:
            out.writelines(f"{line}\n" for line in added)
    return added


@dataclass
class CiPartitions:
    """The parts of every partition the files name, and the rows that name no usable GPU or version."""

    parts: dict[tuple[str, str], list[PartitionCsv]]
    unattributable: dict[str, list[int]] = field(default_factory=dict)  # locator -> 1-based data row numbers
    files: list[CiFile] = field(default_factory=list)

    def digest(self, pair: tuple[str, str]) -> str:
        return parts_digest(self.parts.get(pair, []))


def gather(files: Iterable[CiFile]) -> CiPartitions:
    """Slice each file by (GPU, version); a partition's parts follow the files' order."""
    out = CiPartitions(parts={})
    for file in files:
        out.files.append(file)
        try:
            slices = slice_history(file.data)
        except ValueError as error:
            raise CiSourceError(f"{file.locator}: {error}") from None
        if slices.unattributable_rows:
            out.unattributable[file.locator] = slices.unattributable_rows
        for (gpu, version), part in slices.partitions.items():
            snapshot = {
                "locator": file.locator,
                "resolvedVersion": version,
                "sha256": file.sha256,
                "sizeBytes": len(file.data),
                "fetchedAt": file.fetched_at,
                "partition": {"gpu": gpu, "liger_version": version},
                "rows": part.rows,
                "partitionSha256": hashlib.sha256(part.csv_bytes).hexdigest(),
            }
            out.parts.setdefault((gpu, version), []).append(PartitionCsv(gpu, version, "ci", part.csv_bytes, snapshot))
    return out
