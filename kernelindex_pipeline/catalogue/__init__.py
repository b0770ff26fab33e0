"""The publication store (SQLite embedded, PostgreSQL in production) and exports of the catalogue."""

from kernelindex_pipeline.home import default_catalogue_path

from .export import BUNDLE_NAME, JSONL_MANIFEST_NAME, JSONL_NAME, ExportResult, export_bundle, export_jsonl
from .store import (
    CatalogueError,
    CatalogueStore,
    Conflict,
    PublishResult,
    redact_url,
)

__all__ = [
    "BUNDLE_NAME",
    "JSONL_MANIFEST_NAME",
    "JSONL_NAME",
    "CatalogueError",
    "CatalogueStore",
    "Conflict",
    "ExportResult",
    "PublishResult",
    "default_catalogue_path",
    "export_bundle",
    "export_jsonl",
    "redact_url",
]
