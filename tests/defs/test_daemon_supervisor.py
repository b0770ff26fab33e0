"""The supervisor the import commands run their dagster-daemon under: what it starts dies with it, kill -9
of the supervisor itself included (issue 31 item 16)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil
import pytest

from kernelindex_pipeline.defs.daemon_supervisor import group_members, supervised

# Generous: SIGTERM ends the stand-in at once and dagster-daemon in seconds; this is for a loaded machine.
DEADLINE_S = 180


def _cmdline(process: psutil.Process) -> str:
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return f"pid {process.pid} (ended)"


def _start(command: list[str], **kwargs) -> tuple[subprocess.Popen, float]:
    """The supervisor of `command`, as ImportDaemon.start starts it (a new process group, the lease on stdin)."""
    supervisor = subprocess.Popen(supervised(command), stdin=subprocess.PIPE, start_new_session=True, **kwargs)
    return supervisor, psutil.Process(supervisor.pid).create_time()


def _wait_for_members(group: int, started: float, what: str, found) -> list[psutil.Process]:
    """Poll the group until `found(its command lines)`; AssertionError naming `what` past DEADLINE_S."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        members = group_members(group, started)
        if found([_cmdline(member) for member in members]):
            return members
        time.sleep(0.2)
    raise AssertionError(
        f"waited {DEADLINE_S} s for {what}; the group: {[_cmdline(m) for m in group_members(group, started)]}"
    )


def _assert_group_ends(group: int, started: float, what: str) -> None:
    """Wait (on the processes themselves) for every member of the group to end, at most DEADLINE_S."""
    deadline = time.monotonic() + DEADLINE_S
    while members := group_members(group, started):
        if time.monotonic() > deadline:
            left = [_cmdline(member) for member in members]
            raise AssertionError(
                f"{what}: {len(left)} processes of its group still running after {DEADLINE_S} s: {left}"
            )
        psutil.wait_procs(members, timeout=max(deadline - time.monotonic(), 0.1))


def _kill_group(group: int, started: float) -> None:
    for member in group_members(group, started):
        try:
            member.kill()
        except psutil.Error:
            pass


def test_kill_9_of_the_supervisor_takes_its_command_with_it():
    command = [sys.executable, "-c", "import time; time.sleep(600)"]  # stands in for dagster-daemon
    supervisor, started = _start(command)
    try:
        _wait_for_members(supervisor.pid, started, "the supervised command", lambda lines: len(lines) == 2)
        supervisor.kill()
        supervisor.wait()
        _assert_group_ends(supervisor.pid, started, "the supervisor was killed")
    finally:
        _kill_group(supervisor.pid, started)
        supervisor.stdin.close()


@pytest.mark.slow  # dagster-daemon and its code server start, then stop: 10-20 s on a quiet two-core machine
def test_kill_9_of_the_supervisor_takes_dagster_daemon_and_its_code_server_with_it(tmp_path, monkeypatch):
    from kernelindex_pipeline.defs.instance import local_instance
    from kernelindex_pipeline.defs.run_control import dagster_tool, workspace_file

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with local_instance(home):  # the project's dagster.yaml, as the import commands make it
        pass
    workspace = workspace_file(home)
    daemon = [dagster_tool("dagster-daemon"), "run", "-w", str(workspace)]  # what ImportDaemon runs
    with (home / "daemon.log").open("wb") as log:
        supervisor, started = _start(daemon, env=dict(os.environ), cwd=workspace.parent, stdout=log, stderr=log)
    try:
        _wait_for_members(
            supervisor.pid,
            started,
            "dagster-daemon's code server",
            lambda lines: (
                any(" api grpc " in line for line in lines) and any("dagster-daemon run" in line for line in lines)
            ),
        )
        supervisor.kill()  # kill -9 of the supervisor alone: the command holding its lease lives on
        supervisor.wait()
        _assert_group_ends(supervisor.pid, started, "the supervisor was killed")
    finally:
        _kill_group(supervisor.pid, started)
        supervisor.stdin.close()
