"""Regressions a maintainer has marked as known: `acknowledged`, `expected`, or `fixed` in a commit, each
with a note, who and when.

An acknowledgement belongs to one change: a series and its boundary (`change_id`), so it lasts until the
series changes again (a new boundary is a new change, not acknowledged). Marking a group of the
regressions page marks each of its changes. The catalogue keeps them (`CatalogueStore.acknowledge`);
detection's result carries those that match its changes (`apply`), the page shows them, the JSON and the
export carry them, and the `no_regressions` check leaves acknowledged slowdowns out of its count.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the CLI reads STATUSES without loading the result model (numpy)
    from .changes import Change, RegressionReport

STATUSES = ("acknowledged", "expected", "fixed")


def change_id(change: Change) -> str:
    """A change's identity across refreshes: its series (GPU, kernel, pass, provider, workload,
    implementation, protocol, metric) and its boundary (the two runs' labels)."""
    k, t, s = change.key, change.trend, change.split
    identity = [
        k.gpu,
        k.kernel,
        k.mode,
        k.provider,
        k.workload_digest,
        k.implementation_digest,
        k.protocol_digest,
        k.metric,
        t.sources[s.index - 1],
        t.sources[s.index],
    ]
    return "chg-" + hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Acknowledgement:
    change: str  # change_id
    status: str  # one of STATUSES
    note: str
    by: str
    at: str  # ISO 8601 UTC
    fixed_in: str = ""  # the commit that fixed it (status "fixed")

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"status {self.status!r}: one of {', '.join(STATUSES)}")
        if self.status == "fixed" and not self.fixed_in:
            raise ValueError("status 'fixed' needs the commit that fixed it")

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v != "" or k == "note"}

    @property
    def text(self) -> str:
        what = f"fixed in {self.fixed_in[:12]}" if self.status == "fixed" else self.status
        return f"{what} by {self.by} on {self.at[:10]}" + (f": {self.note}" if self.note else "")


def from_rows(rows: list[dict[str, str]]) -> dict[str, Acknowledgement]:
    """change_id -> Acknowledgement of the catalogue's rows (`CatalogueStore.acknowledgements`)."""
    return {
        r["change_id"]: Acknowledgement(r["change_id"], r["status"], r["note"], r["by"], r["at"], r["fixed_in"])
        for r in rows
    }


def apply(report: RegressionReport, acknowledgements: dict[str, Acknowledgement]) -> None:
    """Set `report.acknowledged` to the acknowledgements of its changes (those of other changes: an
    older boundary, a series that changed again, are not shown)."""
    report.acknowledged = {
        cid: acknowledgements[cid] for cid in (change_id(c) for c in report.changes) if cid in acknowledgements
    }


def unacknowledged(report: RegressionReport, changes: list[Change]) -> list[Change]:
    return [c for c in changes if change_id(c) not in report.acknowledged]


def group_acknowledgement(report: RegressionReport, changes: list[Change]) -> Acknowledgement | None:
    """The acknowledgement every change of a group shares, or None (none, or not all alike)."""
    return shared_mark([report.acknowledged.get(change_id(c)) for c in changes])


def shared_mark(marks: list[Acknowledgement | None]) -> Acknowledgement | None:
    """The first of `marks` when every one is there and says the same (status, note, who, when, fixed in: each
    belongs to its own change), else None."""
    if not marks or None in marks:
        return None
    first = marks[0]
    return first if all(replace(m, change=first.change) == first for m in marks) else None
