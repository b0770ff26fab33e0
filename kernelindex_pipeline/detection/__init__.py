"""Regression detection: change points in comparable series, host correction, causes and their evidence,
the judgement store, acknowledgements. Source-neutral: it imports neither `liger/` nor the site; a source
plugs in through `run_facts` (docs/concepts/detection.md).

The names below are re-exported lazily (PEP 562, as in `liger/__init__`): a Dagster code location that imports
`detection.settings` need not import numpy or pandas at load.
"""

from __future__ import annotations

from kernelindex_pipeline.lazy_exports import lazy_exports

_EXPORTS = {
    "Change": "changes",
    "HostEffect": "changes",
    "RegressionReport": "changes",
    "detect_in_record_files": "detect",
    "detect_regressions": "detect",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
