"""Support for the browser test: `dagster dev` in its own process group, its GraphQL API, Chromium, screenshots.

Nothing here knows the test's scenario; tests/test_ui_browser.py says what is clicked and what is asserted.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import psutil
import requests

from tests.support import ROOT, TESTS
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: F401 (re-exported: the UI tests' screenshots)

REPO_ROOT = ROOT
ARTIFACTS = TESTS / "artifacts" / "ui"

T = TypeVar("T")


def progress(message: str) -> None:
    """One timestamped progress line (shown with `pytest -s`, and in the captured output of a failure)."""
    print(f"[ui-test {time.strftime('%H:%M:%S')}] {message}", flush=True)


def free_port() -> int:
    """A TCP port on loopback that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(
    what: str,
    probe: Callable[[], T | None],
    timeout_s: float,
    interval_s: float = 2.0,
    on_timeout: Callable[[], str] = lambda: "",
) -> T:
    """Call `probe` until it returns something other than None; fail naming `what` after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = probe()
        if result is not None:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up after {timeout_s:.0f}s waiting for {what}. {on_timeout()}")
        time.sleep(interval_s)


class ServerError(RuntimeError):
    pass


class DagsterDevServer:
    """`dagster dev -w workspace.yaml` on loopback, started from the repository root in a process group of its
    own, so that stopping it also stops the webserver, the daemon, the code servers and the runs they launched."""

    def __init__(self, home: Path, port: int, env: dict[str, str], log_path: Path) -> None:
        self.home = home
        self.port = port
        self.env = env
        self.log_path = log_path
        self.url = f"http://127.0.0.1:{port}"
        self.process: subprocess.Popen | None = None
        self._session = requests.Session()

    def start(self) -> None:
        dagster = Path(sys.executable).with_name("dagster")
        command = [str(dagster), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(self.port)]
        progress(f"starting {' '.join(command)} (DAGSTER_HOME={self.home}, log {self.log_path})")
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                command,
                cwd=REPO_ROOT,
                env={**self.env, "DAGSTER_HOME": str(self.home)},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() signals the whole group
            )

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text("utf-8", errors="replace")
        except OSError as error:
            return f"(no server log: {error})"
        return "\n".join(text.splitlines()[-lines:])

    def _failure(self, message: str) -> ServerError:
        return ServerError(f"{message}\n--- last lines of {self.log_path} ---\n{self.log_tail()}")

    def graphql(self, query: str, variables: dict[str, Any] | None = None, timeout_s: float = 30) -> dict[str, Any]:
        """The `data` of a GraphQL response; GraphQL errors raise with the query's first line."""
        response = self._session.post(
            f"{self.url}/graphql", json={"query": query, "variables": variables or {}}, timeout=timeout_s
        )
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise ServerError(f"GraphQL errors for {query.strip().splitlines()[0]!r}: {body['errors']}")
        return body["data"]

    def wait_until_loaded(self, timeout_s: float = 240) -> None:
        """Until the webserver answers and every code location of the workspace is loaded without error."""

        def probe():
            if self.process is not None and self.process.poll() is not None:
                raise self._failure(f"dagster dev exited with status {self.process.returncode} before it was ready")
            try:
                data = self.graphql(LOCATIONS_QUERY, timeout_s=10)
            except (requests.RequestException, ValueError):
                return None  # not listening yet
            entries = data["workspaceOrError"].get("locationEntries")
            if not entries:
                return None
            for entry in entries:
                load = entry.get("locationOrLoadError") or {}
                if load.get("__typename") == "PythonError":
                    raise self._failure(f"code location {entry['name']} failed to load: {load.get('message')}")
            if all(entry["loadStatus"] == "LOADED" and entry.get("locationOrLoadError") for entry in entries):
                return [entry["name"] for entry in entries]
            return None

        started = time.monotonic()
        names = wait_for(
            "the code location to load",
            probe,
            timeout_s,
            on_timeout=lambda: str(self._failure("the server never reported a loaded code location")),
        )
        progress(f"code location(s) {', '.join(names)} loaded after {time.monotonic() - started:.0f}s")

    def stop(self, grace_s: float = 15) -> None:
        """SIGTERM to the whole process group, SIGKILL to whatever is left after `grace_s`; also kills, by pid,
        any descendant that left the group (a run process that started a session of its own)."""
        if self.process is None:
            return
        pgid = self.process.pid  # start_new_session: the leader's pid is the group id
        try:
            descendants = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            descendants = []
        started = time.monotonic()
        _signal_group(pgid, signal.SIGTERM)
        try:
            self.process.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(pgid, signal.SIGKILL)  # the leader may have exited while members of its group have not
        self.process.wait()
        for child in descendants:
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(descendants, timeout=5)
        progress(f"dagster dev stopped in {time.monotonic() - started:.1f}s (exit status {self.process.returncode})")


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass  # the group is already gone


LOCATIONS_QUERY = """
query Locations {
  workspaceOrError {
    __typename
    ... on Workspace {
      locationEntries {
        name
        loadStatus
        locationOrLoadError { __typename ... on PythonError { message } }
      }
    }
  }
}
"""

RUNS_QUERY = """
query Runs {
  runsOrError(limit: 100) {
    __typename
    ... on Runs { results { runId jobName status startTime endTime tags { key value } } }
    ... on PythonError { message }
  }
}
"""

BACKFILLS_QUERY = """
query Backfills {
  partitionBackfillsOrError(limit: 20) {
    __typename
    ... on PartitionBackfills { results { id status numPartitions partitionNames } }
    ... on PythonError { message }
  }
}
"""

MATERIALIZATIONS_QUERY = """
query Materializations($assetKey: AssetKeyInput!) {
  assetOrError(assetKey: $assetKey) {
    __typename
    ... on Asset { assetMaterializations { partition runId } }
  }
}
"""

CHECK_EXECUTIONS_QUERY = """
query CheckExecutions($assetKey: AssetKeyInput!, $checkName: String!) {
  assetCheckExecutions(assetKey: $assetKey, checkName: $checkName, limit: 100) { partition status runId }
}
"""

RUN_TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}
BACKFILL_TERMINAL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"}


def runs(server: DagsterDevServer) -> list[dict[str, Any]]:
    """Every run of the instance as {runId, jobName, status, startTime, endTime (epoch seconds), tags: {key: value}}."""
    result = server.graphql(RUNS_QUERY)["runsOrError"]
    if result["__typename"] != "Runs":
        raise ServerError(f"runsOrError: {result}")
    return [{**run, "tags": {tag["key"]: tag["value"] for tag in run["tags"]}} for run in result["results"]]


def backfills(server: DagsterDevServer) -> list[dict[str, Any]]:
    result = server.graphql(BACKFILLS_QUERY)["partitionBackfillsOrError"]
    if result["__typename"] != "PartitionBackfills":
        raise ServerError(f"partitionBackfillsOrError: {result}")
    return result["results"]


def _path(asset: str | list[str]) -> list[str]:
    return [asset] if isinstance(asset, str) else list(asset)


def materialized_partitions(server: DagsterDevServer, asset: str | list[str]) -> list[str]:
    """The partition of every materialization event of `asset` (a name or a key path; one entry per event)."""
    result = server.graphql(MATERIALIZATIONS_QUERY, {"assetKey": {"path": _path(asset)}})["assetOrError"]
    if result["__typename"] != "Asset":
        return []  # AssetNotFoundError: never materialized
    return [event["partition"] for event in result["assetMaterializations"]]


def check_executions(server: DagsterDevServer, asset: str | list[str], check: str) -> list[dict[str, Any]]:
    return server.graphql(CHECK_EXECUTIONS_QUERY, {"assetKey": {"path": _path(asset)}, "checkName": check})[
        "assetCheckExecutions"
    ]


class Screenshots:
    """Numbered full-page screenshots of each step: ARTIFACTS/01-<step>.png, 02-<step>.png, ..."""

    def __init__(self, page, directory: Path = ARTIFACTS) -> None:
        self.page = page
        self.directory = directory
        self.count = 0
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob("[0-9][0-9]-*.png"):  # no pictures of an earlier run among this run's
            stale.unlink(missing_ok=True)

    def take(self, step: str) -> Path:
        self.count += 1
        path = self.directory / f"{self.count:02d}-{step}.png"
        # Finite CSS animations fast-forwarded: a dialog is shown opened, not half faded in.
        self.page.screenshot(path=str(path), full_page=True, animations="disabled")
        progress(f"screenshot {path.relative_to(REPO_ROOT) if path.is_relative_to(REPO_ROOT) else path}")
        return path
