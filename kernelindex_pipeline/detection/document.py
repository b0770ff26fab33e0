"""regressions.json, the detection result as a document: `regressions_json` writes its documented shape
(docs/reference/regressions-json.md) from a `RegressionReport`, with each change's and group's id and
acknowledgement and each group's bisection. The page and the check read the report itself.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from . import acknowledgements, attribution
from .changes import Change, Insufficient, RegressionReport


def regressions_json(report: RegressionReport) -> dict[str, Any]:
    """The report as regressions.json: its documented shape (docs/reference/regressions-json.md)."""
    return {
        "series": len(report.trends),
        "insufficient": len(report.insufficient),
        "settings": report.settings.to_json(),
        "counts": report.counts(),
        "sources": [
            {
                "source": r.label,
                "gpu": r.gpu,
                "observedAt": r.observed_at,
                "ligerVersions": sorted(r.versions),
                "codeRef": r.code_ref,
            }
            for r in report.sources
        ],
        "hostEffects": [h.to_dict() for h in report.host_effects],
        "changes": [
            _with_acknowledgement(report, c.to_dict(), [c], acknowledgements.change_id(c)) for c in report.changes
        ],
        "groups": [
            attribution.with_bisection(_with_acknowledgement(report, g.to_dict(), g.changes, g.id), report.bisections)
            for g in attribution.group_changes(report.changes)
        ],
        "attributionNotes": list(report.attribution_notes),
        "pending": [c.to_dict() for c in report.pending],
        "hostChanges": [h.to_dict() for h in report.host_changes],
        "insufficientSeries": _insufficient_summary(report.insufficient),
        "skippedRuns": dict(report.skipped),
    }


def _with_acknowledgement(
    report: RegressionReport, entry: dict[str, Any], changes: list[Change], entry_id: str
) -> dict[str, Any]:
    """A change's or a group's JSON with its id and, where every change of it is acknowledged alike,
    the acknowledgement (`acknowledgements.py`)."""
    ids = [acknowledgements.change_id(c) for c in changes]
    entry = {"id": entry_id, **entry}
    if entry_id != ids[0] or len(ids) > 1:  # a group: the changes an acknowledgement of it marks
        entry["changeIds"] = ids
    marked = acknowledgements.group_acknowledgement(report, changes)
    if marked is not None:
        entry["acknowledgement"] = marked.to_dict()
    return entry


def _insufficient_summary(items: list[Insufficient]) -> list[dict[str, Any]]:
    grouped = Counter((i.key.kernel, i.key.gpu, i.key.metric, i.runs) for i in items)
    return [{"kernel": k, "gpu": g, "metric": m, "runs": r, "series": n} for (k, g, m, r), n in sorted(grouped.items())]
