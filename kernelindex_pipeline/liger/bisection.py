"""The search of a bisection: which of a change's suspect commits moved a series, measured, not guessed.

Plain Python: the search knows commits only as names in order and measurements only through the
`measure(commit)` callable it is given (a sweep of the kernel's own benchmark script at that commit,
`sweep/bisection.py`; a fake in the tests). The protocol, as `git bisect` with `skip`:

1. The sequence is ``[good, *candidates, bad]``, oldest first: `good` is the code of the last run before
   the change, `bad` that of the first run after, `candidates` the n commits between them that touch
   what the benchmark uses (attribution lists them). The culprit is one of ``candidates + [bad]``: the
   first commit at the after level, the one before it in the sequence (its *parent*: every commit between
   them touches none of the benchmark's code) at the before level.
2. The endpoints are measured first, `good` then `bad`. They must reproduce the change: their intervals
   lie on their own sides of the midpoint of their two values (the levels separate) and, where the change's
   step is given (`expected`, after / before with its interval), the measured step's interval overlaps it.
   Levels that do not separate although the step is the expected one: ``ambiguous``; anything else (no step,
   another step, an endpoint that does not build or import): ``not reproduced``. Either stops the search.
3. Binary search between the last commit known at the before level and the first known at the after level,
   probing the middle. A commit that does not build or import (`Skipped`) is said, and the nearest untried
   commit to the middle is probed instead. A measurement whose interval straddles the midpoint of the two
   levels cannot be placed: ``ambiguous``, stop (more rounds would separate it). When only skipped commits
   are left between the two, the verdict is ``ambiguous`` with those commits and the after one as the
   commits still in question.
4. At most ``ceil(log2(n + 1)) + 2`` measurements (the endpoints and a binary search over n + 1 places;
   skipped commits are not measurements, and each is listed as a step), and a budget of GPU-seconds: a
   step starts only while the seconds spent plus the longest step so far fit in it. Either limit ends the
   search cleanly with an ``incomplete`` verdict naming the commits still in question.

Values are what the callable measures (a latency in ns, say); which direction the change went does not
matter (a speed-up is bisected as a slowdown is).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

CONFIRMED = "confirmed"
AMBIGUOUS = "ambiguous"
NOT_REPRODUCED = "not reproduced"
INCOMPLETE = "incomplete"
VERDICTS = (CONFIRMED, AMBIGUOUS, NOT_REPRODUCED, INCOMPLETE)

# where a step's commit sits: the endpoints, or a candidate between them
GOOD, BAD, CANDIDATE = "good", "bad", "candidate"
# what a step found: the before or the after level, neither (straddles the midpoint), or no measurement
BEFORE, AFTER, UNPLACED, SKIPPED = "before", "after", "unplaced", "skipped"


@dataclass(frozen=True)
class Measurement:
    """One commit measured: its value and the 95 % interval around it (`low` <= `value` <= `high`), and
    the GPU-seconds the measurement took (counted against the budget)."""

    value: float
    low: float
    high: float
    seconds: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)  # shown with the step (e.g. the sweep's work dir)

    def __post_init__(self) -> None:
        if not all(math.isfinite(v) for v in (self.value, self.low, self.high)) or not (
            self.low <= self.value <= self.high
        ):
            raise ValueError(
                f"a measurement needs finite low <= value <= high; got {self.low}, {self.value}, {self.high}"
            )


@dataclass(frozen=True)
class Skipped:
    """A commit that could not be measured: it does not build, or the benchmark does not import it."""

    reason: str
    seconds: float = 0.0
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ExpectedStep:
    """The step the change showed: after / before (`ratio`, e.g. 1.25 for a 25 % slowdown) with its 95 %
    interval. Relative, because the bisection's host is not the host that saw the change: its absolute
    levels differ, its step should not."""

    ratio: float
    low: float
    high: float

    def __post_init__(self) -> None:
        if not (0 < self.low <= self.ratio <= self.high) or not math.isfinite(self.high):
            raise ValueError(
                f"an expected step needs 0 < low <= ratio <= high; got {self.low}, {self.ratio}, {self.high}"
            )


@dataclass(frozen=True)
class Step:
    """One commit tried, in the order tried."""

    number: int  # 1, 2, ...
    commit: str
    role: str  # GOOD, BAD or CANDIDATE
    position: int  # in [good, *candidates, bad]
    outcome: str  # BEFORE, AFTER, UNPLACED or SKIPPED
    value: float | None = None
    low: float | None = None
    high: float | None = None
    seconds: float = 0.0
    reason: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "step": self.number,
            "commit": self.commit,
            "role": self.role,
            "position": self.position,
            "outcome": self.outcome,
            "value": self.value,
            "interval": None if self.low is None else [self.low, self.high],
            "seconds": round(self.seconds, 3),
        }
        if self.reason:
            out["reason"] = self.reason
        if self.detail:
            out["detail"] = self.detail
        return out


@dataclass(frozen=True)
class Verdict:
    """What the search concluded, with every step. `culprit` (CONFIRMED only) is the first commit at the
    after level and `parent` the one before it, measured at the before level; `in_question` the commits
    that may still be the culprit (all of them for NOT_REPRODUCED, none for CONFIRMED)."""

    kind: str
    reason: str
    steps: tuple[Step, ...]
    candidates: int
    max_measurements: int
    budget_seconds: float | None
    culprit: str | None = None
    parent: str | None = None
    in_question: tuple[str, ...] = ()
    expected: ExpectedStep | None = None
    measured_step: tuple[float, float, float] | None = None  # bad / good: ratio, low, high

    @property
    def label(self) -> str:
        """``confirmed <sha>``, ``ambiguous``, ``not reproduced`` or ``incomplete``."""
        return f"{CONFIRMED} {self.culprit}" if self.kind == CONFIRMED else self.kind

    @property
    def measurements(self) -> int:
        return sum(1 for s in self.steps if s.outcome != SKIPPED)

    @property
    def skipped(self) -> tuple[str, ...]:
        return tuple(s.commit for s in self.steps if s.outcome == SKIPPED)

    @property
    def gpu_seconds(self) -> float:
        return sum(s.seconds for s in self.steps)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of a bisection verdict (docs/concepts/bisection.md)."""
        return {
            "verdict": self.kind,
            "label": self.label,
            "culprit": self.culprit,
            "parent": self.parent,
            "reason": self.reason,
            "inQuestion": list(self.in_question),
            "candidates": self.candidates,
            "measurements": self.measurements,
            "maxMeasurements": self.max_measurements,
            "skipped": list(self.skipped),
            "gpuSeconds": round(self.gpu_seconds, 3),
            "budgetSeconds": self.budget_seconds,
            "expectedStep": None
            if self.expected is None
            else {"ratio": self.expected.ratio, "ci95": [self.expected.low, self.expected.high]},
            "measuredStep": None
            if self.measured_step is None
            else {"ratio": self.measured_step[0], "ci95": list(self.measured_step[1:])},
            "steps": [s.to_dict() for s in self.steps],
        }

    def summary_lines(self) -> list[str]:
        """The verdict and its steps as the command line prints them."""
        lines = [f"verdict: {self.label}: {self.reason}"]
        for s in self.steps:
            where = f"{s.role} {s.position}"
            if s.outcome == SKIPPED:
                lines.append(f"  {s.number}. {s.commit[:12]} ({where}): skipped: {s.reason}")
            else:
                lines.append(
                    f"  {s.number}. {s.commit[:12]} ({where}): {s.value:.6g} [{s.low:.6g}, {s.high:.6g}] -> {s.outcome}"
                    f" ({s.seconds:.1f} s)"
                )
        lines.append(
            f"{self.measurements} measurement(s) of at most {self.max_measurements} for {self.candidates} candidate(s), "
            f"{len(self.skipped)} skipped, {self.gpu_seconds:.1f} GPU-s"
            + (f" of a {self.budget_seconds:g} s budget" if self.budget_seconds is not None else "")
        )
        return lines


def max_measurements(candidates: int) -> int:
    """``ceil(log2(n + 1)) + 2``: the endpoints and a binary search over the n + 1 places a culprit can be."""
    return math.ceil(math.log2(candidates + 1)) + 2


Measure = Callable[[str], "Measurement | Skipped"]


def bisect(
    good: str,
    candidates: list[str],
    bad: str,
    measure: Measure,
    *,
    expected: ExpectedStep | None = None,
    budget_seconds: float | None = None,
) -> Verdict:
    """Bisect ``[good, *candidates, bad]`` (oldest first) with `measure`, by the protocol of this module's
    docstring. Never raises for what a commit measures; `measure` itself may raise to abort."""
    sequence = [good, *candidates, bad]
    if len(set(sequence)) != len(sequence):
        raise ValueError("a bisection's commits must be distinct (good, the candidates, bad)")
    if budget_seconds is not None and not budget_seconds > 0:
        raise ValueError(f"a GPU-seconds budget must be positive; got {budget_seconds!r}")
    search = _Search(sequence, measure, expected, budget_seconds)
    return search.run()


class _Search:
    def __init__(self, sequence: list[str], measure: Measure, expected: ExpectedStep | None, budget: float | None):
        self.sequence = sequence
        self.measure = measure
        self.expected = expected
        self.budget = budget
        self.cap = max_measurements(len(sequence) - 2)
        self.steps: list[Step] = []
        self.midpoint = 0.0
        self.good_side = 0.0  # -1 or +1: on which side of the midpoint the good level lies
        self.measured_step: tuple[float, float, float] | None = None

    # ---------------------------------------------------------------------------------- helpers
    def verdict(self, kind: str, reason: str, **fields: Any) -> Verdict:
        return Verdict(
            kind=kind,
            reason=reason,
            steps=tuple(self.steps),
            candidates=len(self.sequence) - 2,
            max_measurements=self.cap,
            budget_seconds=self.budget,
            expected=self.expected,
            measured_step=self.measured_step,
            **fields,
        )

    def stop_before_step(self) -> str | None:
        """Why the next step may not start (None: it may)."""
        measured = sum(1 for s in self.steps if s.outcome != SKIPPED)
        if measured >= self.cap:
            return f"the {self.cap} measurements allowed for {len(self.sequence) - 2} candidate(s) are spent"
        if self.budget is not None:
            spent = sum(s.seconds for s in self.steps)
            longest = max((s.seconds for s in self.steps), default=0.0)
            if spent + longest > self.budget:
                return (
                    f"the GPU-seconds budget ({self.budget:g} s) would be exceeded: {spent:.1f} s spent, a step takes up "
                    f"to {longest:.1f} s"
                )
        return None

    def take(self, position: int) -> Measurement | Skipped:
        commit = self.sequence[position]
        role = GOOD if position == 0 else BAD if position == len(self.sequence) - 1 else CANDIDATE
        result = self.measure(commit)
        number = len(self.steps) + 1
        if isinstance(result, Skipped):
            self.steps.append(
                Step(
                    number,
                    commit,
                    role,
                    position,
                    SKIPPED,
                    seconds=result.seconds,
                    reason=result.reason,
                    detail=result.detail,
                )
            )
            return result
        if not isinstance(result, Measurement):
            raise TypeError(f"measure({commit!r}) returned {type(result).__name__}, not a Measurement or Skipped")
        outcome = self.place(result) if self.good_side else UNPLACED
        self.steps.append(
            Step(
                number,
                commit,
                role,
                position,
                outcome,
                result.value,
                result.low,
                result.high,
                result.seconds,
                detail=result.detail,
            )
        )
        return result

    def place(self, m: Measurement) -> str:
        """BEFORE / AFTER when the interval lies wholly on that level's side of the midpoint, else UNPLACED."""
        low, high = (m.low - self.midpoint) * self.good_side, (m.high - self.midpoint) * self.good_side
        if low > 0 and high > 0:
            return BEFORE
        if low < 0 and high < 0:
            return AFTER
        return UNPLACED

    def relabel(self, index: int, outcome: str) -> None:
        self.steps[index] = dataclasses.replace(self.steps[index], outcome=outcome)

    # ------------------------------------------------------------------------------- the search
    def run(self) -> Verdict:
        everything = tuple(self.sequence[1:])
        last = len(self.sequence) - 1
        for position in (0, last):
            why = self.stop_before_step()
            if why:
                return self.verdict(INCOMPLETE, f"{why} before both endpoints were measured", in_question=everything)
            result = self.take(position)
            if isinstance(result, Skipped):
                name = "good" if position == 0 else "bad"
                return self.verdict(
                    NOT_REPRODUCED,
                    f"the {name} endpoint {self.sequence[position][:12]} cannot be measured: {result.reason}",
                    in_question=everything,
                )
        reproduced = self.judge_endpoints()
        if reproduced is not None:
            return reproduced
        low, high = 0, last  # low: known at the before level; high: known at the after level
        skipped: set[int] = set()
        while high - low > 1:
            untried = [p for p in range(low + 1, high) if p not in skipped]
            in_question = tuple(self.sequence[low + 1 : high + 1])
            if not untried:
                names = ", ".join(self.sequence[p][:12] for p in range(low + 1, high))
                return self.verdict(
                    AMBIGUOUS,
                    f"the culprit is {self.sequence[high][:12]} or a commit before it that cannot be measured ({names}); "
                    f"{self.sequence[low][:12]} is at the before level",
                    in_question=in_question,
                )
            why = self.stop_before_step()
            if why:
                return self.verdict(
                    INCOMPLETE,
                    f"{why}; the culprit is one of the {len(in_question)} commit(s) after {self.sequence[low][:12]} up to "
                    f"{self.sequence[high][:12]}",
                    in_question=in_question,
                )
            middle = (low + high) / 2
            position = min(untried, key=lambda p: (abs(p - middle), p))
            result = self.take(position)
            if isinstance(result, Skipped):
                skipped.add(position)
                continue
            outcome = self.steps[-1].outcome
            if outcome == BEFORE:
                low = position
            elif outcome == AFTER:
                high = position
            else:
                return self.verdict(
                    AMBIGUOUS,
                    f"{self.sequence[position][:12]} measured {result.value:.6g} [{result.low:.6g}, {result.high:.6g}], "
                    f"which overlaps both levels (midpoint {self.midpoint:.6g}): more rounds would separate it",
                    in_question=in_question,
                )
        return self.verdict(
            CONFIRMED,
            f"{self.sequence[high][:12]} is the first commit at the after level; {self.sequence[low][:12]} before it is at "
            "the before level",
            culprit=self.sequence[high],
            parent=self.sequence[low],
        )

    def judge_endpoints(self) -> Verdict | None:
        """Set the levels from the endpoints' measurements; a verdict when they do not reproduce the change."""
        good, bad = self.steps[0], self.steps[-1]
        assert good.value is not None and bad.value is not None and good.low is not None and bad.low is not None
        everything = tuple(self.sequence[1:])
        self.midpoint = (good.value + bad.value) / 2
        self.good_side = -1.0 if good.value < bad.value else 1.0
        if good.value == bad.value:
            self.good_side = 0.0
        if good.low > 0 and bad.low > 0:
            self.measured_step = (bad.value / good.value, bad.low / good.high, bad.high / good.low)
        separate = bool(self.good_side) and self.place(_of(good)) == BEFORE and self.place(_of(bad)) == AFTER
        for index, step in ((0, good), (len(self.steps) - 1, bad)):
            self.relabel(index, self.place(_of(step)) if self.good_side else UNPLACED)
        step_text = (
            f"measured step {self.measured_step[0]:.4g} [{self.measured_step[1]:.4g}, {self.measured_step[2]:.4g}]"
            if self.measured_step
            else f"measured {good.value:.6g} -> {bad.value:.6g}"
        )
        expected_ok = True
        if self.expected is not None:
            expected_text = (
                f"the change's {self.expected.ratio:.4g} [{self.expected.low:.4g}, {self.expected.high:.4g}]"
            )
            expected_ok = self.measured_step is not None and not (
                self.measured_step[2] < self.expected.low or self.measured_step[1] > self.expected.high
            )
            if not expected_ok:
                return self.verdict(
                    NOT_REPRODUCED,
                    f"the endpoints do not reproduce the change: {step_text}, {expected_text}",
                    in_question=everything,
                )
        if not separate:
            if self.expected is not None and expected_ok and self.good_side:
                return self.verdict(
                    AMBIGUOUS,
                    f"the endpoints' levels overlap ({step_text}, as the change's, but the intervals do not separate): "
                    "more rounds would separate them",
                    in_question=everything,
                )
            return self.verdict(
                NOT_REPRODUCED,
                f"the endpoints do not reproduce a change: their levels overlap ({step_text})",
                in_question=everything,
            )
        return None


def _of(step: Step) -> Measurement:
    assert step.value is not None and step.low is not None and step.high is not None
    return Measurement(step.value, step.low, step.high)
