"""What became of one benchmark script, and the errors of a sweep.

A script ends in one of four ways:
- ``ok``: exit code 0;
- ``timed_out``: still running at its timeout, so its whole process group was killed;
- ``out_of_memory``: a non-zero exit whose log shows the CUDA allocator (or CUDA itself) running out of memory;
- ``failed``: any other non-zero exit, with the last error line of its log;
- ``skipped``: not run, because this host cannot run it (the TP script on fewer GPUs than it needs);
  its error line says why ("needs 8 GPUs").
"""

from __future__ import annotations

import enum
import re
from dataclasses import asdict, dataclass, field


class ScriptStatus(enum.StrEnum):
    OK = "ok"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    OUT_OF_MEMORY = "out_of_memory"
    SKIPPED = "skipped"


# Text PyTorch, CUDA and cuBLAS print when GPU memory runs out. Triton's OutOfResources is about shared
# memory / registers of one kernel launch, not device memory, so it is a plain failure.
_OUT_OF_MEMORY = re.compile(
    r"CUDA out of memory"
    r"|torch\.(?:cuda\.)?OutOfMemoryError"
    r"|CUDA error: out of memory"
    r"|cudaErrorMemoryAllocation"
    r"|CUBLAS_STATUS_ALLOC_FAILED"
)
# The line Python prints last for an uncaught exception: "pkg.module.SomeError: message".
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt|Failure)\b.*$")


def mentions_out_of_memory(log_text: str) -> bool:
    return _OUT_OF_MEMORY.search(log_text) is not None


def last_error_line(log_text: str) -> str | None:
    """The last exception line of a log, else its last non-empty line (None for an empty log)."""
    lines = [line.strip() for line in log_text.splitlines() if line.strip()]
    for line in reversed(lines):
        if _EXCEPTION_LINE.match(line):
            return line[:500]
    return lines[-1][:500] if lines else None


def classify(exit_code: int | None, timed_out: bool, log_text: str) -> tuple[ScriptStatus, str | None]:
    """(status, error line) of one finished script; the error line is None when it ran fine."""
    if timed_out:
        return ScriptStatus.TIMED_OUT, last_error_line(log_text)
    if exit_code == 0:
        return ScriptStatus.OK, None
    if mentions_out_of_memory(log_text):
        oom_lines = [line.strip() for line in log_text.splitlines() if _OUT_OF_MEMORY.search(line)]
        return ScriptStatus.OUT_OF_MEMORY, oom_lines[-1][:500]
    return ScriptStatus.FAILED, last_error_line(log_text)


@dataclass
class ScriptOutcome:
    """One script of a sweep: how it ended and what it left in the data CSV."""

    script: str  # file name, e.g. "benchmark_rms_norm.py"
    status: ScriptStatus
    exit_code: int | None  # None when it was killed at its timeout
    error_line: str | None
    rows: int  # rows this script added to the data CSV
    kernels: list[str] = field(default_factory=list)  # CSV kernel_name values of those rows
    seconds: float = 0.0
    log_path: str = ""
    log_digest: str = ""  # "sha256:<hex>" of the log file
    # True when the script left the data CSV unreadable or without earlier rows and the runner restored them.
    csv_repaired: bool = False
    # sweep/samples.py: the script's do_bench calls (ScriptSamples.summary()) and, per row key
    # (liger.sample_statistics.row_key), the samples entry of each row they measured.
    samples: dict = field(default_factory=dict)
    raw_samples: dict[str, dict] = field(default_factory=dict)
    # What else the runner found and dealt with: {"kind": ..., "message": one sentence}; kinds:
    # leftover_processes, log_truncated, launcher_failed, data_csv, rows_lost, rows_rewritten.
    problems: list[dict] = field(default_factory=list)
    round: int = 1  # which round of the sweep (sweep/rounds.py)
    variant: str = "resolved"  # which backend variant (sweep/backends.py)
    # sweep/backends.py Dispatches.summary(): what Liger's dispatcher resolved in this script
    backends: dict = field(default_factory=dict)
    # liger.sample_statistics.row_key_of(row) -> the backend resolved for that row
    backends_by_row: dict[str, str] = field(default_factory=dict)
    # sweep/gpu_state.py: {"before": ..., "after": ..., "throttle_reasons": [...]}
    gpu_state: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is ScriptStatus.OK

    def to_dict(self) -> dict:
        data = asdict(self)
        data["status"] = self.status.value
        return data

    @classmethod
    def from_dict(cls, data: dict) -> ScriptOutcome:
        return cls(**{**data, "status": ScriptStatus(data["status"])})

    def summary(self) -> str:
        where = (
            f" (round {self.round}{'' if self.variant == 'resolved' else ', ' + self.variant})"
            if self.round > 1 or self.variant != "resolved"
            else ""
        )
        text = f"{self.script}{where}: {self.status.value}, {self.rows} rows in {self.seconds:.1f} s"
        if self.samples.get("calls"):
            text += f", {self.samples['rows_with_samples']} with raw samples ({self.samples['calls']} do_bench calls)"
        if self.exit_code not in (0, None):
            text += f", exit code {self.exit_code}"
        if self.error_line:
            text += f" ({self.error_line})"
        if self.gpu_state.get("throttle_reasons"):
            text += f", throttled ({', '.join(self.gpu_state['throttle_reasons'])})"
        for problem in self.problems:
            text += f"; {problem['message']}"
        return text


class SweepError(RuntimeError):
    """A sweep could not run. `retryable` tells the orchestrator whether trying again can help."""

    retryable = True


class HostCheckError(SweepError):
    """The host cannot run the partition: no CUDA device, or a GPU other than the partition's.

    Retrying on the same host cannot help, so it is never retried.
    """

    retryable = False


class ConfigurationError(SweepError):
    """The sweep request names something that does not exist (a kernel, a script, a release file)."""

    retryable = False


class EnvironmentBuildError(SweepError):
    """The scripts' Python environment could not be built (pip failed, wheel missing offline, ...)."""
