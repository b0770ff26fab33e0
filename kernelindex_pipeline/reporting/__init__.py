"""Catalogue report: comparable series, efficiency, the regressions page and the site (its charts drawn in the
browser). Regression detection itself is `kernelindex_pipeline.detection`.

The names below are re-exported lazily (PEP 562, as in `liger/__init__`): importing the package loads neither
numpy, pandas nor the site.
"""

from __future__ import annotations

from kernelindex_pipeline.lazy_exports import lazy_exports

_EXPORTS = {
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
