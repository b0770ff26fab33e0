"""The kernelindex.dev/v1alpha1 record model: canonical JSON and digests, names, schema, manifest files.

The names below are re-exported lazily (PEP 562), as in `liger/__init__`: importing a light submodule such as
`records.units` (the CLI's argument parser reaches it through `liger.catalogue`) must not import the schema
validator (pydantic models of the seven kinds, about 0.6 s).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "API_VERSION": "canonical",
    "canonical_bytes": "canonical",
    "canonical_json": "canonical",
    "digest_of": "canonical",
    "ManifestFileError": "io",
    "load_manifests": "io",
    "kebab": "names",
    "KINDS": "schema",
    "InvalidRecords": "schema",
    "Problem": "schema",
    "ensure_valid": "schema",
    "json_schema": "schema",
    "json_schemas": "schema",
    "validate_manifest": "schema",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
