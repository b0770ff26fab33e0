"""The Liger-Kernel source: its release sdists, history CSVs and CI result files into kernelindex.dev
records; Liger's side of attribution (its git history, which files make a benchmark's numbers, the
toolchain); and what sweeps and bisections need of Liger (measured rows, the sentinel, cost models).
Every module, grouped so: docs/concepts/architecture.md ("The packages", `liger/`). The one import path
the CLI and the Dagster layer call is `importer.py` (`import_csv`, `import_chunks`); what the chains share
besides is in `kernelindex_pipeline.imports`.

The names below are re-exported lazily (PEP 562): importing a light submodule such as
`liger.catalogue` (the CLI's argument parser does) must not pull in pandas and the schema validator.
"""

from __future__ import annotations

from kernelindex_pipeline.lazy_exports import lazy_exports

_EXPORTS = {
    "DEFAULT_PROFILE": "catalogue",
    "PROFILES": "catalogue",
    "LigerCatalogueError": "catalogue",
    "CsvFormatError": "csv",
    "ImportReport": "report",
    "InvalidRecord": "normalize",
    "MeasuredContext": "normalize",
    "RunRecord": "normalize",
    "import_chunks": "importer",
    "import_csv": "importer",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
