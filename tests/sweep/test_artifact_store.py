"""The artifact store (issue 18 item 3): content-addressed, written once, URIs without host paths."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

import pytest

from kernelindex_pipeline.sweep.artifact_store import ArtifactStore, ArtifactStoreError, ni_uri, publish_evidence
from kernelindex_pipeline.sweep.outcomes import ConfigurationError


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
