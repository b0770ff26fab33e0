"""Catalogue report: comparable series, regression detection, charts, the static HTML report and the site.

The names below are re-exported lazily (PEP 562, as in `liger/__init__`): a Dagster code location that imports
`reporting.changepoints` (its settings resource) must not import matplotlib (`html`, `charts`) at load.
"""

from __future__ import annotations

import importlib
from typing import Any

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
    "ReportResult": "html",
    "build_report": "html",
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
