"""Dagster run control for the import commands: launch a run the way the UI does, follow it to its end,
keep a daemon serving the queue (defs/import_daemon.py), and wait for the catalogue automation's refresh.

`dagster job launch -w workspace.yaml` creates the run with the code location's origin (so it is listed
under its job), the instance's queue runs it through `dagster-daemon` (the one `dagster dev` runs, else
one started here for the duration), and `follow` reads the run's event log: a progress step per
partition and stage, the summary from the publication step's per-partition lines. The catalogue
automation's refresh of the catalogue-wide assets is waited for only when asked (`--wait`); otherwise it
comes on its own on the daemon.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dagster import DagsterEventType, DagsterInstance, DagsterRunStatus, RunsFilter

from kernelindex_pipeline.defs.chain import parse_progress
from kernelindex_pipeline.defs.daemon_supervisor import supervised
from kernelindex_pipeline.defs.import_daemon import ImportDaemon, fail_if_worker_died, utc
from kernelindex_pipeline.defs.import_plan import AfterImport, after_import, stale_since
from kernelindex_pipeline.defs.import_summary import (
    ImportSummary,
    PartitionOutcome,
    Progress,
    automation_stopped_line,
    on_its_own_line,
    refresh_line,
    refresh_progress_line,
    unchanged_line,
    waiting_line,
)
from kernelindex_pipeline.home import DAGSTER_HOME_ENV

REPO_ROOT = Path(__file__).resolve().parents[2]
LOCATION = "kernelindex_pipeline"  # workspace.yaml's location_name
MAX_RUNTIME_TAG = "dagster/max_runtime"  # seconds; Dagster's run monitoring fails a run that runs longer
TERMINAL = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
# Deadlines that must stay are generous (a loaded 2-core machine is slow, not stuck) and their expiry says
# what was awaited. Everything else waits on events: run status, the event log, the daemon's process.
LAUNCH_TIMEOUT_S = 900  # `dagster job launch`: loads the code location, then creates and queues the run
AUTOMATION_WAIT_S = 300  # the catalogue automation (ticks every 30 s) picking up the publications
IMPORT_MAX_RUNTIME_S = 4 * 3600  # an import run still going after this is wedged (the whole history: minutes)
AUTOMATION_SENSOR = "catalogue_automation"  # definitions.py's AutomationConditionSensorDefinition
WORKER_CHECK_S = 10  # how often a followed run's worker process is checked for life


class LaunchError(RuntimeError):
    """A run could not be launched or did not end: names the run and where its log is."""


def workspace_file(home: Path) -> Path:
    """The repository's workspace.yaml; for an installed package without it, an equivalent under DAGSTER_HOME."""
    ours = REPO_ROOT / "workspace.yaml"
    if ours.is_file():
        return ours
    generated = home / "workspace.yaml"
    generated.write_text(
        "load_from:\n  - python_module:\n      module_name: kernelindex_pipeline.definitions\n"
        f"      attribute: defs\n      location_name: {LOCATION}\n"
    )
    return generated


def dagster_tool(name: str) -> str:
    """A Dagster executable of this environment, found next to the running interpreter."""
    return str(Path(sys.executable).with_name(name))


def ui_hint(home: Path) -> str:
    return f"DAGSTER_HOME={home} {dagster_tool('dagster')} dev -w {workspace_file(home)}"


def launch(
    instance: DagsterInstance,
    home: Path,
    job: str,
    tags: dict[str, str],
    verbose: bool,
    timeout_s: float = LAUNCH_TIMEOUT_S,
    run_config: dict | None = None,
) -> str:
    """Submit one run of `job` to the instance's queue, with `run_config` as the Launchpad's YAML would give it;
    return its run id. A launch that outlives its deadline is stopped; the run is still followed when it was
    created, else a LaunchError says so."""
    run_id = str(uuid.uuid4())
    with tempfile.TemporaryDirectory() as folder:
        config_args: list[str] = []
        if run_config is not None:
            # a file, not --config-json: a run config may hold a credential, and argv is visible to every user
            config_file = Path(folder) / "run_config.yaml"  # JSON, which is YAML
            config_file.write_text(json.dumps(run_config), encoding="utf-8")
            config_args = ["-c", str(config_file)]
        return _launch(instance, home, job, tags, verbose, timeout_s, run_id, config_args)


def _launch(
    instance: DagsterInstance,
    home: Path,
    job: str,
    tags: dict[str, str],
    verbose: bool,
    timeout_s: float,
    run_id: str,
    config_args: list[str],
) -> str:
    command = [
        dagster_tool("dagster"),
        "job",
        "launch",
        "-w",
        str(workspace_file(home)),
        "-j",
        job,
        "--tags",
        json.dumps({**tags, MAX_RUNTIME_TAG: str(IMPORT_MAX_RUNTIME_S)}),
        "--run-id",
        run_id,
        *config_args,
    ]
    # Under the supervisor, like the daemon: a kill -9 of this command stops the launch and its code server
    # too (an orphaned launch used to queue its run after the command was gone).
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            supervised(command),
            env={**os.environ, DAGSTER_HOME_ENV: str(home)},
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        try:
            returncode = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            process.stdin.close()  # ends the lease: the supervisor stops whatever is left of the launch
            process.wait()
        out.seek(0)
        err.seek(0)
        completed = subprocess.CompletedProcess(
            command, returncode, out.read().decode(errors="replace"), err.read().decode(errors="replace")
        )
    if returncode is None:
        if instance.get_run_by_id(run_id) is not None:
            return run_id  # it was queued; only the launcher's own exit was slow
        raise LaunchError(
            f"dagster job launch {job} did not return within {timeout_s:g}s and created no run "
            "(the machine may be overloaded); run the command again"
        )
    if verbose:
        sys.stderr.write(completed.stdout + completed.stderr)
    if completed.returncode != 0:
        tail = (completed.stderr or completed.stdout).strip().splitlines()[-5:]
        raise LaunchError(f"dagster job launch {job} failed (exit {completed.returncode}): {' / '.join(tail)}")
    return run_id


def _failure_reason(instance: DagsterInstance, run_id: str) -> str:
    logs = list(reversed(instance.all_logs(run_id)))
    for entry in logs:
        event = entry.dagster_event
        if event is not None and event.event_type_value == "STEP_FAILURE":
            error = event.event_specific_data.error
            while error is not None and error.cause is not None:  # the user code's own error, not Dagster's wrapper
                error = error.cause
            return f"{event.step_key}: {error.message.strip().splitlines()[0] if error else 'failed'}"
    for entry in logs:  # no step failed: the run's own failure (run monitoring's reason, a dead worker's)
        event = entry.dagster_event
        if event is not None and event.event_type_value in ("RUN_FAILURE", "RUN_CANCELED") and entry.message:
            return entry.message.strip().splitlines()[0]
    return "see the run's event log in the UI"


def follow(
    instance: DagsterInstance,
    run_id: str,
    summary: ImportSummary,
    progress: Progress,
    verbose: bool,
    daemon: ImportDaemon,
    log: Callable[[str], None],
) -> None:
    """Until the run ends: feed its progress lines to `progress` and `summary` (and print its events with -v)."""
    seen = 0
    checked = time.monotonic()
    while True:
        run = instance.get_run_by_id(run_id)
        logs = instance.all_logs(run_id)
        for entry in logs[seen:]:
            if verbose:
                log(f"  {entry.dagster_event.event_type_value if entry.dagster_event else 'LOG'}: {entry.message}")
            parsed = parse_progress(entry.user_message or "")
            if parsed:
                stage, key, info = parsed
                outcome = None
                if stage == "catalogue_publication":
                    outcome = summary.outcomes[key] = PartitionOutcome(key, info)
                progress.step(stage, outcome)
        seen = len(logs)
        if run is not None and run.status in TERMINAL:
            if run.status is not DagsterRunStatus.SUCCESS:
                summary.failed_runs[run_id] = _failure_reason(instance, run_id)
            return
        if daemon.exited() is not None:
            raise LaunchError(
                f"dagster-daemon exited with status {daemon.exited()} while run {run_id} was "
                f"{run.status.value if run else 'unknown'}; its log: {daemon.log_path}"
            )
        if time.monotonic() - checked > WORKER_CHECK_S:
            checked = time.monotonic()
            daemon.serve()  # the daemon we used (another command's, `dagster dev`'s) is gone: serve the queue ourselves
            died = fail_if_worker_died(instance, run_id)
            if died:
                log(died)
        time.sleep(0.5)


@dataclass
class Refresh:
    """The catalogue automation's refresh of the catalogue-wide assets: its run and, if it did not succeed, why."""

    run_id: str = ""
    problem: str = ""


def wait_for_catalogue_refresh(
    instance: DagsterInstance,
    since: float,
    deadline_s: float = AUTOMATION_WAIT_S,
    progress: Callable[[str], None] = lambda line: None,
) -> Refresh:
    """The automation's refresh run of the catalogue-wide assets created after `since`, once it ended;
    `progress` gets a line per asset it refreshed."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        for record in instance.get_run_records(RunsFilter(created_after=utc(since)), limit=20):
            run = record.dagster_run
            if run.asset_selection and any(
                key.path[0] in ("catalogue_export", "catalogue_report") for key in run.asset_selection
            ):
                return _refresh_outcome(instance, run.run_id, progress)
        time.sleep(1)
    return Refresh(
        problem=f"the catalogue automation launched no refresh of the catalogue-wide assets within "
        f"{deadline_s:g}s of the publication; `dagster dev -w workspace.yaml` refreshes them"
    )


def automation_stopped(instance: DagsterInstance) -> bool:
    """Whether someone stopped the catalogue automation (it is on by default; a stopped one has a stored state)."""
    return any(state.name == AUTOMATION_SENSOR and not state.is_running for state in instance.all_instigator_state())


def _refresh_outcome(instance: DagsterInstance, run_id: str, progress: Callable[[str], None]) -> Refresh:
    total = len(instance.get_run_by_id(run_id).asset_selection or ())
    checked, done = time.monotonic(), 0
    while True:
        run = instance.get_run_by_id(run_id)  # read before the events: none of a finished run is missed
        for entry in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)[done:]:
            done += 1
            progress(refresh_progress_line(run_id, done, total, entry.dagster_event.asset_key.to_user_string()))
        if run.status in TERMINAL:
            break
        if time.monotonic() - checked > WORKER_CHECK_S:
            checked = time.monotonic()
            fail_if_worker_died(instance, run_id)
        time.sleep(0.5)
    if run.status is DagsterRunStatus.SUCCESS:
        return Refresh(run_id)
    return Refresh(
        run_id, f"catalogue refresh run {run_id} {run.status.value.lower()}: {_failure_reason(instance, run_id)}"
    )


def queue_daemon(instance: DagsterInstance, home: Path, verbose: bool, log: Callable[[str], None]) -> ImportDaemon:
    """The daemon serving this command's runs (its own, another command's or `dagster dev`'s); leaving it waits for every run it launched (an automation
    run, another command's) to end."""
    workspace = workspace_file(home)
    command = [dagster_tool("dagster-daemon"), "run", "-w", str(workspace)]
    return ImportDaemon(instance, home, verbose, log, command, cwd=workspace.parent)


def run_import(
    instance: DagsterInstance,
    home: Path,
    *,
    summary: ImportSummary,
    job: str,
    run_tags: list[dict[str, str]],
    verbose: bool = False,
    wait: bool = False,
    log: Callable[[str], None] = print,
    report: Callable[[ImportSummary], None] = lambda summary: None,
) -> ImportSummary:
    """Launch one run per entry of `run_tags`, follow them to the end and `report` the summary; with `wait`,
    then wait for the catalogue automation's refresh of the catalogue-wide assets (else it comes on its own)."""
    started_wall, started = time.time(), time.perf_counter()
    with queue_daemon(instance, home, verbose, log) as daemon:
        progress = Progress(len(summary.partitions), f"{summary.source} import")
        try:
            for tags in run_tags:
                run_id = launch(instance, home, job, tags, verbose)
                summary.run_ids.append(run_id)
                follow(instance, run_id, summary, progress, verbose, daemon, log)
        finally:
            progress.close()
        summary.seconds = time.perf_counter() - started
        report(summary)
        published = bool(summary.outcomes)
        # Stale: this import added records, or an earlier one that did not wait left the refresh to come.
        since = started_wall if summary.new_records else _stale_since(instance, summary) if published else None
        stopped = published and automation_stopped(instance)
        step = after_import(published, since is not None, wait=wait, automation_stopped=stopped)
        _after_import(instance, summary, step, since, our_daemon=daemon.process is not None, log=log)
    return summary


def refresh_left_behind(
    instance: DagsterInstance, home: Path, summary: ImportSummary, *, verbose: bool, wait: bool, log: Callable
) -> None:
    """After an import that launched no run (every partition unchanged): a refresh an earlier import left to
    the automation may still be to come; with `wait` the command waits for it here too."""
    since = _stale_since(instance, summary)
    if since is None:
        return
    step = after_import(True, True, wait=wait, automation_stopped=automation_stopped(instance))
    if step is AfterImport.WAIT:
        with queue_daemon(instance, home, verbose, log):
            _after_import(instance, summary, step, since, our_daemon=False, log=log)
    else:
        _after_import(instance, summary, step, since, our_daemon=True, log=log)


def _after_import(
    instance: DagsterInstance,
    summary: ImportSummary,
    step: AfterImport,
    since: float | None,
    *,
    our_daemon: bool,
    log: Callable[[str], None],
) -> None:
    if step is AfterImport.AUTOMATION_STOPPED:
        log(automation_stopped_line(AUTOMATION_SENSOR))
    elif step is AfterImport.UNCHANGED:
        log(unchanged_line())
    elif step is AfterImport.ON_ITS_OWN:
        log(on_its_own_line(our_daemon=our_daemon))
    elif step is AfterImport.WAIT:
        log(waiting_line())
        refresh_started = time.perf_counter()
        refresh = wait_for_catalogue_refresh(instance, since, progress=log)
        summary.catalogue_run, summary.refresh_problem = refresh.run_id, refresh.problem
        log(refresh_line(refresh.run_id, refresh.problem, time.perf_counter() - refresh_started))


def _stale_since(instance: DagsterInstance, summary: ImportSummary) -> float | None:
    if not summary.catalogue_fingerprint:
        return None
    from kernelindex_pipeline.defs.sources import CHAINS

    return stale_since(instance, summary.catalogue_fingerprint, [chain.publication for chain in CHAINS.values()])
