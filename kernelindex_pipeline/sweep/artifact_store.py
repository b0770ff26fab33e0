"""Where a sweep's evidence ends up: a content-addressed, write-once artifact store (issue 18 item 3).

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

fsspec is the kept library for object storage (it is already a dependency of Dagster's); the layout and
the write-once rule are ours because no library offers a content-addressed store on top of it.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
import secrets
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import fsspec

from kernelindex_pipeline.home import cache_root

from .outcomes import ConfigurationError

STORE_ENV = "KERNELINDEX_ARTIFACT_STORE"
BASE_URL_ENV = "KERNELINDEX_ARTIFACT_BASE_URL"
MAX_EVIDENCE_BYTES = 64 * 2**20  # a log is at most 8 MiB (head + tail), a samples file a few hundred KiB


class ArtifactStoreError(RuntimeError):
    """Evidence could not be put into the store (the message names the file or object and why)."""


def default_location() -> str:
    return str(cache_root() / "artifacts")


def ni_uri(hex_digest: str) -> str:
    """RFC 6920 named information: `ni:///sha-256;<base64url of the digest, unpadded>`."""
    return "ni:///sha-256;" + base64.urlsafe_b64encode(bytes.fromhex(hex_digest)).decode().rstrip("=")


class ArtifactStore:
    def __init__(self, location: str | os.PathLike[str] | None = None, public_base_url: str | None = None):
        self.location = str(location or default_location())
        if public_base_url is not None and urlsplit(public_base_url).scheme != "https":
            raise ConfigurationError(
                f"{BASE_URL_ENV} must be an https URL (records need fetchable evidence), not {public_base_url!r}"
            )
        self.public_base_url = public_base_url.rstrip("/") if public_base_url else None
        self.fs, self.root = fsspec.core.url_to_fs(self.location)
        self.local = "file" in (self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,))
        if self.local:
            Path(self.root).mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_environment(cls, location: str | None = None) -> ArtifactStore:
        return cls(location or os.environ.get(STORE_ENV) or None, os.environ.get(BASE_URL_ENV) or None)

    @staticmethod
    def key(hex_digest: str) -> str:
        return f"sha256/{hex_digest[:2]}/{hex_digest}"

    def path_of(self, hex_digest: str) -> str:
        return f"{self.root.rstrip('/')}/{self.key(hex_digest)}"

    def uri(self, hex_digest: str) -> str:
        if self.public_base_url:
            return f"{self.public_base_url}/{self.key(hex_digest)}"
        if not self.local:
            protocol = self.fs.protocol[0] if isinstance(self.fs.protocol, tuple) else self.fs.protocol
            return f"{protocol}://{self.path_of(hex_digest)}"
        return ni_uri(hex_digest)

    def put(self, data: bytes, digest: str) -> dict[str, str]:
        """Store `data` under its sha256 (which must be `digest`, "sha256:<hex>"); its {"uri", "digest"}."""
        hex_digest = hashlib.sha256(data).hexdigest()
        if f"sha256:{hex_digest}" != digest:
            raise ArtifactStoreError(
                f"evidence changed before it reached the store: its sha256 is {hex_digest}, not {digest}"
            )
        target = self.path_of(hex_digest)
        if self.fs.exists(target):
            self._check_existing(target, hex_digest)
        elif self.local:
            self._link_into_place(target, data, hex_digest)
        else:
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

    def _check_existing(self, target: str, hex_digest: str) -> None:
        found = hashlib.sha256(self.fs.cat_file(target)).hexdigest()
        if found != hex_digest:
            raise ArtifactStoreError(
                f"the artifact store holds other bytes under {target} (sha256 {found}); it is never overwritten: "
                "remove the damaged object after checking the store"
            )

    def _link_into_place(self, target: str, data: bytes, hex_digest: str) -> None:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        temporary = f"{target}.{secrets.token_hex(8)}.partial"
        with open(temporary, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o444)
        try:
            os.link(temporary, target)  # fails when the name exists: a concurrent writer won
        except FileExistsError:
            self._check_existing(target, hex_digest)
        finally:
            os.unlink(temporary)


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
