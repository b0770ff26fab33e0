"""Release sdists: content-addressed cache, verification on reuse, safe extraction, history CSV."""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest

from kernelindex_pipeline.imports import archive
from kernelindex_pipeline.imports.archive import ArchiveError, CachedArchive
from kernelindex_pipeline.liger import import_csv, release
from kernelindex_pipeline.liger.release import (
    ReleaseError,
    extract_release,
    fetch_release,
    list_release_versions,
    read_history_csv,
)
from kernelindex_pipeline.records.schema import validate_manifest
from tests.support.liger_rows import BASE_ROW, csv_bytes


def make_sdist(path: Path, version: str, members: dict[str, bytes] | None = None) -> Path:
    members = (
        members
        if members is not None
        else {f"liger_kernel-{version}/benchmark/data/all_benchmark_data.csv": csv_bytes([BASE_ROW])}
    )
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
        release.subprocess,
        "run",
        lambda cmd, **kw: subprocess.CompletedProcess(
            cmd, 1, stdout="", stderr="ERROR: No matching distribution found"
        ),
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
    # the locator names the CSV member: its digest and size are the member's (the bytes read), the sdist's beside
    assert d["locator"].endswith("#liger_kernel-9.9.9/benchmark/data/all_benchmark_data.csv")
    assert d["sha256"] == hashlib.sha256(data).hexdigest() and d["sizeBytes"] == len(data) != artifact.size
    assert d["archiveSha256"] == artifact.sha256 and d["archiveSizeBytes"] == artifact.size
    assert d["resolvedVersion"] == "9.9.9"
    assert set(d) == {
        "locator",
        "resolvedVersion",
        "sha256",
        "sizeBytes",
        "fetchedAt",
        "parserVersion",
        "archiveSha256",
        "archiveSizeBytes",
    }


def test_extract_is_safe(tmp_path):
    good = make_sdist(tmp_path / "good.tar.gz", "1.0.0")
    root = extract_release(good, tmp_path / "x")
    assert (root / "benchmark" / "data" / "all_benchmark_data.csv").is_file()
    evil = make_sdist(tmp_path / "evil.tar.gz", "1.0.0", {"../escaped.txt": b"x"})
    with pytest.raises(ArchiveError):
        extract_release(evil, tmp_path / "y")
    assert not (tmp_path / "escaped.txt").exists()
    link = tmp_path / "link.tar.gz"
    with tarfile.open(link, "w:gz") as tar:
        info = tarfile.TarInfo("liger_kernel-1/evil")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    with pytest.raises(ArchiveError):
        extract_release(link, tmp_path / "z")


def test_list_versions_oldest_first(monkeypatch):
    out = json.dumps({"name": "liger-kernel", "versions": ["0.10.0", "0.8.5", "0.9.0", "0.2.1"]})
    monkeypatch.setattr(
        release.subprocess, "run", lambda cmd, **kw: subprocess.CompletedProcess(cmd, 0, stdout=out, stderr="")
    )
    assert list_release_versions() == ["0.2.1", "0.8.5", "0.9.0", "0.10.0"]


@pytest.mark.network
def test_release_0_8_5_history_matches_the_catalogue_counts(tmp_path):
    artifact = fetch_release("0.8.5", tmp_path)
    data, snapshot = read_history_csv(artifact)
    result = import_csv(data, snapshot=snapshot, profile="reference")
    report = result.report.to_dict()
    # CATALOGUE.md (the reference profile): the importer creates 35 / 241 / 80; a digest-keyed store keeps 31 / 237 / 63.
    assert [report["objectsByName"][k] for k in ("OperationSpec", "WorkloadCase", "ImplementationRevision")] == [
        35,
        241,
        80,
    ]
    assert [report["records"][k] for k in ("OperationSpec", "WorkloadCase", "ImplementationRevision")] == [31, 237, 63]
    assert report["conserved"] and report["rowsRead"] == data.count(b"\n") - 1
    assert all(validate_manifest(m) == [] for m in result.manifests.values())
    assert report["runs"] == len(result.runs()) > 0
    assert "0.8.5" in list_release_versions()


@pytest.fixture(scope="module")
def release_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("releases")


@pytest.mark.network
@pytest.mark.parametrize("version", ["0.6.1", "0.8.0", "0.8.5"])
def test_history_under_the_full_profile_adds_valid_records_and_names_every_skip(version, release_cache):
    data, snapshot = read_history_csv(fetch_release(version, release_cache))
    reference = import_csv(data, snapshot=snapshot, profile="reference")
    full = import_csv(data, snapshot=snapshot, profile="full")
    report = full.report.to_dict()
    assert report["profile"] == "full" and report["conserved"]
    for digest, manifest in full.manifests.items():  # the extras validate; reference objects are unchanged
        assert validate_manifest(manifest) == [], manifest["metadata"]["name"]
        if digest in reference.manifests:
            assert manifest == reference.manifests[digest]
    assert set(reference.manifests) <= set(full.manifests)
    assert report["memoryRuns"] > 0 and full.report.runs > reference.report.runs
    # every row that made no run is counted under a named reason in the coverage table
    for cell in report["coverage"]["cells"]:
        assert cell["rows"] == cell["runs"] + sum(cell["skipped"].values()) + cell["issues"]


# ---------------------------------------------------------------- hostile archives (issue 11, items 1-3)

CSV_MEMBER = "liger_kernel-1.0.0/benchmark/data/all_benchmark_data.csv"


def hostile_sdist(
    path: Path, *extra: tarfile.TarInfo, data: dict[str, bytes] | None = None, compresslevel: int = 9
) -> Path:
    """A good release plus `extra` members (links, devices, ...) written after it."""
    with tarfile.open(path, "w:gz", compresslevel=compresslevel) as tar:
        for name, content in {CSV_MEMBER: csv_bytes([BASE_ROW]), **(data or {})}.items():
            info = tarfile.TarInfo(name)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        for info in extra:
            tar.addfile(info)
    return path


def link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def assert_nothing_extracted(dest: Path) -> None:
    assert not dest.exists() or not any(dest.iterdir()), f"partial extraction left in {dest}"
    assert not [p for p in dest.parent.iterdir() if p.name.startswith(f".{dest.name}.")], (
        "staging directory left behind"
    )


def _special(name: str, kind: bytes) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    return info


@pytest.mark.parametrize(
    "members",
    [
        # The CVE-2025-4517 shape: a symlink chain whose resolved length exceeds PATH_MAX, then a link through it.
        [
            *(
                link(
                    f"liger_kernel-1.0.0/benchmark/.cache/{'d' * 200}{i}",
                    f"{'d' * 200}{i + 1}" if i < 30 else "../" * 40,
                )
                for i in range(31)
            ),
            link("liger_kernel-1.0.0/benchmark/.cache/escape", "../../../../outside.txt", tarfile.LNKTYPE),
        ],
        [link("liger_kernel-1.0.0/benchmark/.cache/s", "../../../../../etc")],
        [
            link(
                "liger_kernel-1.0.0/benchmark/inside-link",
                "liger_kernel-1.0.0/benchmark/data/all_benchmark_data.csv",
                tarfile.LNKTYPE,
            )
        ],
        [link("liger_kernel-1.0.0/dangling", "liger_kernel-1.0.0/no-such-member", tarfile.LNKTYPE)],
        [_special("liger_kernel-1.0.0/fifo", tarfile.FIFOTYPE)],
        [_special("liger_kernel-1.0.0/dev", tarfile.CHRTYPE)],
    ],
    ids=[
        "long-symlink-chain-then-hardlink",
        "symlink",
        "hardlink-inside",
        "hardlink-to-missing-member",
        "fifo",
        "device",
    ],
)
def test_extract_takes_no_link_or_special_member_at_all(tmp_path, members):
    sdist = hostile_sdist(tmp_path / "evil.tar.gz", *members)
    dest = tmp_path / "work" / "release"
    with pytest.raises(ArchiveError, match="only regular files and directories"):
        extract_release(sdist, dest)
    assert_nothing_extracted(dest)
    assert not (tmp_path / "outside.txt").exists()


@pytest.mark.parametrize("name", ["/abs/path", "liger_kernel-1.0.0/../../up", "a/b/../../../c"])
def test_extract_checks_every_target_path(tmp_path, name):
    sdist = hostile_sdist(tmp_path / "evil.tar.gz", data={name: b"x"})
    dest = tmp_path / "work" / "release"
    with pytest.raises(ArchiveError, match="unsafe path"):
        extract_release(sdist, dest)
    assert_nothing_extracted(dest)


@pytest.mark.parametrize(
    ("limit", "value", "members", "message"),
    [
        ("MAX_MEMBER_BYTES", 1000, {"liger_kernel-1.0.0/big.bin": b"\0" * 5000}, "limit per member"),
        (
            "MAX_TOTAL_BYTES",
            3000,
            {f"liger_kernel-1.0.0/f{i}": b"\0" * 900 for i in range(4)},
            "unpacks to more than|add up to more than",
        ),
        ("MAX_MEMBERS", 3, {f"liger_kernel-1.0.0/f{i}": b"" for i in range(4)}, "more than 3 members"),
    ],
)
def test_extract_caps_member_count_and_sizes(tmp_path, monkeypatch, limit, value, members, message):
    monkeypatch.setattr(archive, limit, value)
    sdist = hostile_sdist(tmp_path / "bomb.tar.gz", data=members)
    dest = tmp_path / "release"
    with pytest.raises(ArchiveError, match=message):
        extract_release(sdist, dest)
    assert_nothing_extracted(dest)


def test_a_decompression_bomb_is_refused_while_verifying(tmp_path, monkeypatch):
    # Highly compressible member: the compressed file is tiny, the stream is read only up to the cap.
    monkeypatch.setattr(archive, "MAX_TOTAL_BYTES", 1 << 20)
    monkeypatch.setattr(archive, "MAX_MEMBERS", 10)  # the allowance for tar headers scales with it
    sdist = hostile_sdist(tmp_path / "bomb.tar.gz", data={"liger_kernel-1.0.0/zeros": b"\0" * (8 << 20)})
    assert sdist.stat().st_size < 64 << 10
    with pytest.raises(ArchiveError, match="unpacks to more than"):
        archive.verify_archive(sdist)


def test_read_history_csv_refuses_an_oversized_csv_before_reading_it(tmp_path, monkeypatch):
    monkeypatch.setattr(release, "MAX_HISTORY_CSV_BYTES", 100)
    sdist = hostile_sdist(tmp_path / "s.tar.gz")
    artifact = CachedArchive(
        "1.0.0", sdist, hashlib.sha256(sdist.read_bytes()).hexdigest(), sdist.stat().st_size, "t", "file:s"
    )
    with pytest.raises(ReleaseError, match="over the 0 MiB limit for a history CSV"):
        read_history_csv(artifact)


def test_a_truncated_sdist_is_a_clear_error_and_leaves_nothing(tmp_path):
    good = hostile_sdist(tmp_path / "good.tar.gz", data={"liger_kernel-1.0.0/pad.bin": bytes(range(256)) * 400})
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    dest = tmp_path / "release"
    with pytest.raises(ArchiveError, match="truncated or corrupt"):
        extract_release(truncated, dest)
    assert_nothing_extracted(dest)
    artifact = CachedArchive("1.0.0", truncated, hashlib.sha256(truncated.read_bytes()).hexdigest(), 1, "t", "file:t")
    with pytest.raises(ArchiveError, match="truncated or corrupt"):
        read_history_csv(artifact)


def test_a_bit_flipped_sdist_is_refused_by_the_gzip_crc(tmp_path):
    # Stored (uncompressed) deflate blocks: a flipped byte changes the file's content and nothing but
    # gzip's CRC at the very end of the stream notices.
    sdist = hostile_sdist(tmp_path / "s.tar.gz", compresslevel=0)
    data = bytearray(sdist.read_bytes())
    at = data.index(b"rms_norm")
    data[at] ^= 0x01
    sdist.write_bytes(bytes(data))
    dest = tmp_path / "release"
    with pytest.raises(ArchiveError, match="truncated or corrupt"):
        extract_release(sdist, dest)
    assert_nothing_extracted(dest)


def test_a_known_sha256_is_checked_before_extraction(tmp_path):
    sdist = hostile_sdist(tmp_path / "s.tar.gz")
    artifact = CachedArchive("1.0.0", sdist, "0" * 64, sdist.stat().st_size, "t", "file:s")
    with pytest.raises(ArchiveError, match="sha256 does not match"):
        extract_release(artifact, tmp_path / "release")
    with pytest.raises(ArchiveError, match="sha256 does not match"):
        read_history_csv(artifact)


def test_a_fetched_release_is_extracted_with_its_sha256_rechecked(tmp_path, monkeypatch):
    """The sweep's fetch path hands extraction the artifact, so an sdist changed after its fetch is refused."""
    from kernelindex_pipeline.sweep import discovery
    from kernelindex_pipeline.sweep.outcomes import ConfigurationError

    sdist = make_sdist(
        tmp_path / "liger_kernel-9.9.9.tar.gz",
        "9.9.9",
        {
            "liger_kernel-9.9.9/benchmark/scripts/benchmark_x.py": b"print('x')\n",
        },
    )
    digest = hashlib.sha256(sdist.read_bytes()).hexdigest()

    def fetched(sha256):
        return lambda version: CachedArchive(
            "9.9.9", sdist, sha256, sdist.stat().st_size, "2026-12-01T00:00:00Z", "pypi"
        )

    monkeypatch.setattr(discovery, "fetch_release", fetched(digest))
    root = discovery.resolve_release(None, "9.9.9", tmp_path / "ok")
    assert (root / "benchmark" / "scripts" / "benchmark_x.py").is_file()

    monkeypatch.setattr(discovery, "fetch_release", fetched("0" * 64))
    with pytest.raises(ConfigurationError, match="sha256"):
        discovery.resolve_release(None, "9.9.9", tmp_path / "changed")
    assert not (tmp_path / "changed").exists() or not any((tmp_path / "changed").iterdir())
