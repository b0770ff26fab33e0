"""The sweep's protocol: what the orchestrator asks (SweepRequest), what the sweep process answers
(SweepResult, or a SweepErrorReport of a SweepError), and their message codec.

Both sides import this module: the sweep process (pipes_entry.py) encodes its answer as one Dagster
Pipes custom message (`result_message`, `error_message`); the orchestrator (defs/sweep.py) rebuilds it
as a typed SweepReply (`reply_from_messages`). Every value is plain data (`to_dict()` is JSON), so the
two sides may run different interpreters, hosts or releases of this package.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import sentinel, tp
from .backends import backend_variants
from .coverage import SweepCoverage
from .host import HostCapture
from .outcomes import ConfigurationError, ScriptOutcome, ScriptStatus, SweepError

DEFAULT_SCRIPT_TIMEOUT_S = 1800.0
DEFAULT_ROUNDS = 3
MAX_ROUNDS = 20
# The data CSV travels inline in the result message (a pod's files need not be reachable from the
# orchestrator) up to this size; a larger one leaves csv_text None and the reply refuses it.
CSV_INLINE_LIMIT_BYTES = 32 * 2**20


# --- request and result -----------------------------------------------------------------------------
@dataclass
class SweepRequest:
    """One partition's sweep: `gpu` (kebab of the GPU name) x `liger_version`."""

    gpu: str
    liger_version: str
    release: str | None = None  # sdist tarball or extracted release dir; None: fetch from the package index
    kernels: list[str] | None = None  # CSV kernel names; None (and no `scripts`): every benchmark script
    scripts: list[str] | None = None  # script file names, e.g. ["benchmark_rms_norm.py"]
    script_timeout_s: float = DEFAULT_SCRIPT_TIMEOUT_S
    script_args: list[str] = field(
        default_factory=list
    )  # passed to every script, e.g. ["--sweep-mode", "model_config"]
    work_dir: str | None = None  # new or empty (else <work_dir>-2, ...); default: a temporary directory, kept (logs)
    env_cache_dir: str | None = None
    wheel_dir: str | None = None  # offline: install from these wheels only
    base_python: str | None = None  # interpreter with the host's torch/triton; default: this one
    extra_pythonpath: list[str] = field(default_factory=list)  # prepended for the scripts and the probe
    extra_env: dict[str, str] = field(default_factory=dict)
    # Coverage: a CSV of the cases this sweep should measure (the previous successful sweep of the
    # partition); None: the release's own history rows (sweep/coverage.py).
    expected_csv: str | None = None
    # Where the evidence (raw samples, logs) goes: sweep/artifact_store.py; None: $KERNELINDEX_ARTIFACT_STORE,
    # else the local default. Its URIs replace the sweep host's file:// paths before the result leaves.
    artifact_store: str | None = None
    # Rounds (sweep/rounds.py): every script this many times, interleaved (A B C, A B C, ...); a run's
    # median is the median of its rounds and its confidence95 covers them (none for a single round).
    rounds: int = DEFAULT_ROUNDS
    # Backends (sweep/backends.py): {op: [implementation, ...]} pinned through LIGER_KERNEL_IMPL_<OP>,
    # each combination a variant of its own; None: what Liger's dispatcher resolves.
    backends: dict[str, list[str]] | None = None
    # 0.8.5's opt-in chunk-memory sweep of benchmark_fused_linear_cross_entropy.py (providers liger-chunk-c<N>):
    # the LIGER_FLCE_BENCH_CHUNK_MEM_CONSTS it runs with; None: not swept.
    flce_chunk_mem_consts: list[int] | None = None
    # Liger's optional implementations to install into the scripts' environment (setup.py extras, e.g.
    # ["cutedsl"] for nvidia-cutlass-dsl + apache-tvm-ffi); what is installed is environment software.
    liger_extras: list[str] = field(default_factory=list)
    # The sentinel band (sweep/sentinel.py sentinel_band): this host's earlier sweeps' sentinel
    # measurements ({"operation", "median_ms"}), oldest first.
    sentinel_history: list[dict] = field(default_factory=list)
    # A bisection step (liger/commit_build.py, sweep/bisection.py): the wheel of Liger built at one commit,
    # installed instead of `liger-kernel==liger_version` (its own environment, keyed by the wheel's digest;
    # liger_version is the wheel's version), and that commit (40 hex), which the runs' ImplementationRevision
    # names instead of the release tag.
    liger_wheel: str | None = None
    liger_commit: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> SweepRequest:
        unknown = sorted(set(data) - set(cls.__dataclass_fields__))
        if unknown:
            raise ConfigurationError(
                f"unknown sweep request field(s) {unknown}; known: {sorted(cls.__dataclass_fields__)}"
            )
        for required in ("gpu", "liger_version"):
            if not data.get(required):
                raise ConfigurationError(f"the sweep request needs {required!r}")
        request = cls(**data)
        request.check()
        return request

    def check(self) -> None:
        """Refuse settings that cannot run (before anything is built)."""
        if type(self.rounds) is not int or not 1 <= self.rounds <= MAX_ROUNDS:
            raise ConfigurationError(
                f"rounds must be a whole number from 1 to {MAX_ROUNDS} (3 is the default); got {self.rounds!r}"
            )
        backend_variants(self.backends)
        if self.liger_commit is not None and not re.fullmatch(r"[0-9a-f]{40}", str(self.liger_commit)):
            raise ConfigurationError(
                f"liger_commit must be a full commit id (40 hex digits); got {self.liger_commit!r}"
            )
        if self.liger_commit is not None and not self.liger_wheel:
            raise ConfigurationError("liger_commit names the commit of liger_wheel: give the wheel built at it too")
        consts = self.flce_chunk_mem_consts
        if consts is not None:
            known = tp.chunk_budgets()
            if not consts or any(type(c) is not int or c not in known for c in consts):
                raise ConfigurationError(
                    f"flce_chunk_mem_consts must be chunk budgets the catalogue names (providers liger-chunk-c<N>): "
                    f"some of {sorted(known)}; got {consts!r}"
                )


@dataclass
class SweepResult:
    gpu: str
    liger_version: str
    csv_path: str
    rows: int
    outcomes: list[ScriptOutcome]
    host: dict  # HostCapture.to_dict()
    software: dict  # ExecutionEnvironment.spec.software
    settings: dict | None  # the GPU's nvidia-smi state; labels, never ExecutionEnvironment.spec (not identity)
    logs_by_kernel: dict[str, dict]  # CSV kernel_name -> {"uri": the artifact store's, "digest": "sha256:..."}
    environment: dict  # ScriptEnvironment.to_dict()
    timings: dict  # seconds: total, scripts, overhead (total - scripts) and its parts
    work_dir: str
    started_at: str
    finished_at: str
    sentinel: list[dict] = field(default_factory=list)  # sweep/sentinel.py measurements, start and end
    coverage: dict = field(default_factory=dict)  # sweep/coverage.py SweepCoverage.to_dict()
    labels: dict = field(default_factory=dict)  # ExecutionEnvironment.metadata.labels (host facts, not identity)
    project_versions: dict = field(default_factory=dict)  # project slug -> release tag / commit measured
    rounds: int = 1
    variants: list[dict] = field(default_factory=list)  # [{"name", "env"}] (sweep/backends.py)
    # sweep/rounds.py: the merged rows' samples entries and their runs' labels (throttled)
    merged_samples: dict[str, dict] = field(default_factory=dict)
    row_labels: dict[str, dict] = field(default_factory=dict)
    sentinel_band: dict = field(default_factory=dict)  # sweep/sentinel.py sentinel_band()

    @property
    def failed(self) -> list[ScriptOutcome]:
        return [outcome for outcome in self.outcomes if not outcome.ok]

    def measured_context(self) -> dict:
        """Keyword arguments for liger.normalize.MeasuredContext."""
        return {
            "software": self.software,
            "labels": self.labels,
            "project_versions": self.project_versions,
            "logs_by_kernel": self.logs_by_kernel,
            "raw_samples": self.raw_samples(),
            "sentinel": self.sentinel,
            "row_labels": self.row_labels,
            "run_labels": sentinel.band_labels(self.sentinel_band),
        }

    def raw_samples(self) -> dict[str, dict]:
        """Row key (liger.sample_statistics.row_key) of a merged row -> its samples entry (sweep/rounds.py)."""
        return dict(self.merged_samples)

    def outcome_counts(self) -> dict[str, int]:
        counts = {status.value: 0 for status in ScriptStatus}
        for outcome in self.outcomes:
            counts[outcome.status.value] += 1
        return counts

    def to_dict(self) -> dict:
        data = asdict(self)
        data["outcomes"] = [outcome.to_dict() for outcome in self.outcomes]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> SweepResult:
        return cls(**{**data, "outcomes": [ScriptOutcome.from_dict(o) for o in data["outcomes"]]})

    def summary_lines(self) -> list[str]:
        counts = ", ".join(f"{n} {status}" for status, n in self.outcome_counts().items() if n)
        lines = [
            f"sweep {self.gpu} x liger {self.liger_version}: {self.rows} rows from {len(self.outcomes)} scripts ({counts})",
            f"host: {HostCapture.from_dict(self.host).summary()}",
            f"environment: {'reused' if self.environment.get('reused') else 'built'} in {self.environment.get('seconds', 0):.1f} s",
            f"time: {self.timings['total_s']:.1f} s total, {self.timings['scripts_s']:.1f} s in scripts, "
            f"{self.timings['overhead_s']:.1f} s orchestration overhead",
        ]
        lines += [f"  {outcome.summary()}" for outcome in self.outcomes]
        lines += sentinel.summary_lines(self.sentinel)
        if self.sentinel_band:
            lines.append(sentinel.band_summary(self.sentinel_band))
        if self.coverage:
            lines.append(SweepCoverage.from_dict(self.coverage).summary())
        return lines


# --- errors and the reply -----------------------------------------------------------------------------
def error_dict(error: BaseException) -> dict:
    """An error as the sweep process reports it (the result file of plain mode, the sweep_error message)."""
    return {
        "type": type(error).__name__,
        "message": str(error),
        "retryable": getattr(error, "retryable", True),
    }


@dataclass(frozen=True)
class SweepErrorReport:
    """A SweepError as the sweep process reported it: its class name, message and whether to retry."""

    type: str
    message: str
    retryable: bool


@dataclass(frozen=True)
class SweepReply:
    """What the sweep process sent back, rebuilt on the orchestrator's side: a result with its CSV, or an error."""

    result: SweepResult | None = None
    csv_bytes: bytes | None = None
    error: SweepErrorReport | None = None


def result_message(result: SweepResult, result_path: Path, csv_bytes: bytes) -> dict:
    return {
        "type": "sweep_result",
        "result": result.to_dict(),
        "result_path": str(result_path),
        "csv_text": csv_bytes.decode("utf-8") if len(csv_bytes) <= CSV_INLINE_LIMIT_BYTES else None,
    }


def error_message(error: SweepError) -> dict:
    return {"type": "sweep_error", "error": error_dict(error)}


def reply_from_messages(messages: Iterable[object]) -> SweepReply:
    """The typed reply among a Pipes session's custom messages (the last sweep message wins).

    Raises ValueError naming what arrived when no usable message did."""
    seen = []
    for message in messages:
        kind = message.get("type") if isinstance(message, dict) else None
        seen.append(kind)
        if kind == "sweep_error":
            error = message["error"]
            return SweepReply(
                error=SweepErrorReport(str(error["type"]), str(error["message"]), bool(error["retryable"]))
            )
        if kind == "sweep_result" and message.get("csv_text") is not None:
            return SweepReply(
                result=SweepResult.from_dict(message["result"]), csv_bytes=message["csv_text"].encode("utf-8")
            )
    raise ValueError(f"the sweep process sent no result with its CSV (messages: {seen})")
