"""Catalogue report: comparable series, regression detection, charts and a static HTML report."""

from .regressions import Comparison, InsufficientSeries, RegressionResult, detect_regressions
from .series import Point, Series, SeriesKey, SeriesSet, build_series

__all__ = [
    "Comparison",
    "InsufficientSeries",
    "Point",
    "RegressionResult",
    "Series",
    "SeriesKey",
    "SeriesSet",
    "build_series",
    "detect_regressions",
]
from .html import ReportResult, build_report  # noqa: E402

__all__ += ["ReportResult", "build_report"]
