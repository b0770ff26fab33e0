"""The import commands' dagster-daemon: at most one per DAGSTER_HOME, tied to the command that runs it.

- **One daemon, shared.** The command holding `import-daemon.lock` (exclusive, non-blocking) owns the
  daemon; every import command holds `import-users.lock` shared while it needs one. A second command
  that finds the daemon lock taken uses the running daemon, never starts its own (two daemons dequeue
  the same run twice). The owner stops its daemon only once it can take the users lock exclusively
  (no other command needs it) and no run created since the daemon started is still active; a command
  that comes while the owner stops waits on the users lock and then starts its own.
- **Tied to the command.** The daemon runs under `daemon_supervisor`, which stops it and everything it
  started (code servers, run workers: one process group) when the owning command ends, kill -9
  included. A supervisor killed itself takes its daemon along (the parent-death signal); the command
  stops whatever else of the group is left when it stops its daemon. The lease file `import-daemon.json` names that group; a later command that takes the
  daemon lock (the owner is gone, the kernel released its locks) stops whatever of the group is still
  there, then reports and fails the runs it left STARTING, STARTED or CANCELING, whose workers died
  with it. Queued runs of the dead command are kept: the new daemon runs them.
- **A run whose worker died** (while a daemon lives) is failed too, with the worker's pid in the
  message: the default run launcher cannot tell, so Dagster's run monitoring would only fail it at
  its maximum runtime.

Every file here lives in `DAGSTER_HOME/kernelindex/`, never in `DAGSTER_HOME/logs/` or `.logs_queue/`:
Dagster's telemetry thread (in every daemon, whatever the telemetry setting) uploads what those hold
and deletes it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import psutil
from dagster import DagsterEventType, DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter

from kernelindex_pipeline.defs.daemon_supervisor import (
    DRAIN,
    DRAIN_RUNS_S,
    describe,
    group_members,
    stop_processes,
    supervised,
)
from kernelindex_pipeline.home import DAGSTER_HOME_ENV

PRIVATE_DIR = "kernelindex"  # DAGSTER_HOME/kernelindex: the import commands' own files
# Folders under DAGSTER_HOME that Dagster's telemetry upload reads, posts and empties.
TELEMETRY_DIRS = ("logs", ".logs_queue")
DAEMON_FRESH_S = 30  # a daemon heartbeat younger than this: `dagster dev`'s daemon is serving the queue
SUPERVISOR_STOP_S = 120  # the supervisor's own grace periods (60 s + 2 x 10 s) and some
STUCK = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
ACTIVE = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, *STUCK]


def private_dir(home: Path) -> Path:
    path = home / PRIVATE_DIR
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)


class FileLock:
    """An flock(2) on a file of ours, shared or exclusive. Hand-written over fcntl because the filelock
    package has no shared mode; flock is released by the kernel when its holder dies (kill -9
    included), which is what tells a later command that the owner is gone."""

    def __init__(self, path: Path) -> None:
        self.path, self.fd = path, None

    def acquire(self, *, shared: bool = False, blocking: bool = True) -> bool:
        if self.fd is not None:
            return True
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    @property
    def held(self) -> bool:
        return self.fd is not None


@dataclass
class Lease:
    """Which command runs the daemon: its pid, the supervisor's process group, when it started (runs
    created since are the daemon's) and, once it was stopped cleanly, when."""

    command_pid: int
    group: int
    group_started: float
    started_at: float
    stopped_at: float | None = None

    @classmethod
    def read(cls, path: Path) -> Lease | None:
        try:
            return cls(**json.loads(path.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, TypeError):
            return None  # a torn or foreign file names nothing we can stop; the next write replaces it

    def write(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self)), encoding="utf-8")
        tmp.replace(path)


# The engine event Dagster writes when a run worker starts (dagster/_grpc/impl.py, dagster/_cli/api.py).
WORKER_STARTED = re.compile(r"Started process for run \(pid: (\d+)\)")


def worker_pid(instance: DagsterInstance, run_id: str) -> int | None:
    """The pid of a run's worker process, from the engine event Dagster writes when it starts it."""
    for entry in instance.all_logs(run_id, of_type=DagsterEventType.ENGINE_EVENT):
        found = WORKER_STARTED.match(entry.message or "")
        if found:
            return int(found.group(1))
    return None


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def fail_run(instance: DagsterInstance, run: DagsterRun, why: str) -> str:
    """Mark a run that nothing will finish as failed (canceled, when it was being canceled); the line to report."""
    if run.status is DagsterRunStatus.CANCELING:
        instance.report_run_canceled(run, why)
    else:
        instance.report_run_failed(run, why)
    return f"run {run.run_id} ({run.job_name}) was {run.status.value}: {why}; marked {'canceled' if run.status is DagsterRunStatus.CANCELING else 'failed'}"


def fail_if_worker_died(instance: DagsterInstance, run_id: str) -> str | None:
    """Fail a STARTED run whose worker process is gone (the default launcher never notices); the line to report."""
    run = instance.get_run_by_id(run_id)
    if run is None or run.status is not DagsterRunStatus.STARTED:
        return None
    pid = worker_pid(instance, run_id)
    if pid is None or _alive(pid):
        return None
    run = instance.get_run_by_id(run_id)  # it may have ended while we looked
    if run.status is not DagsterRunStatus.STARTED:
        return None
    return fail_run(instance, run, f"its run worker (pid {pid}) exited without ending the run")


class ImportDaemon:
    """The daemon serving an import command's runs: its own, another command's, or `dagster dev`'s."""

    def __init__(
        self,
        instance: DagsterInstance,
        home: Path,
        verbose: bool,
        log: Callable[[str], None],
        command: list[str],
        cwd: Path,
    ) -> None:
        self.instance, self.home, self.verbose, self.log = instance, home, verbose, log
        self.command, self.cwd = command, cwd
        folder = private_dir(home)
        self.log_path = folder / "import-daemon.log"
        self.lease_path = folder / "import-daemon.json"
        self.owner_lock = FileLock(folder / "import-daemon.lock")
        self.users_lock = FileLock(folder / "import-users.lock")
        self.process: subprocess.Popen | None = None  # the supervisor of our daemon
        self.lease: Lease | None = None
        self.said_shared = False

    def files(self) -> list[Path]:
        return [self.log_path, self.lease_path, self.owner_lock.path, self.users_lock.path]

    def __enter__(self) -> ImportDaemon:
        self.users_lock.acquire(shared=True)  # waits only while an owner is stopping its daemon
        self.serve()
        return self

    def serve(self) -> None:
        """Make sure some daemon serves the queue: ours, unless another live import command's or `dagster dev`'s does."""
        if self.process is not None:
            return
        if not self.owner_lock.acquire(blocking=False):  # another import command's daemon runs: use it
            if not self.said_shared:
                self.said_shared = True
                lease = Lease.read(self.lease_path)
                owner = f" of import command pid {lease.command_pid}" if lease and lease.stopped_at is None else ""
                self.log(f"using the running dagster-daemon{owner} (one per DAGSTER_HOME)")
            return
        last_stop = self.clean_up_after_dead_owner()
        if self._foreign_daemon_alive(last_stop):
            self.owner_lock.release()
            return
        self.start()

    def _foreign_daemon_alive(self, ours_stopped_at: float) -> bool:
        """A fresh heartbeat that is not one our last daemon left behind: `dagster dev` serves the queue."""
        beats = [beat.timestamp for beat in self.instance.get_daemon_heartbeats().values()]
        newest = max(beats, default=0.0)
        return newest > ours_stopped_at and time.time() - newest < DAEMON_FRESH_S

    def clean_up_after_dead_owner(self) -> float:
        """Stop what a command that died left running, fail the runs it left behind; when our last daemon stopped."""
        lease = Lease.read(self.lease_path)
        if lease is None:
            return 0.0
        if lease.stopped_at is not None:
            return lease.stopped_at
        leftovers = group_members(lease.group, lease.group_started)
        if leftovers:
            names = sorted({describe(process) for process in leftovers})
            stop_processes(leftovers)
            self.log(
                f"stopped {len(leftovers)} processes left behind by import command pid {lease.command_pid}, "
                f"which died ({'; '.join(names)})"
            )
        lease.stopped_at = time.time()
        for run in self.instance.get_runs(RunsFilter(statuses=STUCK, created_after=utc(lease.started_at))):
            pid = worker_pid(self.instance, run.run_id)
            if pid is not None and _alive(pid):
                continue  # not a worker of that daemon (its group is gone): someone else's
            self.log(
                fail_run(
                    self.instance,
                    run,
                    f"left behind by the daemon of import command pid {lease.command_pid}, "
                    "which died; its run worker is gone",
                )
            )
        lease.write(self.lease_path)
        return lease.stopped_at

    def start(self) -> None:
        out = None if self.verbose else self.log_path.open("ab")
        self.process = subprocess.Popen(
            supervised(self.command),
            env={**os.environ, DAGSTER_HOME_ENV: str(self.home)},
            cwd=self.cwd,
            stdin=subprocess.PIPE,  # the lease: closed when this command ends, however it ends
            stdout=out,
            stderr=subprocess.STDOUT if out else None,
            start_new_session=True,  # its own process group: the daemon, code servers and run workers
        )
        if out:
            out.close()
        self.lease = Lease(os.getpid(), self.process.pid, psutil.Process(self.process.pid).create_time(), time.time())
        self.lease.write(self.lease_path)

    def exited(self) -> int | None:
        """Our daemon's exit status once it ended by itself, else None (also when it is not ours)."""
        return self.process.poll() if self.process is not None else None

    def __exit__(self, exc_type, *_) -> None:
        self.users_lock.release()
        if self.process is None:
            self.owner_lock.release()
            return
        try:
            # Another command using our daemon (it holds the users lock), or a run it launched that is
            # still going (an automation run, another command's): stopping now would cut them off.
            while self.process.poll() is None:
                if self.users_lock.acquire(blocking=False):
                    if exc_type is not None or not self._active_runs():
                        break
                    self.users_lock.release()
                time.sleep(1)
            self._stop(drain=exc_type is None)
        finally:
            self.owner_lock.release()
            self.users_lock.release()

    def _active_runs(self) -> list[DagsterRun]:
        """Runs this daemon must see end before it stops: every active run created since it started, and every
        run still QUEUED, whenever created. A run that a dead command left queued is served by this daemon
        (clean_up_after_dead_owner keeps it): stopping with it still in the queue left it QUEUED until the next
        import (the flaky kill -9 test). A NOT_STARTED leftover was never submitted: nothing would dequeue it."""
        ours = self.instance.get_runs(RunsFilter(statuses=ACTIVE, created_after=utc(self.lease.started_at)))
        queued = self.instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.QUEUED]))
        runs = list({run.run_id: run for run in [*ours, *queued]}.values())
        for run in runs:
            line = fail_if_worker_died(self.instance, run.run_id)
            if line:
                self.log(line)
        return [run for run in runs if self.instance.get_run_by_id(run.run_id).status in ACTIVE]

    def _stop(self, drain: bool) -> None:
        """Stop our daemon and its group. `drain` (a command ending normally): the runs the daemon started
        before it stopped finish first (daemon_supervisor's DRAIN; a refresh the automation started in the
        moment after our last look for active runs would otherwise lose its worker and end failed)."""
        try:
            if drain:
                self.process.stdin.write(DRAIN)
                self.process.stdin.flush()
        except BrokenPipeError:
            drain = False  # the supervisor is gone (killed itself): nothing drains through it
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()  # the supervisor stops the daemon and its group
        if drain:
            self._say_drained_runs()
        try:
            self.process.wait(timeout=SUPERVISOR_STOP_S + (DRAIN_RUNS_S if drain else 0))
        except subprocess.TimeoutExpired:
            pass
        # Nothing should be left; but a supervisor killed itself (kill -9, the OOM killer) stops nothing: its
        # daemon dies with it (the parent-death signal), not what the daemon started (a run worker). Once the
        # lease says stopped, no later command would look for them.
        leftovers = group_members(self.lease.group, self.lease.group_started)
        if leftovers:
            names = "; ".join(sorted({describe(process) for process in leftovers}))
            stop_processes(leftovers)
            code = self.process.poll()
            if code is None:
                how = "did not stop them in time"
            else:
                how = f"was killed (signal {-code})" if code < 0 else f"exited ({code}) without stopping them"
            self.log(f"stopped {len(leftovers)} processes of the daemon's group: its supervisor {how} ({names})")
        self.lease.stopped_at = time.time()
        self.lease.write(self.lease_path)
        self._fail_runs_cut_off()

    def _say_drained_runs(self) -> None:
        """Once the daemon itself has stopped (it starts nothing more), name the runs it lets finish."""
        try:
            children = psutil.Process(self.process.pid).children()
            daemons = [child for child in children if "dagster-daemon" in " ".join(child.cmdline())]
        except psutil.Error:
            daemons = []  # the supervisor (or the daemon) already ended
        psutil.wait_procs(daemons, timeout=SUPERVISOR_STOP_S)
        started = RunsFilter(statuses=[DagsterRunStatus.STARTED], created_after=utc(self.lease.started_at))
        for run in self.instance.get_runs(started):
            self.log(f"letting run {run.run_id} ({run.job_name}) finish: the daemon started it as it stopped")

    def _fail_runs_cut_off(self) -> None:
        """Fail a run this daemon started as it was being stopped: the automation can queue its refresh after
        the last look for active runs (an import command that does not wait stops its daemon right after its
        own runs), and a run dequeued then lost its worker with the daemon's group. Left STARTED, it would hold
        a run slot and keep the automation "in progress" for good (the default run launcher never notices)."""
        started = RunsFilter(statuses=[DagsterRunStatus.STARTED], created_after=utc(self.lease.started_at))
        for run in self.instance.get_runs(started):
            line = fail_if_worker_died(self.instance, run.run_id)
            if line:
                self.log(line)


def clean_up_after_dead_command(instance: DagsterInstance, home: Path, log: Callable[[str], None]) -> None:
    """What every import command does first: when no live import command owns the daemon, stop what a
    dead one left running and report and fail the runs it left behind (its daemon's runs)."""
    daemon = ImportDaemon(instance, home, verbose=False, log=log, command=[], cwd=home)
    if daemon.owner_lock.acquire(blocking=False):
        try:
            daemon.clean_up_after_dead_owner()
        finally:
            daemon.owner_lock.release()
