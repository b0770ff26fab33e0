"""Release sdists: content-addressed cache, verification on reuse, safe extraction, history CSV."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
from liger_rows import BASE_ROW, csv_bytes

from kernelindex_pipeline.liger import import_csv, release
from kernelindex_pipeline.liger.release import (
    ReleaseError,
    extract_release,
    fetch_release,
    list_release_versions,
    read_history_csv,
)
from kernelindex_pipeline.records.schema import validate_manifest


def make_sdist(path: Path, version: str, members: dict[str, bytes] | None = None) -> Path:
    members = members if members is not None else {f"liger_kernel-{version}/benchmark/data/all_benchmark_data.csv": csv_bytes([BASE_ROW])}
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


class FakePip:
    """Stands in for `pip download`: writes a made-up sdist into the -d directory."""

    def __init__(self, version: str):
        self.version = version
        self.calls = 0

    def __call__(self, cmd, **kwargs):
        self.calls += 1
        dest = Path(cmd[cmd.index("-d") + 1])
        make_sdist(dest / f"liger_kernel-{self.version}.tar.gz", self.version)
        out = f"  Found link https://files.example/p/liger_kernel-{self.version}.tar.gz#sha256=00 (from https://files.example/simple/), version: {self.version}\n"
        return subprocess.CompletedProcess(cmd, 0, stdout=out, stderr="")


def test_fetch_caches_by_content_and_reuses(tmp_path, monkeypatch):
    pip = FakePip("9.9.9")
    monkeypatch.setattr(release.subprocess, "run", pip)
    first = fetch_release("9.9.9", tmp_path)
    assert first.sha256 == hashlib.sha256(first.path.read_bytes()).hexdigest()
    assert first.path.parent.name == first.sha256 and first.locator.startswith("https://files.example/")
    second = fetch_release("9.9.9", tmp_path)
    assert pip.calls == 1 and second.path == first.path and second.fetched_at == first.fetched_at
    entry = json.loads((tmp_path / "liger-kernel" / "versions" / "9.9.9.json").read_text())
    assert entry["sha256"] == first.sha256 and entry["size"] == first.size


def test_corrupted_cache_is_set_aside_and_fetched_again(tmp_path, monkeypatch):
    pip = FakePip("9.9.9")
    monkeypatch.setattr(release.subprocess, "run", pip)
    first = fetch_release("9.9.9", tmp_path)
    first.path.write_bytes(b"tampered")
    again = fetch_release("9.9.9", tmp_path)
    assert pip.calls == 2
    assert hashlib.sha256(again.path.read_bytes()).hexdigest() == again.sha256
    assert list(first.path.parent.glob("*.corrupt"))


def test_pip_failure_is_a_release_error(tmp_path, monkeypatch):
    monkeypatch.setattr(
        release.subprocess, "run",
        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, stdout="", stderr="ERROR: No matching distribution found"),
    )
    with pytest.raises(ReleaseError, match="No matching distribution"):
        fetch_release("9.9.8", tmp_path)
    with pytest.raises(ReleaseError, match="not a release version"):
        fetch_release("../../etc", tmp_path)


def test_read_history_csv_and_snapshot(tmp_path, monkeypatch):
    monkeypatch.setattr(release.subprocess, "run", FakePip("9.9.9"))
    artifact = fetch_release("9.9.9", tmp_path)
    data, snapshot = read_history_csv(artifact)
    assert data == csv_bytes([BASE_ROW])
    d = snapshot.to_dict()
    assert d["resolvedVersion"] == "9.9.9" and d["sha256"] == artifact.sha256 and d["sizeBytes"] == artifact.size
    assert d["locator"].endswith("#liger_kernel-9.9.9/benchmark/data/all_benchmark_data.csv")
    assert set(d) == {"locator", "resolvedVersion", "sha256", "sizeBytes", "fetchedAt", "parserVersion"}


def test_extract_is_safe(tmp_path):
    good = make_sdist(tmp_path / "good.tar.gz", "1.0.0")
    root = extract_release(good, tmp_path / "x")
    assert (root / "benchmark" / "data" / "all_benchmark_data.csv").is_file()
    evil = make_sdist(tmp_path / "evil.tar.gz", "1.0.0", {"../escaped.txt": b"x"})
    with pytest.raises(ReleaseError):
        extract_release(evil, tmp_path / "y")
    assert not (tmp_path / "escaped.txt").exists()
    link = tmp_path / "link.tar.gz"
    with tarfile.open(link, "w:gz") as tar:
        info = tarfile.TarInfo("liger_kernel-1/evil")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(ReleaseError):
        extract_release(link, tmp_path / "z")


def test_list_versions_oldest_first(monkeypatch):
    out = json.dumps({"name": "liger-kernel", "versions": ["0.10.0", "0.8.5", "0.9.0", "0.2.1"]})
    monkeypatch.setattr(release.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 0, stdout=out, stderr=""))
    assert list_release_versions() == ["0.2.1", "0.8.5", "0.9.0", "0.10.0"]


@pytest.mark.network
def test_release_0_8_5_history_matches_the_catalogue_counts(tmp_path):
    artifact = fetch_release("0.8.5", tmp_path)
    data, snapshot = read_history_csv(artifact)
    result = import_csv(data, snapshot=snapshot)
    report = result.report.to_dict()
    # CATALOGUE.md: the importer creates 35 / 241 / 80; a digest-keyed store keeps 31 / 237 / 63.
    assert [report["objectsByName"][k] for k in ("OperationSpec", "WorkloadCase", "ImplementationRevision")] == [35, 241, 80]
    assert [report["records"][k] for k in ("OperationSpec", "WorkloadCase", "ImplementationRevision")] == [31, 237, 63]
    assert report["conserved"] and report["rowsRead"] == data.count(b"\n") - 1
    assert all(validate_manifest(m) == [] for m in result.manifests.values())
    assert report["runs"] == len(result.runs()) > 0
    assert "0.8.5" in list_release_versions()
