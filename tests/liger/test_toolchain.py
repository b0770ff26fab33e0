"""The toolchain timeline file (data/toolchain-timeline.yaml) as input: checked on load, a damaged file is
one line naming the file and the entry (issue 31 item 13); its refresh against a bad package index: one
deadline, one line, nothing written (item 14)."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import threading
import types
from importlib import resources

import pytest

from kernelindex_pipeline.liger import toolchain
from tests.support import ROOT

SHIPPED = resources.files("kernelindex_pipeline.data").joinpath(toolchain.TIMELINE_FILE).read_text("utf-8")
TORCH_101 = "  - version: 1.0.1\n    released: '2019-02-05T00:38:13Z'\n"  # the second torch entry
REBUILD = "; rebuild it: bash scripts/refresh_toolchain_timeline"


def _damaged(old: str, new: str) -> str:
    assert SHIPPED.count(old) == 1
    return SHIPPED.replace(old, new)


DAMAGES = {
    "a month 13": (
        _damaged(TORCH_101, TORCH_101.replace("2019-02-05", "2019-13-05")),
        "packages.torch[1] (torch 1.0.1): released: '2019-13-05T00:38:13Z' is not an ISO 8601 time: month must be in 1..12",
    ),
    "not a time": (
        _damaged(TORCH_101, TORCH_101.replace("'2019-02-05T00:38:13Z'", "soon")),
        "packages.torch[1] (torch 1.0.1): released: 'soon' is not an ISO 8601 time: Invalid isoformat string: 'soon'",
    ),
    "a time without its zone": (
        _damaged(TORCH_101, TORCH_101.replace("00:38:13Z", "00:38:13")),
        "packages.torch[1] (torch 1.0.1): released: '2019-02-05T00:38:13' is not an ISO 8601 time: "
        "'2019-02-05T00:38:13' has no UTC offset (write it as YYYY-MM-DDTHH:MM:SSZ)",
    ),
    "Invalid version: 'banana'": (
        _damaged(TORCH_101, TORCH_101.replace("1.0.1", "banana")),
        "packages.torch[1] (torch banana): version: 'banana' is not a version (PEP 440)",
    ),
    "a version YAML reads as a number": (
        _damaged(TORCH_101, TORCH_101.replace("1.0.1", "2.10")),  # unquoted: the float 2.1
        "packages.torch[1]: version: Input should be a valid string",
    ),
    "a time of the wrong type": (
        _damaged(TORCH_101, TORCH_101.replace("'2019-02-05T00:38:13Z'", "20190205")),
        "packages.torch[1] (torch 1.0.1): released: Input should be a valid string",
    ),
    "an entry that is not a mapping": (
        _damaged(TORCH_101, "  - 1.0.1\n"),
        "packages.torch[1]: Input should be a valid dictionary or instance of _Release",
    ),
    "packages as a list": (
        _damaged("packages:\n  torch:\n", "packages:\n- torch:\n"),
        "packages: Input should be a valid dictionary",
    ),
    "missing key 'released'": (
        _damaged(TORCH_101, "  - version: 1.0.1\n"),
        "packages.torch[1] (torch 1.0.1): no `released`",
    ),
    "a misspelt key": (
        _damaged(TORCH_101, TORCH_101.replace("released:", "relased:")),
        "packages.torch[1] (torch 1.0.1): no `released` (and 1 more problem)",
    ),
    "a version listed twice": (
        _damaged(TORCH_101, TORCH_101.replace("1.0.1", "1.0.0")),
        "packages.torch[1] (torch 1.0.0): listed twice",
    ),
    "no packages": ("refreshed: '2026-12-01T17:20:21Z'\n", "the timeline: no `packages`"),
    "a key of its own": (SHIPPED + "notes: hand-edited\n", "the timeline: `notes` is not a key of the timeline"),
    "an empty file": ("", "not a timeline (a YAML mapping with `packages`)"),
    "not YAML": (
        SHIPPED + "packages: [\n",
        "not YAML (expected the node content, but found '<stream end>' at line 596, column 1)",
    ),
}


@pytest.fixture
def shipped_file(tmp_path, monkeypatch):
    """Where packaged_timeline reads the package data from, made a file of this test's."""
    path = tmp_path / toolchain.TIMELINE_FILE
    monkeypatch.setattr(toolchain, "resources", types.SimpleNamespace(files=lambda package: tmp_path))
    return path


def test_the_shipped_timeline_loads():
    timeline = toolchain.packaged_timeline()
    assert timeline.packages == ("torch", "transformers") and timeline.newest_at("torch", 1.6e9)[0] == "1.6.0"


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_timeline_is_one_line_naming_the_file_and_the_entry(damage, shipped_file):
    text, problem = DAMAGES[damage]
    shipped_file.write_text(text)
    with pytest.raises(ValueError) as raised:  # at load: not later, deep in a detection
        toolchain.packaged_timeline()
    assert str(raised.value) == f"{shipped_file}: {problem}{REBUILD}"


# --- issue 31 item 14: scripts/refresh_toolchain_timeline against a bad index ------------------------------
PYPI_DOCUMENT = json.dumps(
    {
        "info": {"name": "torch"},
        "releases": {
            "2.5.1": [{"upload_time_iso_8601": "2024-10-29T17:29:05.593133Z", "yanked": False}],
            "2.6.0": [{"upload_time_iso_8601": "2025-01-29T17:24:51.123456Z", "yanked": False}],
            "2.7.0rc1": [{"upload_time_iso_8601": "2025-03-01T00:00:00.000000Z", "yanked": False}],
        },
    }
).encode()


class _Index(http.server.BaseHTTPRequestHandler):
    """A package index at its worst, by the first part of the path."""

    release: threading.Event  # set when the test is done: a trickle stops

    def do_GET(self):
        kind = self.path.split("/")[1]
        bodies = {
            "ok": PYPI_DOCUMENT,
            "html": b"<!doctype html><html><body>Service Unavailable</body></html>",
            "month13": PYPI_DOCUMENT.replace(b"2025-01-29T", b"2025-13-29T"),
            "list": json.dumps({"releases": [{"version": "2.5.1"}]}).encode(),
        }
        if kind == "500":
            self.send_error(500)
        elif kind in bodies:
            self._send(bodies[kind])
        elif kind == "trickle":  # a body of a byte every 2 s
            self.send_response(200)
            self.send_header("Content-Length", str(len(PYPI_DOCUMENT)))
            self.end_headers()
            for byte in PYPI_DOCUMENT:
                if self.release.wait(2.0) or not self._write(bytes([byte])):
                    return
        elif kind == "slow":  # a whole document, its first six bytes a quarter of a second apart (1.5 s)
            body = b"      " + PYPI_DOCUMENT
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            for byte in body[:6]:
                if self.release.wait(0.25) or not self._write(bytes([byte])):
                    return
            self._write(body[6:])

    def _send(self, body: bytes) -> None:
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except OSError:
            return False

    def log_message(self, *args):
        pass


@pytest.fixture
def index():
    _Index.release = threading.Event()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Index)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    _Index.release.set()
    httpd.shutdown()
    httpd.server_close()


WAIT_S = 60.0  # generous: what a refresh that ends at its deadline (1-2 s here) must end within


def _refresh(packages, index_url, deadline_s):
    """refresh() in a thread, awaited at most WAIT_S: (the timeline or the exception it raised)."""
    outcome = []
    worker = threading.Thread(
        target=lambda: outcome.append(_outcome(toolchain.refresh, packages, index=index_url, deadline_s=deadline_s)),
        daemon=True,
    )
    worker.start()
    worker.join(WAIT_S)
    assert outcome, f"the refresh was still running {WAIT_S:g} s after it started (deadline {deadline_s} s)"
    return outcome[0]


def _outcome(function, *args, **kwargs):
    try:
        return function(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the test looks at what it is
        return error


BAD_INDEXES = {
    "500": "{url}: HTTP 500 Internal Server Error",
    "html": "{url}: not JSON (Expecting value: line 1 column 1 (char 0)); is it PyPI's JSON API?",
    "month13": "{url}: not PyPI's JSON API (releases['2.6.0'][0]['upload_time_iso_8601']: "
    "'2025-13-29T17:24:51.123456Z' is not an ISO 8601 time: month must be in 1..12)",
    "list": "{url}: not PyPI's JSON API (releases: Input should be a valid dictionary)",
    "trickle": "{url}: the refresh did not finish within 1 s (0 bytes received); is the server stalling?",
}


@pytest.mark.parametrize("kind", sorted(BAD_INDEXES))
def test_a_bad_index_is_one_line_naming_the_url(kind, index):
    error = _refresh(("torch",), f"{index}/{kind}/pypi/{{name}}/json", deadline_s=1.0)
    assert isinstance(error, toolchain.ToolchainRefreshError), error
    assert str(error) == BAD_INDEXES[kind].format(url=f"{index}/{kind}/pypi/torch/json")


def test_one_deadline_covers_the_whole_refresh(index):
    # Each package's document takes the server 1.5 s: under a deadline per download both would come in
    # 2 s; under one for the refresh the second cannot.
    error = _refresh(("torch", "transformers"), f"{index}/slow/pypi/{{name}}/json", deadline_s=2.0)
    assert isinstance(error, toolchain.ToolchainRefreshError), error
    assert str(error).startswith(f"{index}/slow/pypi/transformers/json: the refresh did not finish within 2 s")


def test_a_refresh_gives_the_final_releases_and_a_timeline_the_loader_reads(index):
    timeline = _refresh(("torch",), f"{index}/ok/pypi/{{name}}/json", deadline_s=WAIT_S)
    assert not isinstance(timeline, Exception), timeline
    assert timeline._releases == {"torch": [("2.5.1", "2024-10-29T17:29:05Z"), ("2.6.0", "2025-01-29T17:24:51Z")]}
    assert toolchain.ToolchainTimeline.from_yaml(timeline.to_yaml())._releases == timeline._releases


@pytest.mark.parametrize("kind", ["500", "month13", "trickle"])
def test_the_script_against_a_bad_index_prints_one_line_and_writes_nothing(kind, index, tmp_path):
    out = tmp_path / toolchain.TIMELINE_FILE
    out.write_text("the timeline as it was\n")
    url = f"{index}/{kind}/pypi/{{name}}/json"
    completed = _script("torch", "--index", url, "--deadline", "1", "--out", str(out))
    assert completed.returncode == 1 and completed.stdout == ""
    expected = BAD_INDEXES[kind].format(url=url.format(name="torch"))
    assert completed.stderr == f"refresh_toolchain_timeline: error: {expected}; {out} is unchanged\n"
    assert out.read_text() == "the timeline as it was\n" and os.listdir(tmp_path) == [out.name]


def test_the_script_writes_a_timeline_the_loader_reads(index, tmp_path):
    out = tmp_path / toolchain.TIMELINE_FILE
    completed = _script("torch", "--index", f"{index}/ok/pypi/{{name}}/json", "--out", str(out))
    assert (completed.returncode, completed.stderr) == (0, "")
    assert completed.stdout == f"{out}: torch 2 releases\n"
    assert toolchain.load_timeline(out).newest_at("torch", 1.75e9) == ("2.6.0", "2025-01-29T17:24:51Z")


def _script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(ROOT / "scripts" / "refresh_toolchain_timeline"), *args],
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
