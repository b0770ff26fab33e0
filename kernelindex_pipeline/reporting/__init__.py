"""Catalogue report: comparable series, regression detection, charts and a static HTML report."""

from .regressions import Change, HostEffect, RegressionReport, detect_in_record_files, detect_regressions
from .series import Point, Series, SeriesKey, SeriesSet, build_series

__all__ = [
    "Change",
    "HostEffect",
    "Point",
    "RegressionReport",
    "Series",
    "SeriesKey",
    "SeriesSet",
    "build_series",
    "detect_in_record_files",
    "detect_regressions",
]
from .html import ReportResult, build_report  # noqa: E402

__all__ += ["ReportResult", "build_report"]
