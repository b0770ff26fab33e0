"""What changed a series, with its evidence, and the changes grouped by what changed them.

Detection finds a change between the last run before and the first run after (a *boundary*); a
source's attributor (Liger's: `liger/attribution.py`) ranks its `CAUSES`, each with the evidence that
names it; the first is the change's ``cause``. What each means: docs/concepts/detection.md ("The
causes"). ``source`` marks a step across two origins of runs, which is listed apart and never a change.

This module holds the source-independent part: the evidence types, the grouping of changes by
(boundary, suspect) for the page, the JSON and the check message. It imports nothing of any source.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .changes import CAUSES, COMMIT_CAUSES, CauseEvidence, Change, CommitSuspect

_PR_REF = re.compile(r"\s*\(#\d+\)$")  # GitHub's squash-merge suffix: "subject (#830)"
_MARKDOWN = re.compile(r"([\\`*_\[\]<>#|~])")


def short_subject(subject: str, limit: int = 70) -> str:
    """A commit subject within `limit` characters, never cut inside a word or its PR number: whole words,
    then "…" where it was cut, then the "(#830)" that names the pull request (kept whole)."""
    subject = " ".join(subject.split())
    if len(subject) <= limit:
        return subject
    found = _PR_REF.search(subject)
    pr = found.group(0).strip() if found else ""
    body = subject[: found.start()] if found else subject
    room = max(1, limit - len(pr) - 2)  # "…" and the space before the PR number
    cut = body[: room + 1].rsplit(" ", 1)[0] if " " in body[: room + 1] else body[:room]
    return f"{cut.rstrip(' ,;:-')}…" + (f" {pr}" if pr else "")


def escape_markdown(text: str) -> str:
    """Text that Markdown shows as it is (a commit subject with backticks or asterisks, in Dagster's UI)."""
    return _MARKDOWN.sub(r"\\\1", text)


@dataclass
class ChangeGroup:
    """Changes at one boundary that share their cause and suspects: one entry on the page."""

    before: str  # source run labels
    after: str
    before_code: str | None
    after_code: str | None
    evidence: CauseEvidence
    others: list[CauseEvidence]  # the lower-ranked causes of the first change (same for the group as a rule)
    changes: list[Change] = field(default_factory=list)

    @property
    def cause(self) -> str:
        return self.evidence.cause

    @property
    def gpu(self) -> str:
        return self.changes[0].key.gpu

    @property
    def id(self) -> str:
        """A stable name of the group: its GPU, boundary, cause and suspects, digested (``g-`` and 12 hex);
        what a bisection is launched with (`kernelindex-pipeline bisect --group`, the Dagster job's config)."""
        material = json.dumps(
            [self.gpu, self.before, self.after, self.cause, list(self.evidence.suspect_key)], separators=(",", ":")
        )
        return "g-" + hashlib.sha256(material.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        first = self.changes[0].to_dict()
        return {
            "id": self.id,
            "gpu": self.gpu,
            "before": {**first["before"], "codeRef": self.before_code},
            "after": {**first["after"], "codeRef": self.after_code},
            "cause": self.cause,
            "suspects": self.evidence.to_dict(),
            "otherCauses": [e.to_dict() for e in self.others],
            "changes": len(self.changes),
            "slowdowns": sum(1 for c in self.changes if c.direction == "slowdown"),
            "speedups": sum(1 for c in self.changes if c.direction == "speedup"),
            "series": [
                {k: d[k] for k in ("kernel", "mode", "provider", "caseKey", "metric", "direction", "magnitude")}
                for d in (c.to_dict() for c in self.changes)
            ],
        }


def bisection_summary(document: dict[str, Any]) -> dict[str, Any]:
    """What a group shows of the bisection of it: the verdict and every step of a bisection's JSON
    (docs/concepts/bisection.md; written by `kernelindex-pipeline bisect` and bisection_job), read by its documented keys."""
    return {
        "verdict": document.get("verdict"),
        "label": document.get("label"),
        "culprit": document.get("culprit"),
        "culpritUrl": document.get("culpritUrl"),
        "parent": document.get("parent"),
        "reason": document.get("reason"),
        "inQuestion": list(document.get("inQuestion") or []),
        "measurements": document.get("measurements"),
        "maxMeasurements": document.get("maxMeasurements"),
        "gpuSeconds": document.get("gpuSeconds"),
        "harness": (document.get("plan") or {}).get("harness"),
        "series": (document.get("plan") or {}).get("series"),
        "steps": [
            {k: step.get(k) for k in ("step", "commit", "role", "outcome", "value", "interval", "reason")}
            for step in document.get("steps") or []
        ],
    }


def with_bisection(group: dict[str, Any], bisections: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A group's JSON with its bisection's verdict (`bisection`, null when none was made)."""
    document = bisections.get(group["id"])
    return {**group, "bisection": bisection_summary(document) if document else None}


def group_changes(changes: list[Change]) -> list[ChangeGroup]:
    """Changes grouped by (boundary, cause, suspects): one commit that moved 40 series is one group."""
    groups: dict[tuple, ChangeGroup] = {}
    for change in changes:
        t, s = change.trend, change.split
        ranked = change.causes or [CauseEvidence(change.cause)]
        top = ranked[0]
        before, after = t.sources[s.index - 1], t.sources[s.index]
        key = (t.key.gpu, before, after, top.cause, top.suspect_key)
        group = groups.get(key)
        if group is None:
            codes = getattr(t, "code_refs", None) or []
            group = groups[key] = ChangeGroup(
                before=before,
                after=after,
                before_code=codes[s.index - 1] if len(codes) > s.index - 1 else None,
                after_code=codes[s.index] if len(codes) > s.index else None,
                evidence=top,
                others=list(ranked[1:]),
            )
        group.changes.append(change)
    ordered = sorted(
        groups.values(),
        key=lambda g: (CAUSES.index(g.cause) if g.cause in CAUSES else len(CAUSES), -len(g.changes), g.after),
    )
    return ordered


def leading_commits(
    groups: list[ChangeGroup], direction: str | None = None
) -> dict[str, tuple[CommitSuspect, int, int]]:
    """The commit that heads each group's suspects (the most direct one), with the number of changes in
    `direction` (all when None) its groups hold and how many other suspects they list."""
    found: dict[str, tuple[CommitSuspect, int, int]] = {}
    for group in groups:
        if group.cause not in COMMIT_CAUSES or not group.evidence.commits:
            continue  # an environment change is named by its toolchain difference, its commits are context
        n = sum(1 for c in group.changes if direction is None or c.direction == direction)
        if not n:
            continue
        head = group.evidence.commits[0]
        _, count, others = found.get(head.sha, (head, 0, 0))
        found[head.sha] = (head, count + n, max(others, len(group.evidence.commits) - 1))
    return found


def check_message(
    groups: list[ChangeGroup],
    direction: str = "slowdown",
    limit: int = 5,
    bisections: dict[str, dict[str, Any]] | None = None,
    markdown: bool = False,
) -> str:
    """ "N slowdowns from M commits" naming them (the leading suspect of each group, its subject whole
    words, `short_subject`), then the changes without a commit by cause. With `bisections` (group id ->
    bisection JSON) the culprits a bisection confirmed come first: "confirmed by bisection: <sha> (N
    slowdowns)". `markdown`: subjects escaped for a Markdown field (Dagster's check description)."""
    show = escape_markdown if markdown else str
    commits = leading_commits(groups, direction)
    named = sorted(commits.values(), key=lambda item: -item[1])
    total = sum(n for _, n, _ in named)
    text = f"{total} {direction}{'' if total == 1 else 's'} from {len(named)} commit{'' if len(named) == 1 else 's'}"
    confirmed: dict[str, int] = defaultdict(int)
    for group in groups:
        document = (bisections or {}).get(group.id) or {}
        n = sum(1 for c in group.changes if c.direction == direction)
        if document.get("verdict") == "confirmed" and document.get("culprit") and n:
            confirmed[str(document["culprit"])] += n
    if confirmed:
        text = (
            "confirmed by bisection: "
            + "; ".join(
                f"{sha[:8]} ({n} {direction}{'' if n == 1 else 's'})"
                for sha, n in sorted(confirmed.items(), key=lambda i: -i[1])
            )
            + ". "
            + text
        )
    if named:
        text += ": " + "; ".join(
            f"{c.sha[:8]} {show(short_subject(c.subject))} ({n}{f', +{o} other suspects' if o else ''})"
            for c, n, o in named[:limit]
        )
        if len(named) > limit:
            text += f"; and {len(named) - limit} more"
    rest: dict[str, int] = defaultdict(int)
    toolchains: dict[str, int] = defaultdict(int)
    for group in groups:
        n = sum(1 for c in group.changes if c.direction == direction)
        if n and (group.cause not in COMMIT_CAUSES or not group.evidence.commits):
            rest[group.cause] += n
            for step in group.evidence.toolchain:
                toolchains[_step_text(step)] += n
    if rest:
        text += ". Without a commit: " + ", ".join(f"{n} {cause}" for cause, n in sorted(rest.items()))
    if toolchains:
        text += " (toolchain: " + "; ".join(sorted(toolchains, key=lambda t: -toolchains[t])[:limit]) + ")"
    return text


def _step_text(step: dict[str, Any]) -> str:
    if "measured" in step:
        return str(step["measured"])
    return f"{step['package']} {step.get('before') or '—'} → {step['after']}"
