"""The Liger-Kernel source: release sdists -> history CSV -> kernelindex.dev records.

Stages, one module each (fetch an immutable snapshot -> parse -> normalize -> report):
  release.py    pip-download a `liger-kernel` sdist into a content-addressed cache, extract it safely
  csv.py        read the benchmark CSV (all strings), row numbers, ragged/undecodable rows as issues
  catalogue.py  the curated kernels/providers/GPUs (package data YAML, profiles `reference` and `full`)
                and the binding rule grammar
  identity.py   every name, title, case key and externalId: built and parsed in one place
  builders.py   a row's config bound by a rule; the six shared kinds
  runs.py       the fast path: BenchmarkRuns from pre-cut canonical text
  normalize.py  rows -> the seven kinds, in the documented skip order (SkipReason)
  parallel.py   BenchmarkRuns built in worker processes (same bytes, same order)
  report.py     every row's fate, counted by reason (SkipReason), the coverage cells it writes

  importer.py   `import_csv` (a file or bytes) and `import_chunks` (rows already read, e.g. one Dagster
                partition's): the one import path the CLI and the Dagster layer call

What the three chains share besides (output writing, the capped fetch, archives, the import result,
coverage cells) is in `kernelindex_pipeline.imports`.

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
    "SourceSnapshot": "release",
    "import_chunks": "importer",
    "import_csv": "importer",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
