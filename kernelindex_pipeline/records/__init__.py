"""The kernelindex.dev/v1alpha1 record model: canonical JSON and digests, names, schema, manifest files.

The names below are re-exported lazily (PEP 562), as in `liger/__init__`: importing a light submodule such as
`records.units` (the CLI's argument parser reaches it through `liger.catalogue`) must not import the schema
validator (pydantic models of the seven kinds, about 0.6 s).
"""

from __future__ import annotations

from kernelindex_pipeline.lazy_exports import lazy_exports

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


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
