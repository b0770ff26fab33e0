"""Liger CI files as a source: local paths and a loopback HTTP server (never the internet), size caps,
secrets redacted, rows sliced into the partitions their GPU and version name."""

from __future__ import annotations

import http.server
import shutil
import threading
from pathlib import Path

import pytest

from kernelindex_pipeline.liger import ci

FIXTURES = Path(__file__).parent / "fixtures" / "liger-ci"


@pytest.fixture
def server(tmp_path):
    """A loopback HTTP server over a copy of the fixture files."""
    root = tmp_path / "www"
    shutil.copytree(FIXTURES, root)
    handler = lambda *a, **kw: http.server.SimpleHTTPRequestHandler(*a, directory=str(root), **kw)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_url_and_a_path_give_the_same_bytes(server):
    by_url = ci.fetch(f"{server}/7644a0f.csv?token=s3cret")
    by_path = ci.fetch(str(FIXTURES / "7644a0f.csv"))
    assert by_url.data == by_path.data == (FIXTURES / "7644a0f.csv").read_bytes()
    assert by_url.locator == f"{server}/7644a0f.csv?token=***" and "s3cret" not in by_url.locator


def test_bad_locators_are_named_and_redacted(server, tmp_path):
    with pytest.raises(ci.CiSourceError, match=r"HTTP 404") as missing:
        ci.fetch(f"http://user:hunter2@127.0.0.1:{server.rsplit(':', 1)[1]}/nope.csv?sig=abc")
    assert "hunter2" not in str(missing.value) and "abc" not in str(missing.value) and "***@127.0.0.1" in str(missing.value)
    with pytest.raises(ci.CiSourceError, match="more than the 100-byte limit"):
        ci.fetch(f"{server}/7644a0f.csv", max_bytes=100)
    with pytest.raises(ci.CiSourceError, match="more than the 100-byte limit"):
        ci.fetch(str(FIXTURES / "7644a0f.csv"), max_bytes=100)
    with pytest.raises(ci.CiSourceError, match="plain http is only allowed to a loopback host"):
        ci.fetch("http://example.com/benchmark.csv")
    with pytest.raises(ci.CiSourceError, match="unsupported locator scheme 'ftp'"):
        ci.fetch("ftp://example.com/benchmark.csv")
    with pytest.raises(ci.CiSourceError, match="no such file"):
        ci.fetch(str(tmp_path / "absent.csv"))
    with pytest.raises(ci.CiSourceError, match=r"download failed \(ConnectionError\)"):
        ci.fetch("http://127.0.0.1:9/benchmark.csv?token=s3cret")


def test_files_are_gathered_per_partition_in_file_order():
    files = [ci.fetch(str(FIXTURES / name)) for name in ("7644a0f-v0.7.0.csv", "0701bab.csv", "7644a0f.csv")]
    gathered = ci.gather(files)
    assert set(gathered.parts) == {("nvidia-h100-80gb-hbm3", "0.7.0"), ("nvidia-h200", "0.5.10")}
    parts = gathered.parts[("nvidia-h100-80gb-hbm3", "0.7.0")]
    assert [part.snapshot["locator"] for part in parts] == [files[0].locator, files[2].locator]
    assert all(part.mode == "ci" and part.snapshot["rows"] == 28 for part in parts)
    assert gathered.digest(("nvidia-h200", "0.5.10")) != gathered.digest(("nvidia-h100-80gb-hbm3", "0.7.0"))


def test_the_locator_list_keeps_each_locator_once(tmp_path):
    listing = tmp_path / "ci-files.txt"
    listing.write_text("# weekly runs\nhttps://example.com/a.csv\n\n")
    added = ci.add_to_locator_list(listing, ["https://example.com/a.csv", str(FIXTURES / "7644a0f.csv"), str(FIXTURES / "7644a0f.csv")])
    assert added == [str((FIXTURES / "7644a0f.csv").resolve())]
    assert ci.read_locator_list(listing) == ["https://example.com/a.csv", str((FIXTURES / "7644a0f.csv").resolve())]
