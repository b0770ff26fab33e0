"""`kernelindex-pipeline serve` as a real process: the site's files over HTTP on loopback, nothing else."""

from __future__ import annotations

import http.client
import queue
import subprocess
import threading

import pytest

from tests.support.cli_process import CLI, run_cli

DEADLINE_S = 60  # generous: a loaded machine starts Python slowly


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    (root / "kernels").mkdir(parents=True)
    (root / "index.html").write_text("<h1>catalogue</h1>")
    (root / "kernels" / "rms-norm.html").write_text("rms_norm")
    (tmp_path / "secret.txt").write_text("not the site's")
    (root / "leak").symlink_to(tmp_path / "secret.txt")
    return root


@pytest.fixture
def server(site):
    process = subprocess.Popen(
        [*CLI, "serve", "--dir", str(site), "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout], daemon=True).start()
    try:
        first = lines.get(timeout=DEADLINE_S)
    except queue.Empty:
        process.kill()
        pytest.fail(f"serve printed no 'serving ... at URL' line within {DEADLINE_S} s: {process.stderr.read()}")
    assert first.startswith(f"serving {site} at http://127.0.0.1:"), first
    port = int(first.split("http://127.0.0.1:")[1].split("/")[0])
    yield port
    process.terminate()
    process.wait(timeout=DEADLINE_S)


def _get(port: int, path: str, method: str = "GET") -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE_S)
    connection.request(method, path)
    response = connection.getresponse()
    body = response.read().decode("utf-8", "replace")
    connection.close()
    return response.status, body


def test_the_site_is_served_and_nothing_else(server):
    assert _get(server, "/") == (200, "<h1>catalogue</h1>")
    assert _get(server, "/kernels/rms-norm.html") == (200, "rms_norm")
    assert _get(server, "/kernels/")[0] == 404  # no folder listing
    assert _get(server, "/../secret.txt")[0] == 404  # outside the folder
    assert _get(server, "/%2e%2e/secret.txt")[0] == 404
    status, body = _get(server, "/leak")  # a link in the folder to a file outside it
    assert status == 404 and "not the site's" not in body
    assert _get(server, "/", method="POST")[0] == 501


def test_a_folder_without_a_site_is_one_clear_error(tmp_path):
    done = run_cli("serve", "--dir", str(tmp_path), "--port", "0")
    assert done.returncode == 1
    assert f"no site in {tmp_path} (no index.html)" in done.stderr and "kernelindex-pipeline site" in done.stderr
