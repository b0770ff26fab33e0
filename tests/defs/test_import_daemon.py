"""The import commands' daemon and runs (issue 22, items 1, 3, 4, 5, 15): run monitoring in the shipped
instance config; our files out of Dagster's telemetry folders; runs a dead command left behind are
reported and failed; a run whose worker died is failed; a slow `dagster job launch` and a failed
catalogue refresh are errors, never success. The real-process cases (kill -9 of a command, two commands
at once) are at the end, marked slow."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    Definitions,
    RunsFilter,
    asset,
)

from kernelindex_pipeline import cli
from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.defs.daemon_supervisor import group_members
from kernelindex_pipeline.defs.import_daemon import (
    TELEMETRY_DIRS,
    WORKER_STARTED,
    FileLock,
    ImportDaemon,
    Lease,
    clean_up_after_dead_command,
    fail_if_worker_died,
    worker_pid,
)
from kernelindex_pipeline.defs.import_summary import ImportSummary
from kernelindex_pipeline.defs.instance import local_instance
from kernelindex_pipeline.defs.run_control import LaunchError, launch, wait_for_catalogue_refresh
from kernelindex_pipeline.liger import import_csv
from tests import support
from tests.support.cli_process import CLI

FIXTURES = support.FIXTURES / "liger-ci"
H100_FILES = [FIXTURES / "7644a0f-v0.7.0.csv", FIXTURES / "7644a0f.csv"]  # partition nvidia-h100-80gb-hbm3|0.7.0
H200_FILES = [FIXTURES / "0701bab.csv"]  # partition nvidia-h200|0.5.10


@pytest.fixture
def home(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


@pytest.fixture
def instance(home):
    with local_instance(home) as instance:  # the project's dagster.yaml, as the import commands make it
        yield instance


def _run(instance: DagsterInstance, status: DagsterRunStatus, job: str = "ci_import_job") -> DagsterRun:
    return instance.add_run(DagsterRun(job_name=job, run_id=str(uuid.uuid4()), status=status))


def _status(instance: DagsterInstance, run: DagsterRun) -> DagsterRunStatus:
    return instance.get_run_by_id(run.run_id).status


def test_the_shipped_instance_config_monitors_runs(instance):
    assert instance.run_monitoring_enabled
    assert instance.run_monitoring_start_timeout_seconds == 600
    assert instance.run_monitoring_cancel_timeout_seconds == 300
    assert instance.run_monitoring_poll_interval_seconds <= 30


def test_the_import_commands_files_stay_out_of_dagsters_telemetry_folders(instance, home):
    daemon = ImportDaemon(instance, home, verbose=False, log=print, command=[], cwd=home)
    for path in daemon.files():
        for reserved in TELEMETRY_DIRS:
            assert not path.is_relative_to(home / reserved), (
                f"{path} is in DAGSTER_HOME/{reserved}, which Dagster's telemetry uploads"
            )


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.slow  # 10 s on a quiet two-core machine
def test_runs_a_dead_command_left_behind_are_reported_and_failed_and_its_processes_stopped(instance, home):
    before = _run(instance, DagsterRunStatus.STARTED)  # not of that daemon: created before it started
    time.sleep(0.01)
    leftover = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True)
    try:
        lease = Lease(_dead_pid(), leftover.pid, psutil.Process(leftover.pid).create_time(), time.time())
        lease.write(ImportDaemon(instance, home, False, print, [], home).lease_path)
        stuck, starting, queued = (
            _run(instance, s)
            for s in (DagsterRunStatus.STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.NOT_STARTED)
        )
        done = _run(instance, DagsterRunStatus.SUCCESS)
        lines: list[str] = []

        other_command = FileLock(
            home / "kernelindex" / "import-daemon.lock"
        )  # a live command owns the daemon: hands off
        assert other_command.acquire(blocking=False)
        clean_up_after_dead_command(instance, home, lines.append)
        assert not lines and _status(instance, stuck) is DagsterRunStatus.STARTED and leftover.poll() is None
        other_command.release()

        clean_up_after_dead_command(instance, home, lines.append)
        assert leftover.wait(timeout=60) is not None  # generous: SIGTERM is immediate, the wait is for a loaded machine
        assert lines[0].startswith(f"stopped 1 processes left behind by import command pid {lease.command_pid}")
        for run in (stuck, starting):
            assert _status(instance, run) is DagsterRunStatus.FAILURE
            assert any(
                line.startswith(f"run {run.run_id} (ci_import_job) was {run.status.value}")
                and line.endswith("marked failed")
                for line in lines
            ), lines
        assert (_status(instance, queued), _status(instance, done), _status(instance, before)) == (
            DagsterRunStatus.NOT_STARTED,
            DagsterRunStatus.SUCCESS,
            DagsterRunStatus.STARTED,
        )
        assert len(lines) == 3
        lines.clear()
        clean_up_after_dead_command(instance, home, lines.append)  # once only
        assert not lines
    finally:
        leftover.kill()
        leftover.wait()


def test_a_command_whose_supervisor_was_killed_stops_what_its_daemon_left(instance, home):
    # Issue 31 item 16: a supervisor killed itself (kill -9, the OOM killer) stops nothing. Its daemon dies
    # with it (the parent-death signal); what the daemon started (here a stand-in run worker) is the command's
    # to stop when it ends, for once the lease says stopped no later command looks for it.
    worker = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)"
    lines: list[str] = []
    daemon = ImportDaemon(instance, home, False, lines.append, [sys.executable, "-c", worker], home)
    try:
        _supervisor_killed_under(daemon)
    finally:  # whatever a failure left (nothing when it passes)
        for process in group_members(daemon.lease.group, daemon.lease.group_started):
            process.kill()
    assert len(lines) == 1 and lines[0].startswith(
        "stopped 1 processes of the daemon's group: its supervisor was killed (signal 9)"
    ), lines
    assert Lease.read(daemon.lease_path).stopped_at is not None


def _supervisor_killed_under(daemon: ImportDaemon) -> None:
    """Enter the daemon (start its supervisor), kill -9 the supervisor once the worker runs, leave it."""
    with daemon:
        group, started = daemon.lease.group, daemon.lease.group_started
        deadline = time.monotonic() + 60  # generous: three Python processes starting on a loaded machine
        while len(group_members(group, started)) < 3:  # the supervisor, the daemon, its worker
            assert time.monotonic() < deadline, "the stand-in daemon did not start its worker within 60 s"
            time.sleep(0.1)
        (standin,) = psutil.Process(daemon.process.pid).children()
        daemon.process.kill()
        daemon.process.wait()
        _, alive = psutil.wait_procs([standin], timeout=60)  # generous: the parent-death signal is immediate
        assert not alive, "the stand-in daemon outlived its supervisor by 60 s"
    assert not group_members(group, started)  # __exit__ returns once they have ended


class _WithQueuedLeftover:
    """The instance, plus one run a dead command left QUEUED (the storage refuses a QUEUED run without a code
    location origin, which only a real launch has; the slow kill -9 test makes real ones)."""

    def __init__(self, instance: DagsterInstance) -> None:
        self.instance = instance
        # A stand-in record: DagsterRun itself refuses QUEUED without an origin too.
        self.created = datetime.now(UTC)  # by the dead command, before the new daemon's lease
        self.leftover = SimpleNamespace(
            job_name="ci_import_job", run_id=str(uuid.uuid4()), status=DagsterRunStatus.QUEUED
        )

    def get_runs(self, filters: RunsFilter):
        runs = self.instance.get_runs(filters)
        created_before_filter = filters.created_after is not None and self.created <= filters.created_after
        return (
            [*runs, self.leftover]
            if self.leftover.status in (filters.statuses or []) and not created_before_filter
            else runs
        )

    def get_run_by_id(self, run_id: str):
        return self.leftover if run_id == self.leftover.run_id else self.instance.get_run_by_id(run_id)

    def __getattr__(self, name: str):
        return getattr(self.instance, name)


def test_a_run_a_dead_command_left_queued_keeps_the_new_daemon_running_until_it_ends(instance, home):
    """The rerun's daemon serves what the dead command queued: its owner must not stop it while that run is
    still QUEUED (it then stayed QUEUED until the next import). A NOT_STARTED leftover is never dequeued: no wait."""
    never_submitted = _run(instance, DagsterRunStatus.NOT_STARTED)
    with_leftover = _WithQueuedLeftover(instance)
    time.sleep(0.01)
    daemon = ImportDaemon(with_leftover, home, verbose=False, log=print, command=[], cwd=home)
    daemon.lease = Lease(os.getpid(), os.getpgid(0), 0.0, time.time())  # as start() writes it, after the crash
    ours = _run(instance, DagsterRunStatus.STARTING)
    assert {run.run_id for run in daemon._active_runs()} == {with_leftover.leftover.run_id, ours.run_id}
    assert never_submitted.run_id not in {run.run_id for run in daemon._active_runs()}
    with_leftover.leftover.status = DagsterRunStatus.SUCCESS  # the new daemon ran it
    assert {run.run_id for run in daemon._active_runs()} == {ours.run_id}


def test_a_started_run_whose_worker_died_is_failed(instance):
    run = _run(instance, DagsterRunStatus.STARTED)
    assert fail_if_worker_died(instance, run.run_id) is None  # no worker known yet: nothing to judge
    instance.report_engine_event(f"Started process for run (pid: {os.getpid()}).", run)
    assert fail_if_worker_died(instance, run.run_id) is None  # alive
    gone = _dead_pid()
    other = _run(instance, DagsterRunStatus.STARTED)
    instance.report_engine_event(f"Started process for run (pid: {gone}).", other)
    line = fail_if_worker_died(instance, other.run_id)
    assert line == (
        f"run {other.run_id} (ci_import_job) was STARTED: its run worker (pid {gone}) exited without "
        "ending the run; marked failed"
    )
    assert _status(instance, other) is DagsterRunStatus.FAILURE and _status(instance, run) is DagsterRunStatus.STARTED


def test_a_run_the_daemon_started_as_it_stopped_is_failed_not_left_started(instance, home):
    """Its worker went with the daemon's group: left STARTED it would hold a run slot for good."""
    lines: list[str] = []
    daemon = ImportDaemon(
        instance, home, False, lines.append, [sys.executable, "-c", "import time; time.sleep(600)"], home
    )
    daemon.start()
    cut_off, alive = _run(instance, DagsterRunStatus.STARTED), _run(instance, DagsterRunStatus.STARTED)
    instance.report_engine_event(f"Started process for run (pid: {_dead_pid()}).", cut_off)
    instance.report_engine_event(f"Started process for run (pid: {os.getpid()}).", alive)  # another daemon's
    daemon._stop(drain=False)  # a command that failed: its daemon's group is stopped at once
    assert (
        _status(instance, cut_off) is DagsterRunStatus.FAILURE and _status(instance, alive) is DagsterRunStatus.STARTED
    )
    assert [line for line in lines if cut_off.run_id in line and line.endswith("marked failed")], lines


def test_a_launch_past_its_deadline_is_a_launch_error_naming_it(instance, home):
    with pytest.raises(
        LaunchError, match=r"dagster job launch ci_import_job did not return within 0.5s and created no run"
    ):
        launch(instance, home, "ci_import_job", {}, verbose=False, timeout_s=0.5)


@asset(name="catalogue_export")
def failing_catalogue_export() -> None:
    raise RuntimeError("gRPC deadline exceeded")


def test_a_failed_catalogue_refresh_is_reported_and_not_success():
    with DagsterInstance.ephemeral() as instance:
        since = time.time() - 1
        nothing = wait_for_catalogue_refresh(instance, since, deadline_s=1)
        assert nothing.problem.startswith(
            "the catalogue automation launched no refresh of the catalogue-wide assets within 1s"
        )
        # As the automation launches it: a run of the global asset job selecting the catalogue-wide assets.
        job = Definitions(assets=[failing_catalogue_export]).resolve_implicit_global_asset_job_def()
        result = job.execute_in_process(
            instance=instance, raise_on_error=False, asset_selection=[AssetKey("catalogue_export")]
        )
        refresh = wait_for_catalogue_refresh(instance, since, deadline_s=60)
    assert refresh.run_id == result.run_id
    assert refresh.problem.startswith(f"catalogue refresh run {result.run_id} failure: catalogue_export: ")
    assert "gRPC deadline exceeded" in refresh.problem
    summary = ImportSummary("history", "history", [], refresh_problem=refresh.problem)
    assert not summary.ok


# --------------------------------------------------------------------------- real processes (slow)

DEADLINE_S = 600  # generous: a loaded 2-core machine takes minutes to start Dagster's processes


def _command(home: Path, *locators: Path) -> subprocess.Popen:
    return subprocess.Popen(
        # --wait: the daemon's owner stays while the catalogue refresh runs, as these tests of sharing it expect
        [*CLI, "import-ci", "--wait", *map(str, locators)],
        env={**os.environ, "DAGSTER_HOME": str(home)},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_for(what: str, condition, deadline_s: float = DEADLINE_S):
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"waited {deadline_s}s for {what}")


def _started_run(home: Path) -> DagsterRun | None:
    with DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(RunsFilter(job_name="ci_import_job", statuses=[DagsterRunStatus.STARTED]))
    return runs[0] if runs else None


def _catalogue(home: Path, files: list[Path]) -> bool:
    expected = set().union(*(import_csv(path).manifests for path in files))
    with CatalogueStore.open(None, home=home) as store:
        return store.present_digests(expected) == expected and sum(store.counts_by_kind().values()) == len(expected)


def _no_active_runs(home: Path) -> None:
    from kernelindex_pipeline.defs.import_daemon import ACTIVE

    with DagsterInstance.from_config(str(home)) as instance:
        active = instance.get_runs(RunsFilter(statuses=ACTIVE))
        every = [
            (
                instance.get_run_record_by_id(run.run_id).create_timestamp.isoformat(),
                run.run_id,
                run.job_name,
                run.status.value,
                dict(run.tags),
            )
            for run in instance.get_runs()
        ]
        assert not active, f"runs left active: {[run.run_id for run in active]}; every run: {every}"


def _lease_of(home: Path, pid: int) -> Lease | None:
    lease = Lease.read(home / "kernelindex" / "import-daemon.json")
    return lease if lease is not None and lease.command_pid == pid else None


def _started_import(home: Path, files: list[Path]) -> tuple[subprocess.Popen, Lease, DagsterRun]:
    """An import-ci command whose daemon is up and whose run has started."""
    command = _command(home, *files)
    try:
        # The lease is written once the command made its instance and started its daemon.
        lease = _wait_for("the daemon's lease", lambda: _lease_of(home, command.pid))
        run = _wait_for("the import's run to start", lambda: _started_run(home))
    except BaseException:
        command.kill()
        command.communicate()
        raise
    assert group_members(lease.group, lease.group_started), "the daemon's process group is empty while its run runs"
    return command, lease, run


def _rerun(home: Path, files: list[Path], catalogue_files: list[Path]) -> str:
    rerun = _command(home, *files)
    out, err = rerun.communicate(timeout=DEADLINE_S)
    assert rerun.returncode == 0, out + err[-3000:]
    assert _catalogue(home, catalogue_files)
    _no_active_runs(home)
    lease = Lease.read(home / "kernelindex" / "import-daemon.json")
    assert lease.stopped_at is not None and not group_members(lease.group, lease.group_started)
    return err


@pytest.mark.slow
@pytest.mark.timeout(4 * DEADLINE_S)  # four imports, each given DEADLINE_S
def test_kill_9_of_an_import_orphans_nothing_and_a_rerun_fails_what_a_crash_left_started(tmp_path):
    home = tmp_path / "home"
    # A crash of the command and its whole process group at once: the run is left STARTED.
    command, lease, run = _started_import(home, H100_FILES)
    os.killpg(lease.group, signal.SIGKILL)
    command.kill()
    command.communicate()
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_run_by_id(run.run_id).status is DagsterRunStatus.STARTED
    err = _rerun(home, H100_FILES, H100_FILES)
    assert (
        f"run {run.run_id} (ci_import_job) was STARTED: left behind by the daemon of import command pid {command.pid}, "
        "which died; its run worker is gone; marked failed"
    ) in err, err
    with DagsterInstance.from_config(str(home)) as instance:
        assert instance.get_run_by_id(run.run_id).status is DagsterRunStatus.FAILURE

    # kill -9 of the command alone: its supervisor stops the daemon, code servers and run worker.
    command, lease, run = _started_import(home, H200_FILES)
    command.send_signal(signal.SIGKILL)
    command.communicate()
    _wait_for(
        f"the dead command's daemon group {lease.group} to end",
        lambda: not group_members(lease.group, lease.group_started),
        deadline_s=180,
    )
    with DagsterInstance.from_config(
        str(home)
    ) as instance:  # its worker, stopped, ended the run itself (or it had finished)
        assert instance.get_run_by_id(run.run_id).status in (DagsterRunStatus.FAILURE, DagsterRunStatus.SUCCESS)
    _rerun(home, H200_FILES, H100_FILES + H200_FILES)


@pytest.mark.slow
@pytest.mark.timeout(2 * DEADLINE_S)
def test_two_concurrent_imports_share_one_daemon_and_each_run_gets_one_worker(tmp_path):
    from dagster import DagsterEventType

    home = tmp_path / "home"
    first, second = _command(home, *H100_FILES), _command(home, *H200_FILES)
    results = [process.communicate(timeout=DEADLINE_S) for process in (first, second)]
    for process, (out, err) in zip((first, second), results, strict=True):
        assert process.returncode == 0, out + err[-3000:]
        assert "1 partitions in 1 run(s)" in out and "(1 published, 0 not)" in out, out
    shared = [err for _, err in results if "using the running dagster-daemon" in err]
    assert len(shared) == 1, [err[-2000:] for _, err in results]
    with DagsterInstance.from_config(str(home)) as instance:
        runs = instance.get_runs(RunsFilter(job_name="ci_import_job"))
        assert len(runs) == 2 and {run.status for run in runs} == {DagsterRunStatus.SUCCESS}
        for run in runs:
            workers = [
                entry
                for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT)
                if WORKER_STARTED.match(entry.message or "")
            ]
            assert len(workers) == 1, f"run {run.run_id} got {len(workers)} workers"
    _no_active_runs(home)
    assert _catalogue(home, H100_FILES + H200_FILES)


def test_an_import_past_any_deadline_ends_in_its_one_line_message_not_an_internal_error(home, monkeypatch, capsys):
    import kernelindex_pipeline.defs.launch as launch_module

    def overloaded(*args, **kwargs):
        raise subprocess.TimeoutExpired(["/venv/bin/dagster", "job", "launch", "-w", "workspace.yaml"], 300)

    monkeypatch.setattr(launch_module, "import_ci", overloaded)
    assert cli.main(["import-ci", str(H200_FILES[0])]) == 1
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert line == (
        "kernelindex-pipeline import-ci: error: dagster job launch did not finish within 300s "
        "(the machine may be overloaded); run the command again"
    )


def _refresh_started(instance: DagsterInstance) -> DagsterRun | None:
    """The catalogue automation's refresh run, once its worker started it."""
    for run in instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.STARTED])):
        if run.asset_selection and AssetKey("catalogue_export") in run.asset_selection:
            return run
    return None


def _hold_worker_until_the_daemon_stopped(instance: DagsterInstance, home: Path, run: DagsterRun) -> None:
    """Suspend the run's worker until the dagster-daemon has exited, so the run certainly outlives the daemon."""
    worker = psutil.Process(_wait_for("the refresh's worker pid", lambda: worker_pid(instance, run.run_id)))
    worker.suspend()
    try:
        lease = Lease.read(home / "kernelindex" / "import-daemon.json")
        group = group_members(lease.group, lease.group_started, exclude=lease.group)  # not the supervisor
        daemons = [p for p in group if "dagster-daemon" in _cmdline(p)]
        _, alive = psutil.wait_procs(daemons, timeout=DEADLINE_S)
        assert not alive, f"waited {DEADLINE_S}s for the command's dagster-daemon to stop"
    finally:
        try:
            worker.resume()
        except psutil.NoSuchProcess:
            pass  # killed with the daemon's group (what happened before the drain)


def _cmdline(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""


@pytest.mark.slow  # about a minute: an import, then the automation's tick (every 30 s) starts the refresh
def test_a_refresh_the_daemon_started_as_it_stopped_finishes_before_the_command_returns(
    instance, home, monkeypatch, capsys
):
    """The race of a command that does not wait: the automation starts its refresh just after the command's last
    look for active runs, and the refresh is still running when the daemon has stopped. Forced here: that look
    answers "none" once the refresh has started, and the refresh's worker is held until the daemon exited. The
    command's daemon drains: it stops (dequeues nothing more) and lets the refresh finish. Before, the refresh
    lost its worker with the daemon's group and ended failed, and the automation did not retry it."""
    refresh: list[DagsterRun] = []
    holds: list[threading.Thread] = []

    def last_look_misses_the_refresh(daemon: ImportDaemon) -> list[DagsterRun]:
        run = _wait_for("the automation's refresh run to start", lambda: _refresh_started(instance))
        refresh.append(run)
        holds.append(threading.Thread(target=_hold_worker_until_the_daemon_stopped, args=(instance, home, run)))
        holds[0].start()
        return []

    monkeypatch.setattr(ImportDaemon, "_active_runs", last_look_misses_the_refresh)
    assert cli.main(["import-ci", str(H200_FILES[0])]) == 0
    holds[0].join()
    (run,) = refresh
    assert _status(instance, run) is DagsterRunStatus.SUCCESS
    err = capsys.readouterr().err
    assert f"letting run {run.run_id} (__ASSET_JOB) finish: the daemon started it as it stopped" in err, err[-3000:]
    assert not group_members(Lease.read(home / "kernelindex" / "import-daemon.json").group, 0.0)


@pytest.mark.slow
def test_a_stopped_catalogue_automation_is_seen_so_nothing_waits_for_it(instance, home):
    from kernelindex_pipeline.defs.run_control import automation_stopped, workspace_file

    assert not automation_stopped(instance)  # on by default
    stopped = subprocess.run(
        [
            str(Path(sys.executable).with_name("dagster")),
            "sensor",
            "stop",
            "catalogue_automation",
            "-w",
            str(workspace_file(home)),
        ],
        capture_output=True,
        text=True,
        timeout=DEADLINE_S,
        env={**os.environ, "DAGSTER_HOME": str(home)},
    )
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    assert automation_stopped(instance)


def _processes_of(home: Path) -> list[str]:
    """Processes whose environment names `home` as DAGSTER_HOME: the command's helpers, at any depth."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if process.environ().get("DAGSTER_HOME") == str(home):
                found.append(" ".join(process.info["cmdline"][:5]))
        except psutil.Error:
            continue
    return found


@pytest.mark.slow
def test_kill_9_of_an_import_while_it_launches_leaves_no_launch_behind(tmp_path):
    home = tmp_path / "home"
    command = _command(home, *H200_FILES)
    try:
        _wait_for(
            "the command's `dagster job launch`", lambda: any(" job launch " in line for line in _processes_of(home))
        )
    finally:
        command.kill()
        command.communicate()
    _wait_for(
        f"every process of the dead command to end (left: {_processes_of(home)})",
        lambda: not _processes_of(home),
        deadline_s=180,
    )


def test_a_leftover_that_is_a_zombie_is_described_not_a_crash():
    from kernelindex_pipeline.defs.daemon_supervisor import describe

    child = subprocess.Popen([sys.executable, "-c", "pass"])  # not waited for: a zombie once it exits
    process = psutil.Process(child.pid)
    _wait_for("the child to become a zombie", lambda: process.status() == psutil.STATUS_ZOMBIE, deadline_s=60)
    assert describe(process) == f"pid {child.pid} (ended)"
    assert child.pid in {
        p.pid for p in group_members(os.getpgrp(), process.create_time())
    }  # still listed, then stopped
    child.wait()
