"""One script as a process: started through the launcher (contain.py) in its own process group, its
log capped, waited for up to its timeout, stopped with everything it started; then what the launcher
had to do beyond running it, as outcome problems."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from . import contain


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


def run_problems(run: ScriptRun) -> list[dict]:
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
