"""The kernelindex.dev/v1alpha1 record model: canonical JSON and digests, names, schema, manifest files."""

from .canonical import API_VERSION, canonical_bytes, canonical_json, digest_of
from .io import ManifestFileError, load_manifests
from .names import kebab
from .schema import KINDS, InvalidRecords, Problem, ensure_valid, json_schema, json_schemas, validate_manifest

__all__ = [
    "API_VERSION",
    "KINDS",
    "InvalidRecords",
    "ManifestFileError",
    "Problem",
    "canonical_bytes",
    "canonical_json",
    "digest_of",
    "ensure_valid",
    "json_schema",
    "json_schemas",
    "kebab",
    "load_manifests",
    "validate_manifest",
]
