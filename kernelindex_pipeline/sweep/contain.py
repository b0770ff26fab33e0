"""The launcher between the sweep process and one benchmark script: containment and a bounded log.

    python -I contain.py --status S.json --log S.log [--head N] [--tail N] [--grace S] [--pass-fd FD] -- python script.py ARGS

The runner starts it for every script (`launch`); it
- makes itself a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the script forks, even a daemon
  that double-forks and calls setsid(), is re-parented to this process, never to init. When the script
  has exited, every process still below the launcher is SIGKILLed and reaped, so nothing of a script
  outlives its turn or writes rows later that the runner would credit to the next script;
- dies with the sweep: the runner gives it PR_SET_PDEATHSIG=SIGTERM (so a SIGKILLed sweep process,
  an OOM kill, still ends in the teardown below) and the script PR_SET_PDEATHSIG=SIGKILL;
- on SIGTERM/SIGINT/SIGHUP (the runner's timeout or cancel, the parent's death) SIGTERMs the script's
  process group, SIGKILLs it after `--grace` seconds, then kills and reaps every descendant;
- copies the script's stdout+stderr into `--log`, keeping the first `--head` bytes and the last
  `--tail` bytes with one marker line between them; memory holds at most the tail;
- hands the script the descriptors named by `--pass-fd` (its samples spool), and no other;
- writes `--status` last (`read_status` parses it): the exit code (negative: the signal that ended
  it), the signal that stopped it if one did, the leftover processes it killed, bytes of output seen
  and omitted, its own peak RSS.

It imports only the standard library and psutil and runs with `-I`, so the scripts' PYTHONPATH (a
stand-in torch, the release's tree) cannot change it. Linux only: prctl is reached through ctypes
(the standard library has no binding; python-prctl needs libcap headers to build).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import ctypes
import json
import os
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psutil

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
LOG_HEAD_BYTES = 4 * 2**20
LOG_TAIL_BYTES = 4 * 2**20
KILL_GRACE_S = 5.0
EXIT_LAUNCHER_FAILED = 121  # the launcher itself failed (its status file says why, if it got that far)
_OMITTED = "\n[kernelindex: {omitted} bytes of output omitted here; the log keeps the first {head} and the last {tail} bytes]\n"
_libc = None


class ContainmentUnavailable(OSError):
    """This platform has no prctl child subreaper / parent-death signal (not Linux)."""


def prctl(option: int, value: int) -> None:
    global _libc
    if not sys.platform.startswith("linux"):
        raise ContainmentUnavailable(f"benchmark scripts are contained with Linux prctl(); this is {sys.platform}")
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        errno = ctypes.get_errno()
        raise ContainmentUnavailable(errno, f"prctl({option}, {value}) failed: {os.strerror(errno)}")


def check_available() -> None:
    """Raise ContainmentUnavailable unless this host can contain scripts (prctl works here)."""
    prctl(PR_SET_PDEATHSIG, 0)  # a no-op setting that fails exactly where prctl is missing


def die_with_parent(signum: int):
    """A preexec_fn: deliver `signum` to the child when the thread that started it dies."""
    return lambda: prctl(PR_SET_PDEATHSIG, signum)


class CappedLog:
    """Write a stream to a file, keeping its first `head` and last `tail` bytes."""

    def __init__(self, handle, head: int, tail: int):
        self.handle, self.head, self.tail = handle, head, tail
        self.seen = 0
        self._tail: collections.deque[bytes] = collections.deque()
        self._tail_size = 0

    def write(self, data: bytes) -> None:
        room = max(self.head - self.seen, 0)
        self.seen += len(data)
        if room:
            self.handle.write(data[:room])
            self.handle.flush()  # the head is visible while the script runs
            data = data[room:]
        if data:
            self._tail.append(data)
            self._tail_size += len(data)
            while self._tail and self._tail_size - len(self._tail[0]) >= self.tail:
                self._tail_size -= len(self._tail.popleft())

    @property
    def omitted(self) -> int:
        return self.seen - min(self.seen, self.head) - min(self._tail_size, self.tail)

    def finish(self) -> None:
        tail = b"".join(self._tail)[-self.tail :] if self.tail else b""
        if self.omitted:
            self.handle.write(_OMITTED.format(omitted=self.omitted, head=self.head, tail=self.tail).encode())
        self.handle.write(tail)
        self.handle.flush()

    def pump(self, stream) -> None:
        for chunk in iter(lambda: stream.read1(1 << 16), b""):
            self.write(chunk)


def kill_descendants(keep: frozenset[int] = frozenset()) -> list[dict]:
    """SIGKILL and reap every child of this process but `keep` (as subreaper, every orphan below it
    is its child); returns {pid, name} of each. Repeats until none is left: a child killed while it
    forked leaves its own children, re-parented here, for the next round."""
    killed = []
    me = psutil.Process()
    while children := [child for child in me.children() if child.pid not in keep]:
        for child in children:
            try:
                killed.append({"pid": child.pid, "name": child.name()})
                child.kill()
            except psutil.NoSuchProcess:
                pass
        for child in children:
            try:
                os.waitpid(child.pid, 0)
            except ChildProcessError:
                pass
    return killed


@contextlib.contextmanager
def subreaper() -> Iterator[None]:
    """This process is a child subreaper inside the block (as it was before, after it)."""
    was = ctypes.c_int(0)
    prctl(PR_GET_CHILD_SUBREAPER, ctypes.addressof(was))
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    try:
        yield
    finally:
        prctl(PR_SET_CHILD_SUBREAPER, was.value)


class _Stop(BaseException):
    def __init__(self, signum: int):
        self.signum = signum


def _stop(signum, frame):
    for handled in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(handled, signal.SIG_IGN)  # one teardown
    raise _Stop(signum)


def run(
    command: list[str], log_path: Path, head: int, tail: int, grace_s: float, pass_fds: tuple[int, ...] = ()
) -> dict:
    prctl(PR_SET_CHILD_SUBREAPER, 1)
    status: dict = {"exit_code": None, "stopped_by": None}
    with open(log_path, "wb") as handle:
        log = CappedLog(handle, head, tail)
        process = None
        reader = None
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: SIGTERM reaches its workers too
                preexec_fn=die_with_parent(signal.SIGKILL),
                pass_fds=pass_fds,
            )
            reader = threading.Thread(target=log.pump, args=(process.stdout,), daemon=True)
            reader.start()
            status["exit_code"] = process.wait()  # negative: killed by that signal
            for handled in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(handled, signal.SIG_IGN)  # the script is done: the teardown below runs anyway
        except _Stop as stop:
            status["stopped_by"] = signal.Signals(stop.signum).name
            if process is not None:
                status["exit_code"] = _terminate(process, grace_s)
        status["leftover_processes"] = kill_descendants()
        if reader is not None:
            reader.join(timeout=30)  # EOF once every holder of the pipe is dead
        log.finish()
    status.update(
        output_bytes=log.seen, omitted_bytes=log.omitted, max_rss_kib=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    )
    return status


def _terminate(process: subprocess.Popen, grace_s: float) -> int:
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        return process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return process.wait()


def write_status(path: Path, status: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(status, sort_keys=True))
    os.replace(temporary, path)


def read_status(path: Path) -> dict | None:
    """What `write_status` wrote, or None when the launcher died before writing it."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def launch(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    log_path: Path,
    status_path: Path,
    stderr,
    head: int = LOG_HEAD_BYTES,
    tail: int = LOG_TAIL_BYTES,
    grace_s: float = KILL_GRACE_S,
    pass_fds: tuple[int, ...] = (),
) -> subprocess.Popen:
    """Start the launcher for `command` (run in `cwd` with `env`); it gets SIGTERM when the calling
    thread dies (PR_SET_PDEATHSIG follows the thread, not the process: call it from the thread that
    waits). Its own environment is the script's: nothing the script may not see. `stderr`: where
    the launcher's own errors go (a file handle). `pass_fds`: descriptors the script inherits."""
    launcher = [
        sys.executable, "-I", str(Path(__file__).resolve()), "--parent", str(os.getpid()),
        "--log", str(log_path), "--status", str(status_path),
        "--head", str(head), "--tail", str(tail), "--grace", str(grace_s),
        *(f"--pass-fd={fd}" for fd in pass_fds), "--", *command,
    ]  # fmt: skip
    return subprocess.Popen(
        launcher, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr,
        start_new_session=True, preexec_fn=die_with_parent(signal.SIGTERM), pass_fds=pass_fds,
    )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="run one benchmark script contained, with a bounded log")
    parser.add_argument("--parent", type=int, required=True, help="the sweep process's pid")
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--status", type=Path, required=True)
    parser.add_argument("--head", type=int, default=LOG_HEAD_BYTES)
    parser.add_argument("--tail", type=int, default=LOG_TAIL_BYTES)
    parser.add_argument("--grace", type=float, default=KILL_GRACE_S)
    parser.add_argument("--pass-fd", type=int, action="append", default=[], help="a descriptor the script inherits")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    for handled in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(handled, _stop)
    if os.getppid() != args.parent:  # the sweep died before PR_SET_PDEATHSIG took effect: run nothing
        return EXIT_LAUNCHER_FAILED
    try:
        status = run(command, args.log, args.head, args.tail, args.grace, tuple(args.pass_fd))
    except _Stop as stop:  # stopped before the script started
        status = {
            "exit_code": None,
            "stopped_by": signal.Signals(stop.signum).name,
            "leftover_processes": kill_descendants(),
        }
    except Exception as error:
        write_status(args.status, {"launcher_error": f"{type(error).__name__}: {error}"})
        return EXIT_LAUNCHER_FAILED
    write_status(args.status, status)
    return 0


if __name__ == "__main__":
    sys.exit(main())
