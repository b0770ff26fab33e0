"""Run a Liger release's benchmark scripts on this host and collect what they measured.

`run_sweep(SweepRequest(...))`:
1. extract the release (or take an extracted one) and make a fresh work tree with an empty data CSV;
2. find or build the scripts' Python environment (cached per Liger version);
3. probe the host in that environment and refuse any GPU but the partition's (non-retryable);
4. run each selected script in its own process group with TZ=UTC and a timeout, its output in a log;
5. after each script read the shared data CSV back: count the rows it added, and restore earlier
   scripts' rows if it left the file damaged (a kill during its rewrite), so no failure loses them.

Everything returned is plain data (`SweepResult.to_dict()` is JSON).
"""

from __future__ import annotations

import collections
import contextlib
import csv
import hashlib
import io
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psutil

from ..imports.archive import ArchiveError
from ..liger.release import extract_release, fetch_release
from . import contain, sentinel, tp
from .artifact_store import ArtifactStore, publish_evidence
from .backends import Variant, backend_variants, dispatch_environment, read_dispatches
from .coverage import SweepCoverage, expected_cases, read_rows, sweep_coverage
from .environment import (
    ScriptEnvironment,
    default_environment_cache_dir,
    measured_project_versions,
    prepare_environment,
    script_environment,
)
from .gpu_state import read_gpu_state, throttle_reasons
from .host import HostCapture, check_host, probe_host
from .outcomes import ConfigurationError, HostCheckError, ScriptOutcome, ScriptStatus, SweepError, classify
from .rounds import RoundRun, key_text, merge_rounds
from .samples import (
    HOOK_DIR,
    ArtifactDirectory,
    collect_calls,
    collect_samples,
    hook_environment,
    private_spool,
    verify_artifact,
)
from .workdir import DATA_CSV, UPSTREAM_COLUMNS, WorkDir, prepare_workdir, write_empty_data_csv

DEFAULT_SCRIPT_TIMEOUT_S = 1800.0
DEFAULT_ROUNDS = 3
MAX_ROUNDS = 20
# The columns utils.update_benchmark_data_csv uses as a row's identity.
ROW_KEY_COLUMNS = (
    "kernel_name",
    "kernel_provider",
    "kernel_operation_mode",
    "metric_name",
    "x_name",
    "x_value",
    "extra_benchmark_config_str",
    "gpu_name",
)

Progress = Callable[[dict], None]


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


# --- release and script selection ---------------------------------------------------------------------
def resolve_release(release: str | Path | None, liger_version: str, dest: Path) -> Path:
    """The extracted release root (the directory holding benchmark/) for a dir, a tarball, or None (fetch)."""
    if release is None:
        try:
            artifact = fetch_release(liger_version)
        except ArchiveError as error:  # liger.release.ReleaseError is one
            raise SweepError(f"cannot fetch the Liger {liger_version} sdist: {error}") from error
        try:  # the artifact, not its path: extraction re-checks the sha256 the fetch verified
            return Path(extract_release(artifact, dest))
        except ArchiveError as error:
            raise ConfigurationError(str(error)) from error
    path = Path(release)
    if path.is_dir():
        for candidate in [path, *sorted(p for p in path.iterdir() if p.is_dir())]:
            if (candidate / "benchmark" / "scripts").is_dir():
                return candidate
        raise ConfigurationError(f"{path} holds no extracted Liger release (no benchmark/scripts under it)")
    if path.is_file():
        try:
            return Path(extract_release(path, dest))
        except ArchiveError as error:
            raise ConfigurationError(str(error)) from error
    raise ConfigurationError(f"release {path} does not exist; give an sdist tarball or an extracted release directory")


def benchmark_scripts(scripts_dir: Path) -> list[Path]:
    """benchmark_*.py files that run as programs (benchmark_model_configs.py is a helper module)."""
    return [
        path
        for path in sorted(scripts_dir.glob("benchmark_*.py"))
        if re.search(r"""__name__\s*==\s*["']__main__["']""", path.read_text(encoding="utf-8", errors="replace"))
    ]


def scripts_for_kernel(kernel: str, scripts: list[Path]) -> list[Path]:
    """The script(s) that write rows of CSV kernel name `kernel`.

    In order: scripts that assign that literal kernel name (`kernel_name="tiled_swiglu"` or
    `"kernel_name": "fused_moe"`); scripts that build it from a prefix (`f"fused_linear_grpo_loss_{...}"`);
    `benchmark_<kernel>.py`; scripts that mention the quoted name anywhere;
    `benchmark_<kernel without fused_linear_>.py` (older releases named e.g. cpo_loss fused_linear_cpo_loss).
    """
    sources = {path: path.read_text(encoding="utf-8", errors="replace") for path in scripts}
    literal = re.compile(r"""kernel_name["']?\s*[:=]\s*["']""" + re.escape(kernel) + r"""["']""")
    found = [path for path, text in sources.items() if literal.search(text)]
    if found:
        return found
    prefixes = re.compile(r"""kernel_name["']?\s*[:=]\s*f["']([A-Za-z0-9_]+)\{""")
    found = [path for path, text in sources.items() if any(kernel.startswith(p) for p in prefixes.findall(text))]
    if found:
        return found
    by_name = {path.name: path for path in scripts}
    if f"benchmark_{kernel}.py" in by_name:
        return [by_name[f"benchmark_{kernel}.py"]]
    quoted = re.compile(r"""["']""" + re.escape(kernel) + r"""["']""")
    found = [path for path, text in sources.items() if quoted.search(text)]
    if found:
        return found
    shorter = f"benchmark_{kernel.removeprefix('fused_linear_')}.py"
    return [by_name[shorter]] if shorter in by_name else []


def select_scripts(
    scripts_dir: Path, kernels: Iterable[str] | None = None, scripts: Iterable[str] | None = None
) -> list[Path]:
    """The scripts to run, in file-name order, without repeats."""
    available = benchmark_scripts(scripts_dir)
    if not kernels and not scripts:
        return available
    chosen: set[Path] = set()
    by_name = {path.name: path for path in available}
    for name in scripts or ():
        if name not in by_name:
            raise ConfigurationError(f"no benchmark script {name!r} in this release; it has: {', '.join(by_name)}")
        chosen.add(by_name[name])
    for kernel in kernels or ():
        found = scripts_for_kernel(kernel, available)
        if not found:
            raise ConfigurationError(
                f"no benchmark script of this release writes kernel {kernel!r}; name a script instead, one of: {', '.join(by_name)}"
            )
        chosen.update(found)
    return sorted(chosen)


# --- the data CSV -------------------------------------------------------------------------------------
# A sweep's data CSV holds a few thousand rows (a few MB); a script that makes it far larger is
# not measuring, and the runner never reads more than this into memory.
DATA_CSV_MAX_BYTES = 256 * 2**20


@dataclass
class CsvState:
    fieldnames: list[str]
    rows: dict[tuple, dict]  # row key -> row, in file order
    damaged: bool  # unreadable, or rows with missing/extra fields (a write cut short)
    problem: str | None = None  # what is wrong with it, as "the data CSV <problem>"


def _damaged(problem: str) -> CsvState:
    return CsvState(fieldnames=list(UPSTREAM_COLUMNS), rows={}, damaged=True, problem=problem)


def _read_regular_file(path: Path, limit: int) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes (never following a
    symbolic link, never blocking on a FIFO); else OSError saying what it is."""
    kinds = {
        stat.S_IFDIR: "a directory",
        stat.S_IFLNK: "a symbolic link",
        stat.S_IFIFO: "a FIFO",
        stat.S_IFSOCK: "a socket",
    }
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise OSError("is missing") from None
    if not stat.S_ISREG(mode):
        raise OSError(f"was replaced by {kinds.get(stat.S_IFMT(mode), 'a device')}")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped between lstat and open
            raise OSError("was replaced by something other than a file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(f"is larger than {limit} bytes")
    return data


def read_data_csv(path: Path) -> CsvState:
    """The data CSV's complete rows. A file the scripts' csv writer finished ends in a newline and has
    every upstream column; a rewrite cut short (a kill) shows as a missing newline, a short header or
    short rows, and is `damaged`: only its complete rows count. Anything but a regular file of at
    most DATA_CSV_MAX_BYTES (a directory, a link, a FIFO) is `damaged` with no rows."""
    try:
        text = _read_regular_file(path, DATA_CSV_MAX_BYTES).decode("utf-8")
    except OSError as error:
        return _damaged(error.strerror or str(error))
    except UnicodeDecodeError as error:
        return _damaged(f"is not UTF-8 (byte {error.start})")
    problem = None
    if text and not text.endswith("\n"):
        problem = "was cut short (no newline at its end)"  # its last cell may look complete but is not
        text = text[: text.rfind("\n") + 1]
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        fieldnames = list(reader.fieldnames or [])
        if not set(UPSTREAM_COLUMNS) <= set(fieldnames):
            return _damaged("has lost its header")
        rows = {}
        for row in reader:
            if None in row or any(value is None for value in row.values()):
                problem = f"has a row with missing or extra cells (line {reader.line_num})"  # not a measurement
                continue
            rows[tuple(row[c] for c in ROW_KEY_COLUMNS)] = row
    except csv.Error as error:
        return _damaged(f"is not valid CSV ({error})")
    return CsvState(fieldnames=fieldnames, rows=rows, damaged=problem is not None, problem=problem)


def _move_aside(path: Path, quarantine: Path) -> str | None:
    """Clear `path` for a file of ours: a directory a script put there is moved into `quarantine`
    (cheap, whatever it holds, and kept for inspection), anything else is unlinked. Returns a note."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(mode):
        quarantine.mkdir(parents=True, exist_ok=True)
        target = quarantine / f"{path.name}.{len(list(quarantine.iterdir())) + 1}"
        os.rename(path, target)
        return f"moved the directory at {path.name} to {target}"
    os.unlink(path)
    return None


def write_data_csv(path: Path, fieldnames: list[str], rows: Iterable[dict], quarantine: Path) -> list[str]:
    """Write the data CSV atomically (through `<name>.tmp`), whatever a script left at either name.
    Returns notes on what was moved aside (into `quarantine`)."""
    temporary = path.with_name(path.name + ".tmp")
    notes = [note for note in [_move_aside(temporary, quarantine)] if note]
    with temporary.open("x", newline="") as handle:  # "x": a fresh file, never through a link
        writer = csv.DictWriter(handle, fieldnames=fieldnames)  # the same dialect the scripts write
        writer.writeheader()
        writer.writerows(rows)
    if os.path.isdir(path) and not os.path.islink(path):
        notes.append(_move_aside(path, quarantine))
    os.replace(temporary, path)
    return notes


def row_digest(row: dict) -> str:
    return hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()


# --- running the scripts --------------------------------------------------------------------------------
def scripts_environment(request: SweepRequest, environment_python: Path | None = None) -> dict[str, str]:
    """The scripts' environment variables: the allowlisted part of ours (environment.SCRIPT_ENV_ALLOWLIST)
    plus the request's, TZ=UTC, unbuffered output. The sample hook comes first on PYTHONPATH: its
    sitecustomize wraps do_bench in every script (inert without its spool variable, which only
    run_scripts sets)."""
    return script_environment(
        os.environ,
        extra_pythonpath=[HOOK_DIR, *request.extra_pythonpath],
        extra_env=request.extra_env,
        python=environment_python,
    )


def file_digest(path: Path) -> str:
    with path.open("rb") as handle:
        return "sha256:" + hashlib.file_digest(handle, "sha256").hexdigest()


def read_log_tail(path: Path, size: int = contain.LOG_TAIL_BYTES) -> str:
    """The last `size` bytes of a log, decoded: what a script is classified by (bounded memory)."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(handle.seek(0, os.SEEK_END) - size, 0))
            return handle.read(size).decode("utf-8", errors="replace")
    except OSError:
        return ""


@dataclass
class ScriptRun:
    exit_code: int | None  # None when it was stopped at its timeout
    timed_out: bool
    seconds: float
    status: dict  # contain.read_status(), or {"launcher_error": ..., "leftover_processes": ...} when there was none


def _stop_launcher(launcher: subprocess.Popen) -> None:
    """SIGTERM the launcher (it stops the script, grace period included, and kills its descendants);
    SIGKILL it if it does not finish (the script then dies by its parent-death signal)."""
    try:
        launcher.send_signal(signal.SIGTERM)
        launcher.wait(timeout=contain.KILL_GRACE_S + 30)
    except subprocess.TimeoutExpired:
        launcher.kill()
        launcher.wait()


def run_script(
    script: Path,
    python: Path,
    env: dict[str, str],
    log_path: Path,
    timeout_s: float,
    args: list[str],
    control_dir: Path,
    pass_fds: tuple[int, ...] = (),
    launcher_args: list[str] | None = None,
) -> ScriptRun:
    """Run one script through the launcher (contain.py): contained, its log capped.

    While it runs this process is a child subreaper too: if the script kills its own launcher (same
    user), what it forked is re-parented here instead of to init, and is killed when the launcher
    is found dead (children of this process that appeared meanwhile; a caller that starts processes
    from other threads at the same time would lose those too)."""
    control_dir.mkdir(parents=True, exist_ok=True)
    status_path = control_dir / f"{script.stem}.status.json"
    started = time.monotonic()
    existing = frozenset(child.pid for child in psutil.Process().children())
    timed_out, orphans = False, []
    with contain.subreaper(), (control_dir / f"{script.stem}.launcher.log").open("wb") as launcher_log:
        launcher = contain.launch(
            [str(python), *(launcher_args or []), script.name, *args],
            cwd=script.parent,
            env=env,
            log_path=log_path,
            status_path=status_path,
            stderr=launcher_log,
            pass_fds=pass_fds,
        )
        try:
            launcher.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop_launcher(launcher)
            timed_out = True
        except BaseException:  # cancelled (SIGTERM, Ctrl-C): leave nothing running
            _stop_launcher(launcher)
            raise
        status = contain.read_status(status_path)
        if status is None:
            orphans = contain.kill_descendants(keep=existing)
    if status is None:
        status = {
            "launcher_error": f"it ended with exit code {launcher.returncode} and wrote no status",
            "leftover_processes": orphans,
        }
    exit_code = None if timed_out or "launcher_error" in status else status.get("exit_code")
    return ScriptRun(exit_code, timed_out, time.monotonic() - started, status)


def _run_problems(run: ScriptRun) -> list[dict]:
    """What the launcher had to do beyond running the script, as outcome problems."""
    problems = []
    if "launcher_error" in run.status:
        problems.append(
            {
                "kind": "launcher_failed",
                "message": f"the script's launcher failed ({run.status['launcher_error']}); its exit code is unknown",
            }
        )
    leftovers = run.status.get("leftover_processes") or []
    if leftovers:
        listed = ", ".join(f"{p['pid']} {p['name']}" for p in leftovers[:5]) + (", ..." if len(leftovers) > 5 else "")
        problems.append(
            {
                "kind": "leftover_processes",
                "message": f"{len(leftovers)} process(es) it started were still running when it ended and were killed ({listed})",
            }
        )
    if run.status.get("omitted_bytes"):
        problems.append(
            {
                "kind": "log_truncated",
                "message": f"it printed {run.status['output_bytes']} bytes; the log keeps the first {contain.LOG_HEAD_BYTES} "
                f"and the last {contain.LOG_TAIL_BYTES} ({run.status['omitted_bytes']} omitted)",
            }
        )
    return problems


def control_dir(workdir: WorkDir) -> Path:
    """The runner's own files of a sweep (launcher status files, quarantined CSV debris): not evidence."""
    return workdir.root.parent / "runner"


def run_scripts(
    workdir: WorkDir,
    scripts: list[Path],
    python: Path,
    env: dict[str, str],
    *,
    artifacts: ArtifactDirectory,
    timeout_s: float,
    args: list[str] | None = None,
    progress: Progress | None = None,
    round_number: int = 1,
    variant: Variant | None = None,
    gpus: int | None = None,
    gpu_identity: tuple[str | None, str | None] = (None, None),
    liger_version: str = "",
) -> list[ScriptOutcome]:
    """Run `scripts` one after another against the work tree's data CSV; one outcome per script.

    After each script the CSV is read back and checked against what the earlier scripts left: each
    row key belongs to the script that first wrote it, with that row's content digest. Rows of
    earlier scripts that went missing or changed, and a CSV a script damaged or replaced (by a
    directory, say), are restored from the runner's copy and named in that script's outcome."""
    outcomes: list[ScriptOutcome] = []
    control = control_dir(workdir)
    state = read_data_csv(workdir.data_csv)
    owners: dict[tuple, tuple[str, str]] = {
        key: ("(the work tree)", row_digest(row)) for key, row in state.rows.items()
    }
    variant = variant or Variant("resolved", {})
    for index, script in enumerate(scripts, start=1):
        log_path = workdir.logs_dir / f"{script.stem}.log"
        plan = tp.plan_of(script)
        if plan is not None and (gpus or 0) < plan.gpus:
            outcome = tp.skipped_outcome(script, plan, gpus, round_number, variant.name)
            outcomes.append(outcome)
            if progress is not None:
                progress({**outcome.to_dict(), "index": index, "total": len(scripts), "rows_so_far": len(state.rows)})
            continue
        control.mkdir(parents=True, exist_ok=True)
        spool = private_spool(control)  # this script's alone (no name): no other can reach it
        with private_spool(control) as dispatch_spool:
            script_env = {
                **env,
                **variant.env,
                **hook_environment(spool.fileno()),
                **dispatch_environment(dispatch_spool.fileno()),
            }
            fds = (spool.fileno(), dispatch_spool.fileno())
            gpu_before = read_gpu_state(env, *gpu_identity)
            if plan is not None:
                run, tp_rows = tp.run_tp(
                    script, plan, python, script_env, log_path, timeout_s, control, run_script, fds
                )
            else:
                run, tp_rows = (
                    run_script(
                        script, python, script_env, log_path, timeout_s, list(args or []), control, pass_fds=fds
                    ),
                    None,
                )
            gpu_after = read_gpu_state(env, *gpu_identity)
            dispatches = read_dispatches(dispatch_spool)
        status, error_line = classify(run.exit_code, run.timed_out, read_log_tail(log_path))
        problems = _run_problems(run)
        for failure in dispatches.errors[:3]:
            problems.append(
                {"kind": "dispatch_failed", "message": f"Liger's dispatcher raised for op {failure['op']!r}: {failure['error']} "
                 "(pin another implementation with the sweep's backends setting, or install its extra)"}
            )  # fmt: skip
        if tp_rows is not None:
            problems += tp.append_rows(workdir.data_csv, tp_rows, gpu_identity[0] or "", liger_version)

        after = read_data_csv(workdir.data_csv)
        new_keys = [key for key in after.rows if key not in owners]
        lost = [key for key in state.rows if key not in after.rows]
        changed = [key for key in state.rows if key in after.rows and row_digest(after.rows[key]) != owners[key][1]]
        repaired = after.damaged or bool(lost) or bool(changed)
        if repaired:
            # Earlier rows as they were, then whatever complete rows this script managed to write.
            merged = {**state.rows, **{key: after.rows[key] for key in new_keys}}
            notes = write_data_csv(
                workdir.data_csv,
                state.fieldnames if state.rows else after.fieldnames,
                merged.values(),
                control / "quarantine",
            )
            if after.problem:
                problems.append(
                    {"kind": "data_csv", "message": f"the data CSV {after.problem}; the runner rewrote it with the earlier rows kept"
                     + "".join(f" ({note})" for note in notes)}
                )  # fmt: skip
            # Rows missing from a damaged file are that damage (said above); from a good one, a removal.
            for kind, keys, what in (
                ("rows_lost", [] if after.damaged else lost, "removed"),
                ("rows_rewritten", changed, "changed"),
            ):
                if keys:
                    by_owner = collections.Counter(owners[key][0] for key in keys)
                    problems.append(
                        {"kind": kind, "message": f"it {what} {len(keys)} row(s) that earlier scripts wrote ("
                         + ", ".join(f"{name}: {n}" for name, n in sorted(by_owner.items())) + "); the runner restored them"}
                    )  # fmt: skip
            after = read_data_csv(workdir.data_csv)
        owners.update((key, (script.name, row_digest(after.rows[key]))) for key in new_keys if key in after.rows)
        kernels = sorted({after.rows[key]["kernel_name"] for key in new_keys if key in after.rows})
        with spool:
            samples = collect_samples(
                spool, artifacts, script.name, [after.rows[k] for k in new_keys if k in after.rows]
            )
        problems += samples.problems + artifacts.take_problems()
        outcome = ScriptOutcome(
            script=script.name,
            status=status,
            exit_code=run.exit_code,
            error_line=error_line,
            rows=len(new_keys),
            kernels=kernels,
            seconds=round(run.seconds, 3),
            log_path=str(log_path.resolve()),
            log_digest=file_digest(log_path),
            csv_repaired=repaired,
            samples=samples.summary(),
            raw_samples=samples.by_row,
            problems=problems,
            round=round_number,
            variant=variant.name,
            backends=dispatches.summary()
            if (dispatches.by_case or dispatches.errors or dispatches.outside_cases)
            else {},
            backends_by_row={
                key_text(after.rows[key]): backend
                for key in new_keys
                if key in after.rows and (backend := dispatches.backend_of(after.rows[key]))
            },
            gpu_state={
                "before": gpu_before,
                "after": gpu_after,
                "throttle_reasons": throttle_reasons(gpu_before, gpu_after),
            },
        )
        outcomes.append(outcome)
        state = after
        if progress is not None:
            progress({**outcome.to_dict(), "index": index, "total": len(scripts), "rows_so_far": len(state.rows)})
    return outcomes


def round_label(round_number: int, variant: Variant, variants: int) -> str:
    """The folder of one round (and variant) under logs/: round-2, round-2-swiglu-nvidia-cutedsl."""
    suffix = "" if variants == 1 else "-" + re.sub(r"[^a-z0-9_]+", "-", variant.name.lower()).strip("-")
    return f"round-{round_number}{suffix}"


def run_rounds(
    workdir: WorkDir,
    scripts: list[Path],
    python: Path,
    env: dict[str, str],
    request: SweepRequest,
    variants: list[Variant],
    progress: Progress | None,
    *,
    artifacts: ArtifactDirectory,
    gpus: int | None,
    gpu_identity: tuple[str | None, str | None],
) -> list[RoundRun]:
    """Every script `request.rounds` times, interleaved: round 1 runs each variant's scripts in order,
    then round 2, ... Each round and variant starts from an empty data CSV, kept afterwards in its log
    folder (a script that fails or hangs in one round loses nothing of the others)."""
    runs: list[RoundRun] = []
    for round_number in range(1, request.rounds + 1):
        for variant in variants:
            logs = workdir.logs_dir / round_label(round_number, variant, len(variants))
            logs.mkdir(parents=True, exist_ok=True)
            round_dir = WorkDir(
                root=workdir.root, scripts_dir=workdir.scripts_dir, data_csv=workdir.data_csv, logs_dir=logs
            )
            write_empty_data_csv(workdir.data_csv)
            outcomes = run_scripts(
                round_dir,
                scripts,
                python,
                env,
                artifacts=artifacts,
                timeout_s=request.script_timeout_s,
                args=request.script_args,
                progress=progress,
                round_number=round_number,
                variant=variant,
                gpus=gpus,
                gpu_identity=gpu_identity,
                liger_version=request.liger_version,
            )
            rows = [
                {c: row.get(c, "") for c in UPSTREAM_COLUMNS} for row in read_data_csv(workdir.data_csv).rows.values()
            ]
            write_data_csv(logs / DATA_CSV.name, list(UPSTREAM_COLUMNS), rows, control_dir(workdir) / "quarantine")
            script_of_kernel = {kernel: o.script for o in outcomes for kernel in o.kernels}
            backends = {key: backend for o in outcomes for key, backend in o.backends_by_row.items()}
            runs.append(
                RoundRun(
                    round_number, variant.name, outcomes, {key_text(r): r for r in rows}, backends, script_of_kernel
                )
            )
    return runs


def logs_by_kernel(outcomes: list[ScriptOutcome]) -> dict[str, dict]:
    """CSV kernel name -> the log of the script that measured it, as BenchmarkRun evidence."""
    logs: dict[str, dict] = {}
    for outcome in outcomes:
        for kernel in outcome.kernels:
            logs.setdefault(kernel, {"uri": Path(outcome.log_path).as_uri(), "digest": outcome.log_digest})
    return logs


def run_sentinel(
    position: str,
    workdir: WorkDir,
    python: Path,
    env: dict[str, str],
    gpu_name: str | None,
    liger_version: str,
    artifacts: ArtifactDirectory,
) -> list[dict]:
    """Time the sentinel's reference operations in the scripts' interpreter (see sweep/sentinel.py)."""
    logs = workdir.logs_dir
    out = sentinel.result_path(logs, position)
    log_path = logs / f"sentinel-{position}.log"
    control_dir(workdir).mkdir(parents=True, exist_ok=True)
    with private_spool(control_dir(workdir)) as spool:  # in the work dir: a pod's /tmp may be small
        run = run_script(
            sentinel.PROGRAM,
            python,
            {**env, **hook_environment(spool.fileno())},
            log_path,
            sentinel.TIMEOUT_S,
            [json.dumps(sentinel.PLAN), str(out.resolve())],
            control_dir(workdir),
            pass_fds=(spool.fileno(),),
        )
        read, _ = collect_calls(spool, artifacts, sentinel.PROGRAM.name)
    status, error = classify(run.exit_code, run.timed_out, read_log_tail(log_path))
    results = json.loads(out.read_text()) if status is ScriptStatus.OK and out.is_file() else {}
    error = None if status is ScriptStatus.OK else f"{status.value}: {error}"
    measurements = sentinel.collect_sentinel(position, read.calls, results, gpu_name, error)
    log = {"uri": log_path.resolve().as_uri(), "digest": file_digest(log_path)}
    return [{**m, "liger_version": liger_version, "log": log} for m in measurements]


def recheck_artifacts(outcomes: list[ScriptOutcome], measurements: list[dict]) -> None:
    """Every sample artifact against its digest, after the last script ended and before the result
    leaves the sweep: a run whose artifact was changed, removed or replaced by a link loses its raw
    samples (named in its script's outcome); a sentinel measurement becomes `failed`."""
    for outcome in outcomes:
        changed = {}
        for key, entry in list(outcome.raw_samples.items()):
            problem = verify_artifact(entry["artifact"])
            if problem is not None:
                changed[key] = problem
                del outcome.raw_samples[key]
        if changed:
            outcome.samples["rows_with_samples"] = len(outcome.raw_samples)
            without = outcome.samples.setdefault("rows_without_samples", {})
            without["artifact_changed"] = without.get("artifact_changed", 0) + len(changed)
            problems = sorted(set(changed.values()))
            outcome.problems.append(
                {
                    "kind": "samples",
                    "message": f"{len(changed)} row(s) lost their raw samples: "
                    + "; ".join(problems[:3])
                    + ("; ..." if len(problems) > 3 else ""),
                }
            )
    for measurement in measurements:
        if measurement.get("status") == "ok" and (problem := verify_artifact(measurement["artifact"])) is not None:
            for name in ("returned", "observed_at", "artifact", "samples", "latencyNs"):
                measurement.pop(name, None)
            measurement.update(status="failed", error=f"its samples artifact {problem}")


def coverage_of(
    request: SweepRequest, release_root: Path, workdir: WorkDir, outcomes: list[ScriptOutcome]
) -> SweepCoverage:
    """The sweep's coverage against the previous sweep's CSV (request.expected_csv) or the release's history."""
    if request.expected_csv:
        rows, expectation, source = read_rows(Path(request.expected_csv)), "previous_sweep", request.expected_csv
    else:
        source = f"{release_root.name}/{DATA_CSV}"
        rows, expectation = read_rows(release_root / DATA_CSV), "release_history"
    expected = expected_cases(rows)
    available = benchmark_scripts(workdir.scripts_dir)
    script_of_kernel = {}
    for kernel in expected:
        found = scripts_for_kernel(kernel, available)
        if found:
            script_of_kernel[kernel] = found[0].name
    return sweep_coverage(
        read_data_csv(workdir.data_csv).rows.values(),
        outcomes,
        expected,
        script_of_kernel,
        expectation=expectation if rows else "none",
        source=source,
    )


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def fresh_work_dir(requested: str | None) -> Path:
    """`requested` if it is new or empty, else the first free `<requested>-2`, `-3`, ... (a retried step
    reuses its run's name: the earlier attempt's logs stay where they are); None: a temporary directory."""
    if not requested:
        return Path(tempfile.mkdtemp(prefix="kernelindex-sweep-"))
    base = Path(requested)
    candidate, attempt = base, 1
    while candidate.exists() and any(candidate.iterdir()):
        attempt += 1
        candidate = base.with_name(f"{base.name}-{attempt}")
    candidate.mkdir(parents=True, exist_ok=True)
    return candidate


@contextlib.contextmanager
def _sigterm_tears_down() -> Iterator[None]:
    """While a sweep runs in the main thread with SIGTERM's default action, SIGTERM raises SystemExit
    (143), so the running script and its launcher are stopped on the way out (a handler the caller set,
    e.g. pipes_entry's, stays as it is). If the process dies without unwinding, the launcher's
    parent-death signal does the same teardown."""
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def exit_on_sigterm(signum, frame):
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, exit_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_sweep(request: SweepRequest, progress: Progress | None = None) -> SweepResult:
    """Run one partition's sweep on this host. Raises HostCheckError (never retry) before running any script
    when the host lacks the partition's GPU or cannot contain the scripts (not Linux); script failures are
    outcomes, not exceptions."""
    try:
        contain.check_available()
    except contain.ContainmentUnavailable as error:
        raise HostCheckError(f"this host cannot contain benchmark scripts: {error}") from None
    with _sigterm_tears_down():
        return _run_sweep(request, progress)


def _run_sweep(request: SweepRequest, progress: Progress | None) -> SweepResult:
    started_at, started = _utc_now(), time.monotonic()
    timings: dict[str, float] = {}
    request.check()

    work_dir = fresh_work_dir(request.work_dir)
    mark = time.monotonic()
    release_root = resolve_release(request.release, request.liger_version, work_dir / "release")
    workdir = prepare_workdir(release_root, work_dir)
    scripts = select_scripts(workdir.scripts_dir, request.kernels, request.scripts)
    timings["workdir_s"] = time.monotonic() - mark

    base_env = scripts_environment(request)

    def refuse_wrong_host_before_building() -> None:
        # Building an environment takes minutes: check the GPU with the base interpreter first.
        check_host(probe_host(request.base_python or sys.executable, base_env), request.gpu)

    mark = time.monotonic()
    environment: ScriptEnvironment = prepare_environment(
        request.liger_version,
        scripts_dir=workdir.scripts_dir,
        cache_dir=request.env_cache_dir,
        base_python=request.base_python,
        wheel_dir=request.wheel_dir,
        before_build=refuse_wrong_host_before_building,
        liger_extras=request.liger_extras,
    )
    timings["environment_s"] = time.monotonic() - mark

    mark = time.monotonic()
    env = scripts_environment(request, environment.python)
    capture = probe_host(environment.python, env)
    (workdir.logs_dir / "host.json").write_text(json.dumps(capture.to_dict(), indent=2, sort_keys=True))
    if capture.raw_nvidia_smi_xml:
        (workdir.logs_dir / "nvidia-smi.xml").write_text(capture.raw_nvidia_smi_xml)
    check_host(capture, request.gpu)
    timings["probe_s"] = time.monotonic() - mark

    mark = time.monotonic()
    with ArtifactDirectory(workdir.logs_dir / "samples", control_dir(workdir) / "quarantine") as artifacts:
        measurements = run_sentinel(
            "start", workdir, environment.python, env, capture.device_name, request.liger_version, artifacts
        )
        timings["sentinel_s"] = time.monotonic() - mark
        variants = backend_variants(request.backends)
        if request.flce_chunk_mem_consts:
            env = {**env, tp.FLCE_CHUNK_VARIABLE: ",".join(str(c) for c in request.flce_chunk_mem_consts)}
        round_runs = run_rounds(
            workdir,
            scripts,
            environment.python,
            env,
            request,
            variants,
            progress,
            artifacts=artifacts,
            gpus=capture.device_count,
            gpu_identity=(capture.device_name, capture.device_uuid),
        )
        outcomes = [outcome for run in round_runs for outcome in run.outcomes]
        mark = time.monotonic()
        measurements += run_sentinel(
            "end", workdir, environment.python, env, capture.device_name, request.liger_version, artifacts
        )
        timings["sentinel_s"] += time.monotonic() - mark
    recheck_artifacts(outcomes, measurements)
    with ArtifactDirectory(workdir.logs_dir / "samples", control_dir(workdir) / "quarantine") as artifacts:
        merged = merge_rounds(round_runs, artifacts)
    write_data_csv(workdir.data_csv, list(UPSTREAM_COLUMNS), merged.rows, control_dir(workdir) / "quarantine")
    store = ArtifactStore.from_environment(request.artifact_store)
    # This GPU's earlier sweeps (a file in the sweep cache) and the request's own: the band; then this sweep joins them.
    history_file = sentinel.history_path(
        request.env_cache_dir or default_environment_cache_dir(), capture.device_uuid, capture.device_name
    )
    band = sentinel.sentinel_band([*request.sentinel_history, *sentinel.read_history(history_file)], measurements)
    sentinel.append_history(history_file, measurements, request.liger_version)

    total = time.monotonic() - started
    scripts_s = sum(outcome.seconds for outcome in outcomes)
    timings.update(total_s=total, scripts_s=scripts_s, overhead_s=total - scripts_s)
    return publish_evidence(
        SweepResult(
            gpu=request.gpu,
            liger_version=request.liger_version,
            csv_path=str(workdir.data_csv.resolve()),
            rows=len(read_data_csv(workdir.data_csv).rows),
            outcomes=outcomes,
            host=capture.to_dict(),
            software=capture.software(),
            settings=capture.settings(),
            labels=capture.labels(socket.gethostname()),
            project_versions=measured_project_versions(request.liger_version, capture),
            logs_by_kernel=logs_by_kernel(outcomes),
            environment=environment.to_dict(),
            timings={k: round(v, 3) for k, v in timings.items()},
            work_dir=str(work_dir.resolve()),
            started_at=started_at,
            finished_at=_utc_now(),
            sentinel=measurements,
            coverage=coverage_of(request, release_root, workdir, outcomes).to_dict(),
            rounds=request.rounds,
            variants=[{"name": v.name, "env": v.env} for v in variants],
            merged_samples=merged.raw_samples,
            row_labels=merged.row_labels,
            sentinel_band=band,
        ),
        store,
    )
