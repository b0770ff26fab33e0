"""Catalogue report: comparable series, regression detection, efficiency and the site (its charts drawn in the
browser).

The names below are re-exported lazily (PEP 562, as in `liger/__init__`): a Dagster code location that imports
`reporting.changepoints` (its settings resource) need not import numpy, pandas or the site at load.
"""

from __future__ import annotations

from kernelindex_pipeline.lazy_exports import lazy_exports

_EXPORTS = {
    "Change": "regressions",
    "HostEffect": "regressions",
    "RegressionReport": "regressions",
    "detect_in_record_files": "regressions",
    "detect_regressions": "regressions",
    "Point": "series",
    "Series": "series",
    "SeriesKey": "series",
    "SeriesSet": "series",
    "build_series": "series",
    "SiteResult": "site",
    "build_site": "site",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
