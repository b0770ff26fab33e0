"""RFC 8785 (JCS) canonical JSON and the kernelindex.dev digest.

Placeholder implementation over the `rfc8785` package; a faster path that is
proven equal to it replaces the body of `canonical_bytes`.
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785

API_VERSION = "kernelindex.dev/v1alpha1"


def canonical_bytes(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of a JSON value."""
    return rfc8785.dumps(value)


def canonical_json(value: Any) -> str:
    return canonical_bytes(value).decode("utf-8")


def digest_of(manifest: dict[str, Any]) -> str:
    """`sha256:<hex>` over the canonical JSON of {apiVersion, kind, spec}; metadata never counts."""
    body = {"apiVersion": manifest["apiVersion"], "kind": manifest["kind"], "spec": manifest["spec"]}
    return "sha256:" + hashlib.sha256(canonical_bytes(body)).hexdigest()
