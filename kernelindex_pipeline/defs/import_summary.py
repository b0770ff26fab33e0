"""What an import command shows: a line per partition, the progress of its runs, the summary with the
totals of the catalogue. Nothing here launches or waits for anything (defs/run_control.py does)."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field

from kernelindex_pipeline.defs.chain import STAGES


@dataclass
class PartitionOutcome:
    key: str
    info: dict = field(default_factory=dict)  # the publication step's progress info

    def line(self) -> str:
        info = self.info
        text = f"{self.key}: {info['rows']} rows, {info['runs']} runs, {info['new']} new, {info['already_present']} already present"
        if info.get("parts", 1) != 1:
            text += f" ({info['parts']} files)"
        if not info["runs"]:
            text += f" - {info.get('why_no_runs', 'no runs')}"
        return text


@dataclass
class ImportSummary:
    source: str
    detail: str  # e.g. "history of liger-kernel 0.8.5"
    partitions: list[str]
    run_ids: list[str] = field(default_factory=list)
    outcomes: dict[str, PartitionOutcome] = field(default_factory=dict)
    failed_runs: dict[str, str] = field(default_factory=dict)  # run id -> reason
    catalogue_run: str = ""
    refresh_problem: str = ""  # the catalogue automation's refresh failed or never came
    catalogue_by_kind: dict = field(default_factory=dict)
    catalogue_url: str = ""
    catalogue_fingerprint: str = ""  # CatalogueStore.content_fingerprint() once the runs ended
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def new_records(self) -> int:
        """Records this import added to the catalogue: none, and its content fingerprint is unchanged."""
        return sum(outcome.info.get("new", 0) for outcome in self.outcomes.values())

    @property
    def ok(self) -> bool:
        return not self.failed_runs and len(self.outcomes) == len(self.partitions) and not self.refresh_problem

    def lines(self) -> list[str]:
        done = list(self.outcomes.values())
        total = lambda name: sum(o.info.get(name, 0) for o in done)  # noqa: E731
        out = [
            f"{self.detail}: {len(self.partitions)} partitions in {len(self.run_ids)} run(s) in {self.seconds:.1f}s "
            f"({len(done)} published, {len(self.partitions) - len(done)} not)",
            f"rows read {total('rows')}, runs {total('runs')}, issues {total('issues')}; "
            f"publication: {total('new')} new, {total('already_present')} already present",
        ]
        with_issues = [o for o in done if o.info.get("first_issues")]
        for outcome in with_issues:
            info = outcome.info
            more = (
                f", +{info['issues'] - len(info['first_issues'])} more"
                if info["issues"] > len(info["first_issues"])
                else ""
            )
            out.append(
                f"{outcome.key}: {info['issues']} rows with issues: {'; '.join(info['first_issues'])}{more} "
                f"(all in {info['issues_file']})"
            )
        empty = [o for o in done if not o.info["runs"]]
        if empty:
            out.append(f"{len(empty)} partitions made no runs:")
            out += [f"  {o.line()}" for o in empty]
        for run_id, reason in self.failed_runs.items():
            out.append(f"run {run_id} failed: {reason}")
        out += self.notes
        out.append(
            f"catalogue {self.catalogue_url}: {sum(self.catalogue_by_kind.values())} records ("
            + ", ".join(f"{k} {v}" for k, v in self.catalogue_by_kind.items() if v)
            + ")"
        )
        return out


class Progress:
    """A bar per run over partition x stage on a terminal; one line per published partition otherwise."""

    def __init__(self, partitions: int, label: str, stream=sys.stderr) -> None:
        from tqdm import tqdm

        self.tty = stream.isatty()
        self.stream = stream
        # A terminal that reports no size (a pty nobody sized) still gets a bar: tqdm hides bars below its last row.
        size = shutil.get_terminal_size(fallback=(100, 24))
        self.bar = (
            tqdm(
                total=partitions * len(STAGES),
                desc=label,
                unit="step",
                file=stream,
                leave=True,
                ncols=size.columns,
                nrows=size.lines,
            )
            if self.tty
            else None
        )
        self.published = 0
        self.partitions = partitions

    def step(self, stage: str, outcome: PartitionOutcome | None) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(stage, refresh=False)
            self.bar.update(1)
        elif outcome is not None:
            self.published += 1
            print(f"[{self.published}/{self.partitions}] {outcome.line()}", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


CATALOGUE_WIDE = "export, regressions, coverage and report"  # the catalogue group's assets, as the operator knows them


def automation_stopped_line(sensor: str) -> str:
    return (
        f"the {sensor} sensor is stopped (in the UI): the catalogue-wide assets were not refreshed; "
        "start it, or materialize them from the `catalogue` group"
    )


def unchanged_line() -> str:
    return "the catalogue is unchanged (0 new records): the catalogue-wide assets have nothing to refresh"


def on_its_own_line(our_daemon: bool) -> str:
    """The command returns; who refreshes the catalogue-wide assets, and how to wait for it instead."""
    if our_daemon:  # the daemon this command started stops with it
        who = (
            "while a dagster-daemon serves this DAGSTER_HOME (`dagster dev`, whose UI shows its progress, "
            "or the next import command)"
        )
    else:
        who = "on the running dagster-daemon (its progress is in the UI: Runs, and the `catalogue` group)"
    return f"the catalogue automation refreshes {CATALOGUE_WIDE} on its own {who}; --wait waits for it here"


def waiting_line() -> str:
    return f"waiting for the catalogue automation to refresh {CATALOGUE_WIDE} ..."


def refresh_progress_line(run_id: str, done: int, total: int, asset: str) -> str:
    return f"catalogue refresh run {run_id}: [{done}/{total}] {asset} refreshed"


def refresh_line(run_id: str, problem: str, seconds: float) -> str:
    if problem:
        return f"catalogue-wide assets NOT refreshed: {problem}"
    return f"catalogue-wide assets refreshed by run {run_id} in {seconds:.1f}s"
