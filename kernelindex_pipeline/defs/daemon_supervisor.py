"""Runs a command (the import commands' `dagster-daemon run`, their `dagster job launch`) for exactly as
long as the process that started it holds this process's stdin open: the lease.

    python -m kernelindex_pipeline.defs.daemon_supervisor dagster-daemon run -w workspace.yaml

The import command starts this supervisor as the leader of a new process group, with a pipe as its
stdin. Everything the daemon starts (code servers, their run workers) stays in that group. When the
command ends, however it ends (kill -9 included: the kernel closes its end of the pipe), the
supervisor reads end-of-file, stops the daemon with SIGTERM (it shuts its code servers down) and then
stops whatever is left of the group. Nothing outlives the command that needed it.

The supervised command dies with the supervisor too (Linux): it starts with the kernel's parent-death
signal set to SIGTERM, so a supervisor killed itself (kill -9, the OOM killer) takes the daemon with it,
and the daemon's own SIGTERM handling stops its code servers, as when the supervisor stops it. Whatever
else of the group outlives it (a run worker) the import command stops when it sees its supervisor gone
(import_daemon), or the next import command does.

A command that ends normally first writes `DRAIN` to the pipe: then, once the daemon has stopped (so
it neither ticks nor dequeues any more), the run workers it already started are let finish (their code
servers exit when their last run ends) before the rest of the group is stopped. The catalogue
automation can queue and start its refresh in the moment between the command's last look for active
runs and the daemon's stop; without the drain that run lost its worker and ended failed, and the
automation does not retry a failed refresh until the catalogue changes again. A command that died
writes nothing, so its processes are stopped at once.

Deliberately free of Dagster imports: it starts in a fraction of a second, and the process-group
helpers here are shared with `import_daemon`, which stops what a supervisor killed itself left behind.
Hand-written because no library ties a process tree's life to another process on both Linux and
macOS (prctl's parent-death signal is Linux-only and reaches only the direct child, not the code
servers and run workers below it: hence the lease for the command's death, the signal only for ours).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable

import psutil

DAEMON_STOP_GRACE_S = 60  # dagster-daemon's own shutdown (it stops its code servers) on a loaded machine
GROUP_STOP_GRACE_S = 10  # SIGTERM -> SIGKILL for whatever of the group is still there after the daemon
DRAIN = b"DRAIN\n"  # written by a command that ends normally (see the module docstring)
# How long a drain lets the runs the daemon already started finish: a whole catalogue refresh on a loaded
# 2-core machine takes minutes. Past it they are stopped like the rest (and the command fails and names them).
DRAIN_RUNS_S = 1800


def group_members(group: int, started_after: float, exclude: int | None = None) -> list[psutil.Process]:
    """Processes of process group `group` created since `started_after` (a process-group id is a pid, and
    a pid is reused only after its group is gone: the time check keeps a later group of the same number out)."""
    members = []
    for process in psutil.process_iter(["create_time"]):
        try:
            created = process.info["create_time"]  # None when psutil could not read it
            if (
                process.pid != exclude
                and created is not None
                and os.getpgid(process.pid) == group
                and created >= started_after - 1
            ):
                members.append(process)
        except (ProcessLookupError, psutil.Error):
            continue  # it ended while we looked
    return members


def describe(process: psutil.Process) -> str:
    """A short name for a process that may end (or be a zombie) while we look."""
    try:
        return " ".join(process.cmdline()[1:3]) or process.name()
    except psutil.Error:
        return f"pid {process.pid} (ended)"


def stop_processes(processes: list[psutil.Process], grace_s: float = GROUP_STOP_GRACE_S) -> None:
    """SIGTERM, then SIGKILL for those still running after `grace_s`; returns once all have ended."""
    for process in processes:
        try:
            process.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(processes, timeout=grace_s)
    for process in alive:
        try:
            process.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(alive, timeout=grace_s)


PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(signum: int = signal.SIGTERM) -> Callable[[], None] | None:
    """A preexec_fn that has the child sent `signum` when its parent dies (Linux's PR_SET_PDEATHSIG); None
    where there is no such thing. The kernel sends it when the parent *thread* that forked the child ends,
    so the Popen must be made by a thread that lives as long as the parent (supervise: the main thread).
    Not sweep.contain's die_with_parent: that is reached only through the sweep package, whose import
    costs 0.7 s and 66 MB in a process that starts in 0.07 s, raises off Linux (where the supervisor runs
    without the signal), and leaves the parent check to the launcher, which here is not our code."""
    if not sys.platform.startswith("linux"):
        return None
    prctl = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: the forked child only calls it
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)  # fails only for an invalid signal number
        if os.getppid() != parent:  # the parent died before the signal was set: nothing will send it now
            os._exit(128 + signum)  # (a signal to ourselves would meet the parent's Python handlers here)

    return preexec


def supervised(command: list[str]) -> list[str]:
    """The command line that runs `command` under this supervisor (start it with stdin=PIPE, start_new_session=True)."""
    return [
        sys.executable,
        "-m",
        __spec__.name if __spec__ else "kernelindex_pipeline.defs.daemon_supervisor",
        *command,
    ]


def supervise(command: list[str]) -> int:
    """Run `command` until our stdin closes or we are signalled; then stop it and the rest of our group."""
    stop, drain = threading.Event(), threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, lambda *_: stop.set())
    started = psutil.Process().create_time()
    # From this (the main) thread, which lives as long as the supervisor: the parent-death signal follows it.
    child = subprocess.Popen(command, stdin=subprocess.DEVNULL, preexec_fn=die_with_parent())

    def watch_lease() -> None:
        # The raw fd, not sys.stdin: a daemon thread blocked in a buffered read aborts the interpreter's exit.
        heard = b""
        while chunk := os.read(0, 65536):  # b"" when the command's end of the pipe closes
            heard = (heard + chunk)[-len(DRAIN) :]
            if heard == DRAIN:
                drain.set()
        stop.set()

    threading.Thread(target=watch_lease, daemon=True).start()
    while not stop.is_set() and child.poll() is None:
        stop.wait(0.5)
    asked_to_stop = child.poll() is None
    if asked_to_stop:
        child.terminate()
        try:
            child.wait(timeout=DAEMON_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    if drain.is_set():
        psutil.wait_procs(group_members(os.getpgrp(), started, exclude=os.getpid()), timeout=DRAIN_RUNS_S)
    stop_processes(group_members(os.getpgrp(), started, exclude=os.getpid()))
    return 0 if asked_to_stop else child.wait()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python -m kernelindex_pipeline.defs.daemon_supervisor COMMAND [ARG...]")
    sys.exit(supervise(sys.argv[1:]))
