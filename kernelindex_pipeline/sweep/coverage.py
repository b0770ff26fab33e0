"""Coverage of a sweep: for each script, which cases it was expected to measure, which it did, and why
the rest are missing.

A *case* is a CSV row's identity without the GPU (kernel, provider, mode, metric, x name, x value,
config string). The expectation comes from earlier rows of the same release line:

* the previous successful sweep of the same partition (its CSV, `SweepRequest.expected_csv`), or
* the release's own history rows (benchmark/data/all_benchmark_data.csv in the sdist). A release ships
  the rows of earlier versions only, so per kernel the rows of the newest version that has that kernel
  are taken: the cases its script measured most recently.

Each expected kernel belongs to the script that writes it (discovery.scripts_for_kernel). A missing case's
reason follows from its script: `skipped_by_config` (the sweep did not select the script), `timeout`,
`out_of_memory`, `crash` (any other failure), `not_produced` (the script ended well without it), or
`no_script` (no script of this release writes that kernel). Cases measured but never expected are
counted as `unexpected`. Plain data only: the Dagster layer turns it into metadata.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from kernelindex_pipeline.liger.csv import CASE_COLUMNS

from .outcomes import ScriptOutcome, ScriptStatus

MISSING_LISTED = 50  # missing cases listed by name per script (all are counted)
REASON_OF_STATUS = {
    ScriptStatus.TIMED_OUT: "timeout",
    ScriptStatus.OUT_OF_MEMORY: "out_of_memory",
    ScriptStatus.FAILED: "crash",
    ScriptStatus.OK: "not_produced",
    ScriptStatus.SKIPPED: "skipped_by_host",
}
NO_SCRIPT = "(no script)"

Case = tuple[str, ...]


def case_of(row: dict[str, str]) -> Case:
    return tuple(row.get(cell) or "" for cell in CASE_COLUMNS)


def _version_key(text: str) -> tuple[int, Any]:
    try:
        return (1, Version(text))
    except InvalidVersion:
        return (0, text)


def expected_cases(rows: Iterable[dict[str, str]]) -> dict[str, set[Case]]:
    """kernel -> the cases of its rows at the newest liger_version that has rows of that kernel."""
    newest: dict[str, tuple[Any, set[Case]]] = {}
    for row in rows:
        kernel = row.get("kernel_name") or ""
        version = _version_key(row.get("liger_version") or "")
        current = newest.get(kernel)
        if current is None or version > current[0]:
            newest[kernel] = (version, {case_of(row)})
        elif version == current[0]:
            current[1].add(case_of(row))
    return {kernel: cases for kernel, (_, cases) in newest.items() if kernel}


def read_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a benchmark CSV (an unreadable or missing file has none)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    try:
        return [row for row in csv.DictReader(io.StringIO(text, newline="")) if None not in row]
    except csv.Error:
        return []


@dataclass
class ScriptCoverage:
    script: str
    status: str  # ScriptStatus value, or "not_run" (not selected by the sweep)
    expected: int = 0
    measured: int = 0  # expected cases it measured
    unexpected: int = 0  # cases it measured that the expectation does not list
    missing: dict[str, int] = field(default_factory=dict)  # reason -> cases
    missing_cases: list[dict[str, str]] = field(default_factory=list)  # the first MISSING_LISTED, with reason
    rounds: dict[str, int] = field(default_factory=dict)  # status -> rounds (and variants) that ended so
    throttled: list[str] = field(default_factory=list)  # throttle reasons seen around any of its runs

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SweepCoverage:
    expectation: str  # "previous_sweep", "release_history" or "none"
    source: str  # where the expectation came from (a path or a locator)
    scripts: list[ScriptCoverage]

    def totals(self) -> dict[str, Any]:
        missing: dict[str, int] = {}
        for script in self.scripts:
            for reason, count in script.missing.items():
                missing[reason] = missing.get(reason, 0) + count
        expected = sum(s.expected for s in self.scripts)
        measured = sum(s.measured for s in self.scripts)
        return {
            "expected": expected,
            "measured": measured,
            "unexpected": sum(s.unexpected for s in self.scripts),
            "missing": dict(sorted(missing.items())),
            "percent": round(100.0 * measured / expected, 2) if expected else None,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "expectation": self.expectation,
            "source": self.source,
            "totals": self.totals(),
            "scripts": [s.to_dict() for s in self.scripts],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SweepCoverage:
        return cls(data["expectation"], data["source"], [ScriptCoverage(**s) for s in data["scripts"]])

    def summary(self) -> str:
        totals = self.totals()
        if self.expectation == "none":
            return f"coverage: no expectation ({self.source} has no rows); {totals['unexpected']} cases measured"
        missing = ", ".join(f"{reason} {count}" for reason, count in totals["missing"].items()) or "none"
        return (
            f"coverage: {totals['measured']}/{totals['expected']} expected cases measured (from the {self.expectation.replace('_', ' ')}), "
            f"missing: {missing}; {totals['unexpected']} unexpected"
        )

    def markdown(self) -> str:
        lines = [
            f"expected from: {self.expectation} ({self.source})",
            "",
            "| script | status | expected | measured | unexpected | missing | throttled |",
            "| --- | --- | ---: | ---: | ---: | --- | --- |",
        ]
        for s in self.scripts:
            missing = ", ".join(f"{reason} {count}" for reason, count in sorted(s.missing.items())) or "-"
            throttled = ", ".join(s.throttled) or "-"
            lines.append(
                f"| {s.script} | {s.status} | {s.expected} | {s.measured} | {s.unexpected} | {missing} | {throttled} |"
            )
        return "\n".join(lines)


def sweep_coverage(
    rows: Iterable[dict[str, str]],
    outcomes: list[ScriptOutcome],
    expected: dict[str, set[Case]],
    script_of_kernel: dict[str, str],
    *,
    expectation: str,
    source: str,
) -> SweepCoverage:
    """Coverage of one sweep.

    rows: the sweep's CSV rows; outcomes: the scripts it ran; expected: `expected_cases(...)`;
    script_of_kernel: the release's script (file name) for every expected kernel that has one.
    """
    # A script runs once per round and backend variant: it counts as its best run (ok if any round was),
    # and `rounds` says how every run ended.
    runs_of: dict[str, list[ScriptOutcome]] = {}
    for o in outcomes:
        runs_of.setdefault(o.script, []).append(o)
    outcome_of = {script: next((o for o in runs if o.ok), runs[-1]) for script, runs in runs_of.items()}
    measured_by_kernel: dict[str, set[Case]] = {}
    for row in rows:
        measured_by_kernel.setdefault(row.get("kernel_name") or "", set()).add(case_of(row))
    owner = dict(script_of_kernel)
    for outcome in outcomes:  # a measured kernel the release's scripts do not name belongs to its writer
        for kernel in outcome.kernels:
            owner.setdefault(kernel, outcome.script)

    coverage: dict[str, ScriptCoverage] = {}

    def entry(script: str) -> ScriptCoverage:
        if script not in coverage:
            outcome = outcome_of.get(script)
            status = outcome.status.value if outcome else ("not_run" if script != NO_SCRIPT else "missing")
            if outcome is not None and outcome.status is ScriptStatus.SKIPPED:
                status = f"skipped: {outcome.error_line}"  # e.g. "skipped: needs 8 GPUs"
            coverage[script] = ScriptCoverage(script, status)
            for run in runs_of.get(script, []):
                item = coverage[script]
                item.rounds[run.status.value] = item.rounds.get(run.status.value, 0) + 1
                for reason in run.gpu_state.get("throttle_reasons") or []:
                    if reason not in item.throttled:
                        item.throttled.append(reason)
        return coverage[script]

    for outcome in outcomes:
        entry(outcome.script)
    for kernel in sorted(set(expected) | set(measured_by_kernel)):
        script = owner.get(kernel, NO_SCRIPT)
        item = entry(script)
        wanted, got = expected.get(kernel, set()), measured_by_kernel.get(kernel, set())
        item.expected += len(wanted)
        item.measured += len(wanted & got)
        item.unexpected += len(got - wanted)
        outcome = outcome_of.get(script)
        if script == NO_SCRIPT:
            reason = "no_script"
        elif outcome is None:
            reason = "skipped_by_config"
        else:
            reason = REASON_OF_STATUS[outcome.status]
        for case in sorted(wanted - got):
            item.missing[reason] = item.missing.get(reason, 0) + 1
            if len(item.missing_cases) < MISSING_LISTED:
                item.missing_cases.append({**dict(zip(CASE_COLUMNS, case, strict=True)), "reason": reason})
    return SweepCoverage(expectation, source, [coverage[s] for s in sorted(coverage)])
