"""What measured a Liger CI run: its code under test and its harness, each read at its own time.

A run's *code* is the commit it names (``benchmarks/<sha>/``). Its *harness* is what the benchmark
workflow ran that code with. Liger's workflow can measure an older commit with the default branch's
current benchmark folder (since #791: a manual run of ``commit_hash`` checks out ``benchmark/`` from
``origin/main``, then the old commit around it). Whether it did is read from the workflow file itself:
the one on the default branch at the run's measurement time, since scheduled and manual runs use the
default branch's workflow. Paths it checks out from the default branch come from that branch's tip at
the measurement time; every other file (``src/liger_kernel``, the Modal image, ``setup.py``) comes from
the run's commit. docs/concepts/attribution.md says where this can be wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from .source_history import LigerSourceHistory, SourceHistoryError

WORKFLOW = ".github/workflows/benchmark.yml"
MAX_WORKFLOW_BYTES = 256 * 1024  # Liger's is 6 KB; a larger file is not a workflow we can read
# `git checkout origin/main -- benchmark/` (or `git checkout main -- a b`): paths taken from a branch
_CHECKOUT_FROM = re.compile(r"git\s+checkout\s+(?:origin/)?(?P<ref>[A-Za-z0-9._/-]+)\s+--\s+(?P<paths>[^\n;&|#]+)")


@dataclass(frozen=True)
class Checkout:
    """The tree a run was measured on: `code` (the run's commit) everywhere except the paths under
    `replaced`, which came from `harness` (the default branch's tip when it was measured)."""

    code: str
    harness: str
    replaced: tuple[str, ...] = ()

    def commit_for(self, path: str) -> str:
        for prefix in self.replaced:
            if path == prefix.rstrip("/") or path.startswith(prefix.rstrip("/") + "/"):
                return self.harness
        return self.code

    @property
    def mixed(self) -> bool:
        return bool(self.replaced) and self.harness != self.code

    @property
    def key(self) -> str:
        return self.code if not self.mixed else f"{self.code}+{self.harness}:{','.join(self.replaced)}"


def replaced_paths(workflow_text: str, branch: str) -> tuple[str, ...]:
    """The paths a workflow's steps check out from `branch` (``main``) over the commit it measures."""
    try:
        document = yaml.safe_load(workflow_text)
    except yaml.YAMLError:
        return ()
    found: list[str] = []
    for script in _run_scripts(document):
        for match in _CHECKOUT_FROM.finditer(script):
            if match.group("ref") != branch:
                continue
            found += [p for p in match.group("paths").split() if p and not p.startswith("-")]
    return tuple(dict.fromkeys(found))


def _run_scripts(document: Any) -> list[str]:
    """Every `run:` script of a GitHub workflow document."""
    out: list[str] = []
    jobs = document.get("jobs") if isinstance(document, dict) else None
    for job in (jobs or {}).values() if isinstance(jobs, dict) else ():
        steps = job.get("steps") if isinstance(job, dict) else None
        for step in steps if isinstance(steps, list) else ():
            if isinstance(step, dict) and isinstance(step.get("run"), str):
                out.append(step["run"])
    return out


class HarnessReader:
    """Checkouts of runs, from a clone: one workflow read per default-branch tip, cached."""

    def __init__(self, history: LigerSourceHistory) -> None:
        self.history = history
        self._replaced: dict[str, tuple[str, ...]] = {}
        self.notes: list[str] = []

    def checkout(self, code: str, measured_at: float) -> Checkout:
        """The checkout of a run of commit `code` (resolved) measured at `measured_at` (epoch seconds)."""
        branch = self.history.default_branch()
        tip = self.history.tip_at(branch, measured_at) if branch else None
        if tip is None or tip == code:
            return Checkout(code, code)
        replaced = self._replaced_at(tip, branch.rsplit("/", 1)[-1])
        return Checkout(code, tip, replaced) if replaced else Checkout(code, code)

    def _replaced_at(self, tip: str, branch: str) -> tuple[str, ...]:
        if tip not in self._replaced:
            try:
                text = self.history.read(tip, [WORKFLOW])[WORKFLOW] or ""
            except SourceHistoryError as exc:
                self.notes.append(str(exc))
                text = ""
            self._replaced[tip] = replaced_paths(text[:MAX_WORKFLOW_BYTES], branch) if text else ()
        return self._replaced[tip]
