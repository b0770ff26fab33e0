"""A sweep's rounds merged into one CSV: each run's median is the median of its rounds.

A sweep runs its scripts `rounds` times, interleaved (round 1: A B C, round 2: A B C, ...), each round
(and each backend variant, sweep/backends.py) against a fresh data CSV that is kept as
`logs/round-<n>[-<variant>]/all_benchmark_data.csv`. Merging:

* a row's identity is the script's row key, with the provider cell `liger@<backend>` where Liger's
  dispatcher resolved a backend for it (so two backends of one op are two rows, two series);
* its y_value_50/20/80 are the medians of its rounds' values (a round that lost the row, e.g. a
  script that timed out in that round, simply does not count); its timestamp is its first round's;
* its raw samples: the rounds' calls pooled for minimum/maximum/p05/p95/mad, `confidence95` from the
  rounds (liger.sample_statistics.rounds_statistics: none for a single round), one artifact listing every
  round's call artifact by digest (a single round: the call's own; `roundArtifacts` keeps their refs
  so the artifact store takes them too), and the do_bench warmup/rep the calls used (for the run's
  protocol);
* labels for its run: `throttled` (the reasons) when a script that measured it ran throttled.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from kernelindex_pipeline.liger.measured_rows import provider_with_backend
from kernelindex_pipeline.liger.sample_statistics import ROUNDS_INTERVAL_METHOD, rounds_statistics, row_key_of

from .outcomes import ScriptOutcome
from .samples import ArtifactDirectory, ArtifactError, json_artifact_bytes, read_artifact

ROUNDS_ARTIFACT_FORMAT = "kernelindex-sweep-rounds/v1"


@dataclass
class RoundRun:
    """One round of one variant: the scripts' outcomes and the CSV they left."""

    round: int
    variant: str
    outcomes: list[ScriptOutcome]
    rows: dict[str, dict[str, str]]  # row_key_of -> row as the scripts wrote it
    backends: dict[str, str] = field(default_factory=dict)  # row_key_of -> resolved backend
    script_of_kernel: dict[str, str] = field(default_factory=dict)


@dataclass
class MergedRounds:
    rows: list[dict[str, str]]
    raw_samples: dict[str, dict[str, Any]]  # row_key_of of the merged row -> samples entry
    row_labels: dict[str, dict[str, str]]  # row_key_of of the merged row -> labels of its run
    rounds_per_row: dict[str, int]


def _median_cell(values: list[str]) -> str:
    try:
        return repr(float(statistics.median(float(v) for v in values)))
    except (ValueError, TypeError, statistics.StatisticsError):
        return values[0]


def merge_rounds(runs: list[RoundRun], artifacts: ArtifactDirectory) -> MergedRounds:
    groups: dict[str, list[tuple[RoundRun, dict[str, str], str]]] = {}
    for run in runs:
        for key, row in run.rows.items():
            merged = dict(row)
            backend = run.backends.get(key)
            if backend:
                merged["kernel_provider"] = provider_with_backend(row["kernel_provider"], backend)
            groups.setdefault(row_key_of(merged), []).append((run, merged, key))
    result = MergedRounds([], {}, {}, {})
    for final_key, members in groups.items():
        row = dict(members[0][1])
        for cell in ("y_value_50", "y_value_20", "y_value_80"):
            row[cell] = _median_cell([m[1][cell] for m in members])
        result.rows.append(row)
        result.rounds_per_row[final_key] = len(members)
        entry = _samples_entry(members, artifacts)
        if entry is not None:
            result.raw_samples[final_key] = entry
        throttled = sorted(
            {reason for run, merged, _ in members for reason in _throttle_of(run, merged["kernel_name"])}
        )
        if throttled:
            result.row_labels[final_key] = {"throttled": ",".join(throttled)[:200]}
    return result


def _throttle_of(run: RoundRun, kernel: str) -> list[str]:
    script = run.script_of_kernel.get(kernel)
    for outcome in run.outcomes:
        if outcome.script == script:
            return list(outcome.gpu_state.get("throttle_reasons") or [])
    return []


def _samples_entry(
    members: list[tuple[RoundRun, dict[str, str], str]], artifacts: ArtifactDirectory
) -> dict[str, Any] | None:
    rounds, samples, arguments = [], [], []
    for run, _, key in members:
        for outcome in run.outcomes:
            entry = outcome.raw_samples.get(key)
            if entry is None:
                continue
            try:
                content = read_artifact(entry["artifact"])
            except (ArtifactError, ValueError, KeyError):
                continue  # an artifact that is gone or altered (run.recheck_artifacts names it): no samples that round
            samples.append(content["samples"])
            arguments.append(content.get("arguments") or {})
            rounds.append(
                {
                    "round": run.round,
                    "variant": run.variant,
                    "artifact": entry["artifact"],
                    "returned": content.get("returned"),
                }
            )
            break
    if not samples:
        return None
    try:
        stats = rounds_statistics(samples)
    except ValueError:
        return None
    round_artifacts = [r["artifact"] for r in rounds]
    if len(rounds) == 1:  # the call's own artifact
        artifact = round_artifacts[0]
    else:  # the rounds' calls named by digest (the artifact store keeps each under it), never by a host path
        listed = [{**r, "artifact": {"digest": r["artifact"]["digest"]}} for r in rounds]
        artifact = artifacts.write(
            json_artifact_bytes({"format": ROUNDS_ARTIFACT_FORMAT, "method": ROUNDS_INTERVAL_METHOD, "rounds": listed})
        )
    do_bench = {name: arguments[0].get(name) for name in ("warmup", "rep")}
    if any({name: a.get(name) for name in ("warmup", "rep")} != do_bench for a in arguments):
        do_bench = {}  # rounds that disagree (they never should): the protocol states none
    return {
        "artifact": artifact,
        "roundArtifacts": round_artifacts,
        **stats,
        "rounds": len(samples),
        "doBench": do_bench,
    }
