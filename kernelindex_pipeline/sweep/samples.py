"""The scripts' raw timing samples: the hook's environment, its spool read back, one content-addressed
artifact per do_bench call, and each CSV row paired with the call that measured it.

The hook (sample_hook/sitecustomize.py, on the scripts' PYTHONPATH) appends one JSON line per
`triton.testing.do_bench` call to its spool. After the script, `collect_samples` writes every call as
`<logs>/samples/<sha256 hex>.json` (compact JSON with sorted keys, floats as Python writes them, so a
timing the hook saw as non-finite is kept too; the name is the digest of the bytes) and pairs the rows
the script added with calls:

* a call made inside `utils.run_benchmarks` carries its row's key cells (kernel, provider, mode, metric,
  x, config): the row with those cells takes the last such call whose returned quantiles are the row's
  y_value_50/20/80 exactly as the CSV writes them;
* a call without a case (a script with its own loop) pairs with the one row whose values it returned,
  never when two rows or two calls share those values.

Rows left without samples are counted by reason (`memory` rows have none by design).

Scripts are hostile, and they run as the same user as the runner:

* **Spool.** Each script's spool is a file without a name (`private_spool`: O_TMPFILE), handed to it
  as an inherited descriptor ($KERNELINDEX_SAMPLES_SPOOL_FD), so no other script can find it, replace
  it by a link to /dev/null or a directory, or read it. It is read back bounded: at most
  SPOOL_READ_LIMIT_BYTES in all, MAX_SPOOL_LINE_BYTES per call and MAX_SPOOL_CALLS calls; the rest is
  counted, never held. Each call's samples are written out and summarised as soon as its line is read,
  so memory holds one call's samples at a time.
* **Artifacts.** `ArtifactDirectory` writes only through a descriptor of the directory it made
  (`openat`-style: O_CREAT|O_EXCL|O_NOFOLLOW for a temporary name, then a rename over the final name,
  which replaces a planted link instead of writing through it) and keeps that directory read-only
  (0500) between its writes, so a script cannot drop files in it without first changing its mode.
  If the path no longer leads to that directory (renamed, replaced by a link), what is there is moved
  aside and a fresh directory made. Same-user scripts can still chmod or rename; `verify_artifact`
  re-checks every artifact against its digest, through no link, before a sweep's result is returned.
* **Samples.** A sample that is not a finite, non-negative number of ms whose ns fit a JSON-safe
  integer (2^53 - 1) gives its run no statistics (`invalid_samples`), named in the script's outcome;
  the artifact stays as evidence and the rest of the sweep is kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlsplit

from kernelindex_pipeline.liger.csv import CASE_COLUMNS
from kernelindex_pipeline.liger.sample_statistics import latency_statistics, row_key_of

HOOK_DIR = Path(__file__).resolve().parent / "sample_hook"
SPOOL_FD_VARIABLE = "KERNELINDEX_SAMPLES_SPOOL_FD"  # sample_hook/sitecustomize.py reads the same names
MAX_BYTES_VARIABLE = "KERNELINDEX_SAMPLES_MAX_BYTES"
SPOOL_LIMIT_BYTES = 256 * 2**20  # the hook stops writing samples past this (a call then keeps its count only)
# Lines past the hook's limit are a few hundred bytes each; anything beyond this is not the hook's.
SPOOL_READ_LIMIT_BYTES = SPOOL_LIMIT_BYTES + 16 * 2**20
MAX_SPOOL_LINE_BYTES = 64 * 2**20  # one call: 10^6 samples are about 20 MB
MAX_SPOOL_CALLS = 100_000  # Liger's scripts make a few hundred calls each
MAX_ARTIFACT_BYTES = MAX_SPOOL_LINE_BYTES + 2**20  # an artifact is one call's line, re-encoded
ARTIFACT_FORMAT = "kernelindex-do-bench-samples/v1"
QUANTILE_CELLS = ("y_value_50", "y_value_20", "y_value_80")


class ArtifactError(OSError):
    """An artifact could not be written or is not what its digest says."""


def private_spool(directory: Path | None = None) -> IO[bytes]:
    """A spool without a name in `directory` (O_TMPFILE where the file system has it; its space is
    freed when it is closed), open for reading and writing; pass `spool.fileno()` to the script
    (`hook_environment`, `pass_fds`)."""
    handle = tempfile.TemporaryFile(dir=directory)
    # O_APPEND: a script's worker processes sharing the descriptor never overwrite each other's lines.
    fcntl.fcntl(handle.fileno(), fcntl.F_SETFL, fcntl.fcntl(handle.fileno(), fcntl.F_GETFL) | os.O_APPEND)
    return handle


def hook_environment(spool_fd: int) -> dict[str, str]:
    """Variables that switch the hook on for one script (HOOK_DIR must be on its PYTHONPATH and the
    descriptor passed to it)."""
    return {SPOOL_FD_VARIABLE: str(spool_fd), MAX_BYTES_VARIABLE: str(SPOOL_LIMIT_BYTES)}


@dataclass
class Call:
    """One do_bench call as the hook saw it, and its artifact once written."""

    call: int
    case: dict[str, str] | None
    returned: Any
    samples: list[float] | None  # None once written out (collect_calls), or when the hook kept none
    record: dict[str, Any]
    artifact: dict[str, str] | None = None  # {"uri": "file://...", "digest": "sha256:..."}
    sample_count: int = 0
    statistics: dict[str, Any] | None = None  # liger.sample_statistics.latency_statistics of the samples
    invalid: str | None = None  # why the samples give no statistics

    def __post_init__(self) -> None:
        self.sample_count = len(self.samples or ())


@dataclass
class ScriptSamples:
    """What one script's calls gave: counts, and the samples entry of every row they measured."""

    calls: int = 0
    calls_without_samples: int = 0
    unreadable_lines: int = 0
    by_row: dict[str, dict[str, Any]] = field(default_factory=dict)  # liger.sample_statistics.row_key -> entry
    rows_without_samples: dict[str, int] = field(default_factory=dict)  # reason -> rows
    problems: list[dict[str, str]] = field(default_factory=list)  # for the script's outcome

    def summary(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "calls_without_samples": self.calls_without_samples,
            "unreadable_lines": self.unreadable_lines,
            "rows_with_samples": len(self.by_row),
            "rows_without_samples": dict(sorted(self.rows_without_samples.items())),
        }


@dataclass
class SpoolRead:
    calls: list[Call]
    unreadable_lines: int = 0
    cut: str | None = None  # why reading stopped before the end


def _call_of(line: bytes) -> Call:
    record = json.loads(line)
    samples = record.get("samples")
    if samples is not None and not (
        isinstance(samples, list) and samples and all(isinstance(v, (int, float)) for v in samples)
    ):
        raise ValueError("samples")
    return Call(int(record["call"]), record.get("case"), record.get("returned"), samples, record)


def _skip_rest_of_line(handle: IO[bytes]) -> int:
    skipped = 0
    while block := handle.readline(1 << 20):
        skipped += len(block)
        if block.endswith(b"\n"):
            break
    return skipped


def iter_spool(handle: IO[bytes], read: SpoolRead) -> Iterator[Call]:
    """The calls of a spool from its start, bounded (see the module docstring); unreadable lines (one
    cut short by a kill, anything that is not the hook's) and the reason of an early stop go to `read`."""
    handle.seek(0)
    consumed = 0
    count = 0
    while line := handle.readline(MAX_SPOOL_LINE_BYTES + 1):
        consumed += len(line)
        if len(line) > MAX_SPOOL_LINE_BYTES:
            consumed += _skip_rest_of_line(handle)
            read.unreadable_lines += 1
        else:
            try:
                call = _call_of(line)
            except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
                read.unreadable_lines += 1
            else:
                count += 1
                yield call
        if count >= MAX_SPOOL_CALLS and handle.read(1):
            read.cut = f"more than {MAX_SPOOL_CALLS} calls; the rest was not read"
            return
        if consumed > SPOOL_READ_LIMIT_BYTES:
            read.cut = f"more than {SPOOL_READ_LIMIT_BYTES} bytes; the rest was not read"
            return


def read_spool(spool: IO[bytes] | Path) -> tuple[list[Call], int]:
    """Every call of a spool with its samples (small spools and tests), and the count of unreadable lines."""
    read = SpoolRead(calls=[])
    if isinstance(spool, Path):
        if not spool.is_file():
            return [], 0
        with spool.open("rb") as handle:
            return list(iter_spool(handle, read)), read.unreadable_lines
    return list(iter_spool(spool, read)), read.unreadable_lines


class ArtifactDirectory:
    """Where a sweep's sample artifacts go (see the module docstring): written through a descriptor of
    a directory this object made, read-only between writes. `close()` leaves it 0755."""

    def __init__(self, path: Path, quarantine: Path | None = None):
        self.path = Path(os.path.abspath(path))
        self.quarantine = quarantine
        self.problems: list[str] = []  # what was found in the way, for the outcome of the script before
        self._fd: int | None = None
        self._open()

    def _open(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(self.path, 0o700)
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        info = os.fstat(fd)
        self._fd, self._identity = fd, (info.st_dev, info.st_ino)
        os.fchmod(fd, 0o500)

    def _in_place(self) -> bool:
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return False
        return stat.S_ISDIR(info.st_mode) and (info.st_dev, info.st_ino) == self._identity

    def _reopen_if_moved(self) -> None:
        if self._in_place():
            return
        self.problems.append(f"the samples directory {self.path} was moved or replaced; a fresh one was made")
        os.close(self._fd)
        if os.path.lexists(self.path):
            target = (self.quarantine or self.path.parent) / f"{self.path.name}.replaced-{secrets.token_hex(4)}"
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(self.path, target)
        self._open()

    def write(self, data: bytes) -> dict[str, str]:
        """`<hex>.json` holding `data`; its {"uri", "digest"}. ArtifactError when something a script
        planted under that name cannot be replaced (a directory)."""
        hexdigest = hashlib.sha256(data).hexdigest()
        name = f"{hexdigest}.json"
        self._reopen_if_moved()
        temporary = f".{name}.{secrets.token_hex(8)}.tmp"
        os.fchmod(self._fd, 0o700)
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444, dir_fd=self._fd)
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            try:  # over whatever has the name (a planted link is replaced, never followed)
                os.replace(temporary, name, src_dir_fd=self._fd, dst_dir_fd=self._fd)
            except OSError as error:
                os.unlink(temporary, dir_fd=self._fd)
                raise ArtifactError(
                    f"{self.path / name}: cannot be written ({error.strerror}); a script put something there"
                ) from None
        finally:
            os.fchmod(self._fd, 0o500)
        return {"uri": (self.path / name).as_uri(), "digest": f"sha256:{hexdigest}"}

    def take_problems(self) -> list[dict[str, str]]:
        """What was found in the way since the last call (the directory is checked now too), as
        outcome problems of the script that just ran."""
        self._reopen_if_moved()
        taken, self.problems = self.problems, []
        return [{"kind": "samples", "message": message} for message in taken]

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.fchmod(self._fd, 0o755)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ArtifactDirectory:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def verify_artifact(artifact: dict[str, str]) -> str | None:
    """None when the file at the artifact's URI (a path of no symbolic links, a regular file) has its
    digest; else what is wrong."""
    path = unquote(urlsplit(artifact["uri"]).path)
    if os.path.realpath(path) != path:
        return f"{path} is reached through a symbolic link"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as error:
        return f"{path} cannot be opened ({error.strerror})"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return f"{path} is not a regular file"
        digest = hashlib.sha256()
        size = 0
        while block := handle.read(1 << 20):
            size += len(block)
            if size > MAX_ARTIFACT_BYTES:
                return f"{path} is larger than any artifact"
            digest.update(block)
    if f"sha256:{digest.hexdigest()}" != artifact["digest"]:
        return f"{path} was changed after it was written (its sha256 is no longer {artifact['digest']})"
    return None


def artifact_bytes(call: Call, script: str) -> bytes:
    content = {
        "format": ARTIFACT_FORMAT,
        "script": script,
        "call": call.call,
        "case": call.case,
        "method": call.record.get("method"),
        "triton": call.record.get("triton"),
        "arguments": call.record.get("arguments"),
        "unit": "ms",
        "returned": call.returned,
        "samples": call.samples,
    }
    return json.dumps(content, sort_keys=True, separators=(",", ":")).encode("utf-8")


def collect_calls(
    spool: IO[bytes], artifacts: ArtifactDirectory, script: str, wanted: Callable[[Call], bool] | None = None
) -> tuple[SpoolRead, list[str]]:
    """Every call of a script's spool with its artifact written and, when `wanted` (default: every
    call), its statistics taken; its samples dropped from memory as soon as that is done. And the
    problems met (as outcome messages)."""
    read = SpoolRead(calls=[])
    problems: list[str] = []
    for call in iter_spool(spool, read):
        if call.samples:
            try:
                call.artifact = artifacts.write(artifact_bytes(call, script))
            except ArtifactError as error:
                problems.append(str(error))
            if wanted is None or wanted(call):
                try:
                    call.statistics = latency_statistics(call.samples)
                except ValueError as error:  # the artifact stays as evidence; the run gets no statistics
                    call.invalid = str(error)
            call.samples = None
            call.record.pop("samples", None)  # the artifact holds them
        read.calls.append(call)
    if read.cut:
        problems.append(f"its samples spool held {read.cut}")
    return read, problems


def read_artifact(artifact: dict[str, str]) -> dict[str, Any]:
    """The JSON content of an artifact this module wrote (artifact_bytes, or any JSON through
    ArtifactDirectory.write), after verify_artifact; ArtifactError saying what is wrong."""
    problem = verify_artifact(artifact)
    if problem is not None:
        raise ArtifactError(problem)
    with open(unquote(urlsplit(artifact["uri"]).path), "rb") as handle:
        return json.loads(handle.read(MAX_ARTIFACT_BYTES))


def json_artifact_bytes(content: dict[str, Any]) -> bytes:
    """Any artifact content as written: compact JSON with sorted keys (as artifact_bytes)."""
    return json.dumps(content, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _returned_cells(returned: Any) -> tuple[str, ...] | None:
    """The call's return value as the CSV writes the three quantile cells (csv writes floats by repr)."""
    if isinstance(returned, list) and len(returned) == 3 and all(isinstance(v, (int, float)) for v in returned):
        return tuple(str(float(v)) for v in returned)
    return None


def _cells(row: dict[str, str]) -> tuple[str, ...]:
    return tuple(row.get(c, "") for c in QUANTILE_CELLS)


def pair_rows(rows: list[dict[str, str]], calls: list[Call]) -> tuple[dict[str, Call], dict[str, int]]:
    """(row key -> its call, reason -> rows without one) for the rows one script added."""
    paired: dict[str, Call] = {}
    missing: dict[str, int] = {}

    def miss(reason: str) -> None:
        missing[reason] = missing.get(reason, 0) + 1

    by_case: dict[tuple, list[Call]] = {}
    loose: dict[tuple[str, ...], list[Call]] = {}
    for call in calls:
        if call.case is not None:
            by_case.setdefault(tuple(call.case.get(c) for c in CASE_COLUMNS), []).append(call)
        else:
            cells = _returned_cells(call.returned)
            if cells is not None:
                loose.setdefault(cells, []).append(call)
    row_cells: dict[tuple[str, ...], int] = {}
    for row in rows:
        row_cells[_cells(row)] = row_cells.get(_cells(row), 0) + 1

    for row in rows:
        if row.get("metric_name") == "memory":
            miss("memory")
            continue
        cells = _cells(row)
        candidates = by_case.get(tuple(row.get(c) for c in CASE_COLUMNS))
        if candidates:
            matching = [c for c in candidates if _returned_cells(c.returned) == cells]
            if not matching:
                miss("values_differ_from_the_call")
                continue
            call = matching[-1]
        else:
            matching = loose.get(cells, [])
            if not matching:
                miss("no_do_bench_call")
                continue
            if len(matching) > 1 or row_cells[cells] > 1:
                miss("ambiguous")
                continue
            call = matching[0]
        if not call.sample_count:
            miss("samples_dropped")
            continue
        paired[row_key_of(row)] = call
    return paired, missing


def collect_samples(
    spool: IO[bytes], artifacts: ArtifactDirectory, script: str, rows: list[dict[str, str]]
) -> ScriptSamples:
    """Artifacts for every call of one script's spool, and the samples entry of each row it measured.
    A row whose call's samples are unusable (non-finite, negative, beyond a JSON-safe ns) is named
    in `problems`: its run is made without statistics, every other row keeps its own."""
    measured = {tuple(row.get(c) for c in CASE_COLUMNS) + _cells(row) for row in rows}
    values = {_cells(row) for row in rows}

    def may_pair(call: Call) -> bool:  # statistics only for calls a row may take (pair_rows decides)
        cells = _returned_cells(call.returned)
        if call.case is not None:
            return tuple(call.case.get(c) for c in CASE_COLUMNS) + (cells or ()) in measured
        return cells in values

    read, problems = collect_calls(spool, artifacts, script, may_pair)
    result = ScriptSamples(calls=len(read.calls), unreadable_lines=read.unreadable_lines)
    result.calls_without_samples = sum(1 for call in read.calls if not call.sample_count)
    paired, result.rows_without_samples = pair_rows(rows, read.calls)
    invalid = []
    for key, call in paired.items():
        if call.statistics is None or call.artifact is None:
            reason = "invalid_samples" if call.invalid else "artifact_unwritable"
            result.rows_without_samples[reason] = result.rows_without_samples.get(reason, 0) + 1
            if call.invalid:
                invalid.append(f"{key} (call {call.call}: {call.invalid})")
            continue
        result.by_row[key] = {"artifact": call.artifact, **call.statistics}
    if invalid:
        problems.append(
            f"{len(invalid)} row(s) have unusable samples and get no statistics: "
            + "; ".join(invalid[:5])
            + ("; ..." if len(invalid) > 5 else "")
        )
    result.problems = [{"kind": "samples", "message": message} for message in problems]
    return result
