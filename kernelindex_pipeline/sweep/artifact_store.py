"""Where a sweep's evidence ends up: a content-addressed, write-once artifact store.

A sweep writes raw samples and logs into its work directory (sweep/samples.py, run.py); before
its result leaves the sweep process, `publish_evidence` copies each file into the store under its
sha256 and replaces the `file://` URI of the sweep host by the store's URI, so no record names a host
path and KernelIndex (or anyone) can fetch the evidence by its digest.

- **Location** (`KERNELINDEX_ARTIFACT_STORE`, or SweepRequest.artifact_store): a local directory (the
  default: `<cache>/artifacts`, where <cache> is $KERNELINDEX_CACHE_DIR or ~/.cache/kernelindex-pipeline)
  or any fsspec URL: `s3://bucket/prefix` (s3fs; an S3-compatible endpoint through fsspec's own
  settings, e.g. `FSSPEC_S3_ENDPOINT_URL` or `AWS_ENDPOINT_URL`), `gs://...`, `memory://...` in tests.
- **Layout**: `<location>/sha256/<first two hex>/<hex>`. An object is written once: one already there
  is read back and must have that digest (a store that holds other bytes under a digest is reported,
  never overwritten); a local object is linked into place (`os.link`, which fails rather than replace).
- **URIs in records**: `<KERNELINDEX_ARTIFACT_BASE_URL>/sha256/<..>/<hex>` when the store is published
  at an https URL; else the object URL for a remote store (`s3://bucket/prefix/sha256/...`); else, for a
  local directory, the RFC 6920 content name `ni:///sha-256;<base64url digest>`: it names the bytes,
  not a host path, and resolves against whichever copy of the store holds them (`ArtifactStore.path_of`).

- **Credentials** come from the storage library's own configuration (s3fs: an AWS profile, credentials
  file or web-identity token; other fsspec protocols: fsspec's configuration), never from a URL: a user
  name, password or secret query parameter (`?token=`) in a URL that reaches a record (the base URL; the
  location when it names the objects) is refused, and every message shows the location redacted
  (redaction.redact_storage_url). A query string in the location is refused too: object names are
  appended to its path, so it would land in the middle of every object URL.
- **Failures** are one ArtifactStoreError naming the store (redacted), what failed and the fix: an
  unreachable store, a read-only or unwritable one, something other than an object we wrote at a
  content address (a directory, a FIFO, a device or a link to one, a file of another size: checked
  before anything is read, and never more than the expected size is read).

fsspec is the kept library for object storage (it is already a dependency of Dagster's); the layout and
the write-once rule are ours because no library offers a content-addressed store on top of it.
"""

from __future__ import annotations

import base64
import dataclasses
import errno
import hashlib
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import fsspec

from kernelindex_pipeline.home import cache_root
from kernelindex_pipeline.redaction import HIDDEN, chained_urls, is_secret_parameter, redact_storage_url, scheme_of

from .outcomes import ConfigurationError, SweepError

STORE_ENV = "KERNELINDEX_ARTIFACT_STORE"
BASE_URL_ENV = "KERNELINDEX_ARTIFACT_BASE_URL"
MAX_EVIDENCE_BYTES = 64 * 2**20  # a log is at most 8 MiB (head + tail), a samples file a few hundred KiB


class ArtifactStoreError(SweepError):
    """Evidence could not be put into the store: the message names the store (redacted) or the file,
    what failed and the fix. `retryable` is False where another try cannot help (a read-only store)."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


def _store_errors() -> tuple[type[BaseException], ...]:
    """What the storage libraries raise for a store that fails: OSError (fsspec's local and memory
    filesystems, s3fs's translated errors, refused connections), aiohttp's errors (fsspec's http:
    ServerDisconnectedError is no OSError) and botocore's (no credentials found)."""
    found: list[type[BaseException]] = [OSError]
    try:
        import aiohttp

        found.append(aiohttp.ClientError)
    except ImportError:
        pass
    try:
        import botocore.exceptions

        found += [botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError]
    except ImportError:
        pass
    return tuple(found)


_STORE_ERRORS = _store_errors()
_FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def _credentials_in(url: str) -> str | None:
    """What of a URL is a credential (user info, a secret query parameter), or None."""
    parts = urlsplit(url)
    if "@" in parts.netloc:
        return "a user name or password"
    names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True) if is_secret_parameter(name)]
    return f"a secret query parameter ({', '.join(sorted(set(names)))})" if names else None


_CREDENTIALS_FIX = (
    "credentials come from the storage library's own configuration (s3fs: an AWS profile, credentials file "
    "or web-identity token; other fsspec protocols: fsspec's configuration), never from the URL"
)


def default_location() -> str:
    return str(cache_root() / "artifacts")


def ni_uri(hex_digest: str) -> str:
    """RFC 6920 named information: `ni:///sha-256;<base64url of the digest, unpadded>`."""
    return "ni:///sha-256;" + base64.urlsafe_b64encode(bytes.fromhex(hex_digest)).decode().rstrip("=")


class ArtifactStore:
    def __init__(
        self,
        location: str | os.PathLike[str] | None = None,
        public_base_url: str | None = None,
        *,
        named_by: str = "the given location",
    ):
        self.location = str(location or default_location())
        self.shown = redact_storage_url(self.location)
        self.named_by = named_by  # what set the location, for the fix of a message
        if public_base_url is not None:
            _check_public_base_url(public_base_url)
        self.public_base_url = public_base_url.rstrip("/") if public_base_url else None
        for url in self._urls():
            parts = urlsplit(url)
            if parts.query or parts.fragment:
                secret = _credentials_in(url)
                raise ConfigurationError(
                    f"the artifact store {self.shown} (from {named_by}) holds "
                    + (f"{secret}: {_CREDENTIALS_FIX}" if secret else "a query string or fragment")
                    + "; object names are appended to the location's path, so give the location without ?... or #..."
                )
            credentials = _credentials_in(url)
            if credentials and not self.public_base_url:  # the location then names the objects in records
                raise ConfigurationError(
                    f"the artifact store {self.shown} (from {named_by}) holds {credentials}, which every record's "
                    f"evidence URL would publish: {_CREDENTIALS_FIX}"
                )
        try:
            self.fs, self.root = fsspec.core.url_to_fs(self.location)
        except (ValueError, ImportError) as error:  # "Protocol not known: foo", "Install s3fs to access S3"
            raise ConfigurationError(
                f"the artifact store {self.shown} (from {named_by}) cannot be opened ({error}); give a local directory "
                "or an fsspec URL whose library is installed"
            ) from None
        self.local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,))
        if self.local:
            with self._talking("create its directory"):
                Path(self.root).mkdir(parents=True, exist_ok=True)

    def __repr__(self) -> str:
        return f"ArtifactStore({self.shown!r})"

    @classmethod
    def from_environment(cls, location: str | None = None) -> ArtifactStore:
        """The store the sweep request names (`location`), else $KERNELINDEX_ARTIFACT_STORE, else the default."""
        named_by = (
            "the sweep request's artifact_store"
            if location
            else f"${STORE_ENV}"
            if os.environ.get(STORE_ENV)
            else "the default location"
        )
        return cls(
            location or os.environ.get(STORE_ENV) or None, os.environ.get(BASE_URL_ENV) or None, named_by=named_by
        )

    @contextmanager
    def _talking(self, doing: str) -> Iterator[None]:
        """Turn what the storage library raises while `doing` into one ArtifactStoreError naming the store."""
        try:
            yield
        except ArtifactStoreError:
            raise
        except _STORE_ERRORS as error:
            raise self._failure(doing, error) from None

    def _failure(self, doing: str, error: BaseException) -> ArtifactStoreError:
        code = getattr(error, "errno", None)
        reason = getattr(error, "strerror", None) or type(error).__name__
        detail = str(error).splitlines()[0] if str(error).strip() else ""
        for secret in self._secrets():
            detail = detail.replace(secret, HIDDEN)
        if detail and reason not in detail:
            reason = f"{reason}: {detail[:200]}"
        where = f"set ${STORE_ENV} or the sweep request's artifact_store to a writable location"
        if code == errno.EROFS:
            fix, retryable = f"it is on a read-only file system; {where}", False
        elif code in (errno.EACCES, errno.EPERM) or isinstance(error, PermissionError):
            fix, retryable = f"this user may not write there; {where} (or fix its permissions)", False
        elif code == errno.ENOSPC:
            fix, retryable = "its disk is full; free space or point it elsewhere", False
        elif code in (errno.EISDIR, errno.ENOTDIR, errno.EEXIST) or isinstance(error, IsADirectoryError):
            fix, retryable = (
                "something other than the store's own layout (sha256/<2 hex>/<hex>) is in the way; "
                "check the store and remove what is not an object",
                False,
            )
        else:
            fix, retryable = "is it reachable and configured? check its location and the network, then retry", True
        return ArtifactStoreError(
            f"the artifact store {self.shown} (from {self.named_by}): cannot {doing} ({reason}); {fix}",
            retryable=retryable,
        )

    def _urls(self) -> list[str]:
        """The URLs in the location: one, or each of a chained fsspec URL (`simplecache::s3://...`)."""
        return [part for part in chained_urls(self.location) if scheme_of(part)]

    def _secrets(self) -> list[str]:
        """The location's user info in the spellings a library's message may echo (as written, decoded)."""
        found = []
        for url in self._urls():
            parts = urlsplit(url)
            if "@" in parts.netloc:
                found += [parts.netloc.rsplit("@", 1)[0], *(p for p in (parts.username, parts.password) if p)]
        return sorted({s for value in found for s in (value, unquote(value)) if s}, key=len, reverse=True)

    def shown_object(self, hex_digest: str) -> str:
        """An object's place as it may be shown (the store redacted)."""
        return f"{self.shown.rstrip('/')}/{self.key(hex_digest)}"

    @staticmethod
    def key(hex_digest: str) -> str:
        return f"sha256/{hex_digest[:2]}/{hex_digest}"

    def path_of(self, hex_digest: str) -> str:
        return f"{self.root.rstrip('/')}/{self.key(hex_digest)}"

    def uri(self, hex_digest: str) -> str:
        if self.public_base_url:
            return f"{self.public_base_url}/{self.key(hex_digest)}"
        if not self.local:
            # unstrip_protocol: http(s) paths keep their scheme in fsspec (prefixing it again gave http://http://...)
            return self.fs.unstrip_protocol(self.path_of(hex_digest))
        return ni_uri(hex_digest)

    def put(self, data: bytes, digest: str) -> dict[str, str]:
        """Store `data` under its sha256 (which must be `digest`, "sha256:<hex>"); its {"uri", "digest"}."""
        hex_digest = hashlib.sha256(data).hexdigest()
        if f"sha256:{hex_digest}" != digest:
            raise ArtifactStoreError(
                f"evidence changed before it reached the store: its sha256 is {hex_digest}, not {digest}"
            )
        target = self.path_of(hex_digest)
        if self.local:
            try:
                os.lstat(target)
            except FileNotFoundError:
                self._link_into_place(target, data, hex_digest)
            except OSError as error:
                raise self._failure(f"look for {self.key(hex_digest)}", error) from None
            else:
                self._check_existing(target, hex_digest, len(data))
        else:
            with self._talking(f"look for {self.key(hex_digest)}"):
                present = self.fs.exists(target)
            if present:
                self._check_existing(target, hex_digest, len(data))
            else:
                with self._talking(f"write {self.key(hex_digest)}"):
                    self.fs.pipe_file(target, data)  # one PUT: an object store never shows a partial object
        return {"uri": self.uri(hex_digest), "digest": digest}

    def put_file(self, ref: dict[str, str]) -> dict[str, str]:
        """Store the sweep-host file a `file://` ref names (read once, bounded); its store ref."""
        path = unquote(urlsplit(ref["uri"]).path)
        try:
            with open(path, "rb") as handle:
                data = handle.read(MAX_EVIDENCE_BYTES + 1)
        except OSError as error:
            raise ArtifactStoreError(f"{path}: cannot be read for the artifact store ({error.strerror})") from None
        if len(data) > MAX_EVIDENCE_BYTES:
            raise ArtifactStoreError(f"{path}: larger than {MAX_EVIDENCE_BYTES} bytes, not evidence a sweep writes")
        return self.put(data, ref["digest"])

    def _check_existing(self, target: str, hex_digest: str, size: int) -> None:
        """An object already at `target` must be `size` bytes with that digest. Its type and size are checked
        before it is read, and at most size + 1 bytes are read: a FIFO, a device or a link to one, or a huge
        (sparse) file at a content address is refused, never read."""
        shown = self.shown_object(hex_digest)
        refuse = "; it is never read or overwritten: remove it after checking the store"
        if self.local:
            with self._talking(f"read {self.key(hex_digest)}"):
                try:
                    # O_NOFOLLOW: the store writes no links; O_NONBLOCK: opening a FIFO does not wait for a writer.
                    fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
                except OSError as error:
                    if error.errno == errno.ELOOP:
                        raise ArtifactStoreError(
                            f"the artifact store holds a symbolic link at {shown}, not an object it wrote{refuse}",
                            retryable=False,
                        ) from None
                    raise
                try:
                    info = os.fstat(fd)
                    kind = next((name for test, name in _FILE_KINDS if test(info.st_mode)), None)
                    if kind is not None or not stat.S_ISREG(info.st_mode):
                        raise ArtifactStoreError(
                            f"the artifact store holds {kind or 'a special file'} at {shown}, not an object it wrote{refuse}",
                            retryable=False,
                        )
                    found_size = info.st_size
                    found = _read_at_most(fd, size + 1) if found_size == size else b""
                finally:
                    os.close(fd)
        else:
            with self._talking(f"read {self.key(hex_digest)}"):
                info = self.fs.info(target)
                if info.get("type") not in (None, "file"):
                    raise ArtifactStoreError(
                        f"the artifact store holds a {info['type']} at {shown}, not an object it wrote{refuse}",
                        retryable=False,
                    )
                found_size = info.get("size")
                if found_size is None or found_size == size:
                    with self.fs.open(target, "rb") as handle:
                        found = handle.read(size + 1)
                    found_size = len(found)
                else:
                    found = b""
        if found_size != size or len(found) != size or hashlib.sha256(found).hexdigest() != hex_digest:
            what = (
                f"{found_size} bytes, not {size}"
                if found_size != size
                else f"sha256 {hashlib.sha256(found).hexdigest()}"
            )
            raise ArtifactStoreError(
                f"the artifact store holds other bytes under {shown} ({what}); it is never overwritten: "
                "remove the damaged object after checking the store",
                retryable=False,
            )

    def _link_into_place(self, target: str, data: bytes, hex_digest: str) -> None:
        temporary = f"{target}.{secrets.token_hex(8)}.partial"
        with self._talking(f"write {self.key(hex_digest)}"):
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            with open(temporary, "xb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
        try:
            with self._talking(f"write {self.key(hex_digest)}"):
                os.chmod(temporary, 0o444)
                try:
                    os.link(temporary, target)  # fails when the name exists: a concurrent writer won
                except FileExistsError:
                    self._check_existing(target, hex_digest, len(data))
        finally:
            try:
                os.unlink(temporary)
            except OSError:
                pass  # the error above is the one to report


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks, left = [], limit
    while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _check_public_base_url(url: str) -> None:
    shown = redact_storage_url(url)
    parts = urlsplit(url) if scheme_of(url) else None
    if parts is None or parts.scheme != "https":
        raise ConfigurationError(
            f"{BASE_URL_ENV} must be an https URL (records need fetchable evidence), not {shown!r}"
        )
    credentials = _credentials_in(url)
    if credentials:
        raise ConfigurationError(
            f"{BASE_URL_ENV} {shown} holds {credentials}, which every record's evidence URL would publish; give the "
            "public URL alone (evidence is content-addressed: it needs no secret to be read)"
        )
    if parts.query or parts.fragment:
        raise ConfigurationError(
            f"{BASE_URL_ENV} {shown} holds a query string or fragment, which would land in the middle of every "
            "evidence URL; give it without ?... or #..."
        )


def _is_host_file(ref: dict[str, Any] | None) -> bool:
    return bool(ref) and urlsplit(ref["uri"]).scheme == "file"


def publish_evidence(result, store: ArtifactStore):
    """`result` (sweep.protocol.SweepResult) with every raw-samples and log file put into `store` and
    its refs replaced by the store's; nothing else changes. Refs that are not host files stay as they are."""
    stored: dict[str, dict[str, str]] = {}

    def put(ref: dict[str, str]) -> dict[str, str]:
        if not _is_host_file(ref):
            return ref
        if ref["digest"] not in stored:
            stored[ref["digest"]] = store.put_file(ref)
        return dict(stored[ref["digest"]])

    outcomes = []
    for outcome in result.outcomes:
        samples = {
            key: {**entry, "artifact": put(entry["artifact"])} if entry.get("artifact") else entry
            for key, entry in outcome.raw_samples.items()
        }
        outcomes.append(dataclasses.replace(outcome, raw_samples=samples))
    sentinel = []
    for measurement in result.sentinel:
        updated = dict(measurement)
        for name in ("artifact", "log"):
            if updated.get(name):
                updated[name] = put(updated[name])
        sentinel.append(updated)
    logs = {kernel: put(ref) for kernel, ref in result.logs_by_kernel.items()}
    merged = {}  # sweep/rounds.py: a run's artifact, and the rounds' calls it names by digest
    for key, entry in result.merged_samples.items():
        merged[key] = {
            **entry,
            "artifact": put(entry["artifact"]),
            "roundArtifacts": [put(ref) for ref in entry.get("roundArtifacts", [])],
        }
    return dataclasses.replace(result, outcomes=outcomes, sentinel=sentinel, logs_by_kernel=logs, merged_samples=merged)
