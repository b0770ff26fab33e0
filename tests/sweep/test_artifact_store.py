"""The artifact store (issue 18 item 3): content-addressed, written once, URIs without host paths."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kernelindex_pipeline.sweep.artifact_store import ArtifactStore, ArtifactStoreError, ni_uri, publish_evidence
from kernelindex_pipeline.sweep.outcomes import ConfigurationError, SweepError


def _ref(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_a_local_store_names_content_not_host_paths(tmp_path):
    store = ArtifactStore(tmp_path / "store")
    data = b'{"samples": [1, 2, 3]}'
    stored = store.put(data, _ref(data))
    hexdigest = _ref(data).removeprefix("sha256:")
    assert stored == {"uri": ni_uri(hexdigest), "digest": _ref(data)}
    assert str(tmp_path) not in stored["uri"]
    path = tmp_path / "store" / "sha256" / hexdigest[:2] / hexdigest
    assert path.read_bytes() == data and not (path.stat().st_mode & 0o222)  # read-only
    assert store.put(data, _ref(data)) == stored  # idempotent
    assert [p.name for p in path.parent.iterdir()] == [hexdigest]  # no partial files left


def test_an_object_is_never_overwritten(tmp_path):
    store = ArtifactStore(tmp_path / "store")
    data = b"log line\n"
    path = tmp_path / "store" / "sha256" / _ref(data)[7:9] / _ref(data)[7:]
    path.parent.mkdir(parents=True)
    path.write_bytes(b"something else")
    with pytest.raises(ArtifactStoreError, match="never overwritten"):
        store.put(data, _ref(data))
    assert path.read_bytes() == b"something else"


def test_changed_evidence_is_refused(tmp_path):
    store = ArtifactStore(tmp_path / "store")
    with pytest.raises(ArtifactStoreError, match="changed before it reached the store"):
        store.put(b"now", _ref(b"then"))


def test_object_storage_through_fsspec_and_a_public_base_url():
    remote = ArtifactStore("memory://kernelindex-evidence/sweeps")
    data = b"samples"
    hexdigest = _ref(data)[7:]
    assert (
        remote.put(data, _ref(data))["uri"]
        == f"memory:///kernelindex-evidence/sweeps/sha256/{hexdigest[:2]}/{hexdigest}"
    )
    assert remote.fs.cat_file(remote.path_of(hexdigest)) == data
    published = ArtifactStore("memory://kernelindex-evidence/public", "https://evidence.example.org/kernelindex/")
    assert (
        published.put(data, _ref(data))["uri"]
        == f"https://evidence.example.org/kernelindex/sha256/{hexdigest[:2]}/{hexdigest}"
    )
    with pytest.raises(ConfigurationError, match="https"):
        ArtifactStore("memory://x", "http://evidence.example.org")


@dataclass
class _Outcome:
    raw_samples: dict = field(default_factory=dict)


@dataclass
class _Result:
    outcomes: list
    sentinel: list
    logs_by_kernel: dict
    merged_samples: dict = field(default_factory=dict)  # SweepResult's rounds (sweep/rounds.py)


def test_publish_evidence_replaces_every_host_file_ref(tmp_path):
    files = {}
    for name, data in (
        ("s.json", b'{"s": 1}'),
        ("rms.log", b"rms\n"),
        ("sentinel.json", b'{"t": 2}'),
        ("sentinel.log", b"x\n"),
    ):
        (tmp_path / name).write_bytes(data)
        files[name] = {"uri": (tmp_path / name).as_uri(), "digest": _ref(data)}
    result = _Result(
        outcomes=[_Outcome({"row": {"artifact": files["s.json"], "samples": 1}})],
        sentinel=[
            {"status": "ok", "artifact": files["sentinel.json"], "log": files["sentinel.log"]},
            {"status": "failed"},
        ],
        logs_by_kernel={"rms_norm": files["rms.log"]},
    )
    published = publish_evidence(result, ArtifactStore(tmp_path / "store"))
    text = json.dumps([published.outcomes[0].raw_samples, published.sentinel, published.logs_by_kernel])
    assert "file://" not in text and str(tmp_path) not in text
    assert published.logs_by_kernel["rms_norm"]["digest"] == files["rms.log"]["digest"]
    assert published.sentinel[1] == {"status": "failed"}
    assert result.logs_by_kernel["rms_norm"] == files["rms.log"]  # the input is left alone


def test_a_missing_host_file_is_named(tmp_path):
    ref = {"uri": (tmp_path / "gone.log").as_uri(), "digest": _ref(b"")}
    with pytest.raises(ArtifactStoreError, match="gone.log: cannot be read"):
        ArtifactStore(tmp_path / "store").put_file(ref)


# --- issue 31: credentials in the store's URLs (item 3), what is already at a content address (item 10),
# failures named as the store's (items 15, 20) -----------------------------------------------------------
SECRET = "hunter2"


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(
    ("location", "base_url", "names"),
    [
        (f"http://user:{SECRET}@127.0.0.1:9/store", None, "holds a user name or password"),
        (f"https://127.0.0.1:9/store?token={SECRET}", None, "holds a secret query parameter (token)"),
        (f"s3://bucket/prefix?x={SECRET}", None, "holds a query string or fragment"),
        (f"simplecache::s3://key:{SECRET}@bucket/prefix", None, "holds a user name or password"),
        ("memory://evidence", f"https://user:{SECRET}@evidence.example.org/k", "holds a user name or password"),
        ("memory://evidence", f"https://evidence.example.org/k?auth_token={SECRET}", "secret query parameter"),
        ("memory://evidence", f"https://evidence.example.org/k?v={SECRET}", "holds a query string or fragment"),
    ],
)
def test_credentials_in_a_url_that_reaches_records_are_refused_and_never_shown(location, base_url, names):
    with pytest.raises(ConfigurationError, match=re.escape(names)) as refused:
        ArtifactStore(location, base_url)
    assert SECRET not in str(refused.value) and "\n" not in str(refused.value)


def test_the_environment_is_checked_and_named_as_the_artifact_store(monkeypatch, tmp_path):
    monkeypatch.setenv("KERNELINDEX_ARTIFACT_BASE_URL", f"https://user:{SECRET}@evidence.example.org")
    with pytest.raises(ConfigurationError, match="KERNELINDEX_ARTIFACT_BASE_URL https://\\*\\*\\*@evidence") as refused:
        ArtifactStore.from_environment(str(tmp_path / "store"))
    assert SECRET not in str(refused.value)
    monkeypatch.delenv("KERNELINDEX_ARTIFACT_BASE_URL")
    monkeypatch.setenv("KERNELINDEX_ARTIFACT_STORE", f"http://user:{SECRET}@127.0.0.1:9/store")
    with pytest.raises(
        ConfigurationError, match=r"http://\*\*\*@127.0.0.1:9/store \(from \$KERNELINDEX_ARTIFACT_STORE\)"
    ):
        ArtifactStore.from_environment()


def test_an_http_store_names_its_objects_with_one_scheme():
    # fsspec's http paths keep their scheme: the protocol prefixed again gave http://http://127.0.0.1:9/...
    hexdigest = _ref(b"x")[7:]
    assert ArtifactStore("http://127.0.0.1:9/store").uri(hexdigest) == (
        f"http://127.0.0.1:9/store/sha256/{hexdigest[:2]}/{hexdigest}"
    )


def test_a_location_with_credentials_behind_a_public_base_url_is_used_and_redacted():
    # The location reaches no record here (the base URL names the objects), so its user info may stay,
    # but nothing shows it: not the store's repr, not an error, not a URI.
    store = ArtifactStore(
        f"http://user:{SECRET}@127.0.0.1:{_closed_port()}/store", "https://evidence.example.org/kernelindex"
    )
    assert SECRET not in repr(store) and SECRET not in store.uri(_ref(b"x")[7:])
    with pytest.raises(ArtifactStoreError) as failed:
        store.put(b"x", _ref(b"x"))
    assert str(failed.value).startswith("the artifact store http://***@127.0.0.1:") and SECRET not in str(failed.value)


def _place(store: ArtifactStore, data: bytes) -> Path:
    path = Path(store.path_of(_ref(data)[7:]))
    path.parent.mkdir(parents=True)
    return path


@pytest.mark.timeout(60)  # a FIFO was opened and waited on for a writer that never comes
@pytest.mark.parametrize(
    ("make", "held"),
    [
        (lambda path: path.symlink_to("/dev/zero"), "a symbolic link"),  # read until memory ran out
        (lambda path: os.mkfifo(path), "a FIFO"),  # hung
        (lambda path: os.truncate(path.touch() or path, 3 * 2**30), "other bytes"),  # 3 GiB read whole
        (lambda path: path.mkdir(), "a directory"),  # fsspec's IsADirectoryError
    ],
    ids=["link-to-dev-zero", "fifo", "sparse-3gib", "directory"],
)
def test_what_is_already_at_a_content_address_is_checked_before_it_is_read(tmp_path, make, held):
    store = ArtifactStore(tmp_path / "store")
    data = b"evidence"
    path = _place(store, data)
    make(path)
    with pytest.raises(ArtifactStoreError, match=re.escape(held)) as refused:
        store.put(data, _ref(data))
    assert "never" in str(refused.value) and not refused.value.retryable
    assert path.is_symlink() or not path.is_file() or path.stat().st_size == 3 * 2**30  # left as it was


def test_an_object_of_another_size_in_object_storage_is_refused_unread(monkeypatch):
    store = ArtifactStore("memory://kernelindex-evidence/sized")
    data = b"evidence"
    store.fs.pipe_file(store.path_of(_ref(data)[7:]), b"\0" * 2**20)
    monkeypatch.setattr(store.fs, "open", lambda *a, **k: pytest.fail("read an object of the wrong size"))
    monkeypatch.setattr(store.fs, "cat_file", lambda *a, **k: pytest.fail("read an object of the wrong size"))
    with pytest.raises(
        ArtifactStoreError,
        match=r"other bytes under memory://kernelindex-evidence/sized/sha256/.* \(1048576 bytes, not 8\)",
    ):
        store.put(data, _ref(data))


@pytest.fixture
def disconnecting_server():
    """A loopback server that reads a request and closes the connection without an answer."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(30)  # the accept loop's bound: the test is over long before

    def serve() -> None:
        for _ in range(20):  # fsspec makes a few requests per put; bounded in count
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.recv(65536)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}/store"
    server.shutdown(socket.SHUT_RDWR)  # wakes the accept (close alone does not, on Linux)
    server.close()
    thread.join(timeout=35)


def test_an_unreachable_store_is_one_error_naming_it_and_the_fix(disconnecting_server):
    for location, why in (
        (f"http://127.0.0.1:{_closed_port()}/store", "Connect call failed"),  # was a raw ConnectionRefusedError
        (disconnecting_server, "ServerDisconnectedError"),  # was aiohttp's, raw
    ):
        with pytest.raises(ArtifactStoreError) as failed:
            ArtifactStore(location).put(b"x", _ref(b"x"))
        message = str(failed.value)
        assert message.startswith(f"the artifact store {location} (from the given location): cannot write sha256/")
        assert why in message and message.endswith("check its location and the network, then retry")
        assert isinstance(failed.value, SweepError) and failed.value.retryable  # the sweep process reports it


def test_a_read_only_store_is_named_as_the_artifact_store(tmp_path, monkeypatch):
    from kernelindex_pipeline.sweep import artifact_store

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(args[0]))

    store = ArtifactStore(tmp_path / "store")
    monkeypatch.setattr(artifact_store, "open", read_only, raising=False)  # the object's temporary file
    with pytest.raises(ArtifactStoreError) as failed:
        store.put(b"x", _ref(b"x"))
    assert str(failed.value) == (
        f"the artifact store {tmp_path / 'store'} (from the given location): cannot write sha256/{_ref(b'x')[7:9]}/"
        f"{_ref(b'x')[7:]} (Read-only file system); it is on a read-only file system; set $KERNELINDEX_ARTIFACT_STORE "
        "or the sweep request's artifact_store to a writable location"
    )
    assert not failed.value.retryable
    monkeypatch.setattr(Path, "mkdir", read_only)  # a store that does not exist yet, on a read-only disk
    with pytest.raises(
        ArtifactStoreError,
        match=r"/new \(from the given location\): cannot create its directory \(Read-only file system\); it is on a read-only",
    ):
        ArtifactStore(tmp_path / "new")
