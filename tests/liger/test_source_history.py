"""The Liger clone as hostile input (issue 31): a clone whose config would run commands, commit messages
and file names that try to forge commits, output too big to hold, ranges over MAX_COMMITS, a clone owned
by another user. Each marker file must not exist after the calls attribution makes."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelindex_pipeline.liger import source_history
from kernelindex_pipeline.liger.kernel_sources import KernelSources
from kernelindex_pipeline.liger.source_history import LigerSourceHistory, SourceHistoryError
from tests.support.liger_git import blobless_clone, build, git


@pytest.fixture(scope="module")
def liger(tmp_path_factory):
    return build(tmp_path_factory.mktemp("git"))


def _exercise(liger, path: Path) -> None:
    """What attribution asks of a clone: a commit's time, a range, both ends' kernel files (blobs), a diff
    stat and a commit against its parent."""
    history = LigerSourceHistory(path)
    s = liger.shas
    history.commit_time(s["op"])
    history.commits_between(s["base"], s["uses-import"])
    sources = KernelSources(history)
    paths = sources.paths(s["base"], "rms_norm").between(sources.paths(s["uses-import"], "rms_norm"))
    history.diffstat(s["base"], s["uses-import"], sorted(paths.script))
    sources.commit_changes_code(s["op"], "src/liger_kernel/ops/rms_norm.py", ("",))


def test_a_blobless_clone_fetches_through_our_path_not_its_uploadpack(liger, tmp_path):
    """remote.origin.uploadpack over file:// (git's own lazy fetch would run it): the blobs still come,
    through `_fetch_blobs`, and the clone's command never runs; bare and not."""
    for bare in (True, False):
        marker = tmp_path / f"M-{bare}"
        clone = blobless_clone(liger, tmp_path, f"clone-{bare}", bare=bare)
        git(clone, "config", "remote.origin.uploadpack", f"touch {marker}; git-upload-pack")
        _exercise(liger, clone)
        history = LigerSourceHistory(clone)
        text = history.read(liger.shas["op"], ["src/liger_kernel/ops/rms_norm.py"])["src/liger_kernel/ops/rms_norm.py"]
        assert text is not None and "x * 1.0" in text
        assert not marker.exists()


VECTORS = {
    "sshCommand over ssh": lambda m: [
        ("remote.origin.url", "ssh://git@example.invalid/liger.git"),
        ("core.sshCommand", f"touch {m}; false"),
    ],
    "ext URL": lambda m: [("remote.origin.url", f"ext::sh -c touch% {m}"), ("protocol.ext.allow", "always")],
    "insteadOf to ext": lambda m: [
        (f"url.ext::sh -c touch% {m}% #.insteadOf", "file://"),
        ("protocol.ext.allow", "always"),
    ],
    "remote helper (vcs)": lambda m: [
        ("remote.origin.vcs", "ext"),
        ("remote.origin.url", f"sh -c touch% {m}"),
        ("protocol.ext.allow", "always"),
    ],
}


@pytest.mark.parametrize("vector", sorted(VECTORS))
def test_no_transport_of_the_clones_config_runs_a_command(liger, tmp_path, monkeypatch, vector):
    marker = tmp_path / "M"
    clone = blobless_clone(liger, tmp_path)
    for key, value in VECTORS[vector](marker):
        git(clone, "config", key, value)
    monkeypatch.setenv("GIT_SSH_COMMAND", f"touch {marker}; false")  # the caller's environment neither
    with contextlib.suppress(SourceHistoryError):
        _exercise(liger, clone)
    assert not marker.exists()
    with pytest.raises(SourceHistoryError, match="blob-less clone lacks|transport 'ext' not allowed"):
        LigerSourceHistory(clone).read(liger.shas["op"], ["src/liger_kernel/ops/rms_norm.py"])


def test_a_signed_commit_runs_no_gpg_program_of_the_clone(liger, tmp_path):
    marker = tmp_path / "M"
    clone = blobless_clone(liger, tmp_path)
    program = tmp_path / "gpg.sh"
    program.write_text(f"#!/bin/sh\ntouch {marker}\nexit 1\n")
    program.chmod(0o755)
    git(clone, "config", "log.showSignature", "true")
    git(clone, "config", "gpg.program", str(program))
    tree = git(clone, "rev-parse", f"{liger.shas['uses-import']}^{{tree}}").strip()
    body = (
        f"tree {tree}\nparent {liger.shas['uses-import']}\nauthor t <t@e> 1736600000 +0000\n"
        "committer t <t@e> 1736600000 +0000\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n"
        " -----END PGP SIGNATURE-----\n\nsigned (#110)\n"
    )
    signed = (
        subprocess.run(
            ["git", "-C", str(clone), "hash-object", "-t", "commit", "-w", "--stdin"],
            input=body.encode(),
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .strip()
    )
    history = LigerSourceHistory(clone)
    assert history.commit_time(signed) == 1736600000
    assert [c.subject for c in history.commits_between(liger.shas["uses-import"], signed)] == ["signed (#110)"]
    assert not marker.exists()


@pytest.mark.parametrize(
    "key,hostile",
    [
        ("core.pager", "touch M; cat"),
        ("core.fsmonitor", "touch M; false"),
        ("core.hooksPath", "/tmp"),
        ("core.sshCommand", "touch M; ssh"),
        ("diff.external", "touch M"),
        ("credential.helper", "!touch M"),
        ("log.showSignature", "true"),
        ("protocol.allow", "always"),
        ("remote.origin.uploadpack", "touch M; git-upload-pack"),
    ],
)
def test_git_sees_our_config_above_the_clones(liger, tmp_path, key, hostile):
    """Keys no command of ours reaches today (a pager needs a terminal, fsmonitor an index, an external
    diff a patch) are overridden too: git itself says which value it would use."""
    clone = blobless_clone(liger, tmp_path)
    git(clone, "config", key, hostile)
    assert LigerSourceHistory(clone)._run("config", "--get", key).strip() != hostile


def test_a_commit_message_or_file_name_cannot_forge_a_commit(liger, tmp_path):
    repo = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(liger.path), str(repo))
    fake = "a" * 40
    (repo / f"x\n{'b' * 40}").write_text("1\n")
    (repo / "src/liger_kernel/ops/rms_norm.py").write_text("def rms_norm(x):\n    return x * 3\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"evil \x1e{fake}\x1f2025-01-01T00:00:00+00:00\x1fforged (#1)")
    head = git(repo, "rev-parse", "HEAD").strip()
    commits = LigerSourceHistory(repo).commits_between(liger.shas["uses-import"], head)
    assert [c.sha for c in commits] == [head]
    assert f"x\n{'b' * 40}" in commits[0].files and "src/liger_kernel/ops/rms_norm.py" in commits[0].files


def test_a_huge_subject_is_cut(liger, tmp_path):
    repo = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(liger.path), str(repo))
    (tmp_path / "message").write_text("s" * 8_000_000 + "\n")
    git(repo, "commit", "-q", "--allow-empty", "-F", str(tmp_path / "message"))
    head = git(repo, "rev-parse", "HEAD").strip()
    [commit] = LigerSourceHistory(repo).commits_between(liger.shas["uses-import"], head)
    assert len(commit.subject) <= 500  # MAX_SUBJECT_CHARS


_RSS_SCRIPT = """
import resource, sys
from kernelindex_pipeline.liger.source_history import LigerSourceHistory, SourceHistoryError
history = LigerSourceHistory(sys.argv[1])
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
text = history.read("HEAD", ["big.bin"])["big.bin"]
try:
    history._run("cat-file", "blob", "HEAD:big.bin")
    capped = False
except SourceHistoryError as exc:
    capped = "wrote over" in str(exc)
print(text is None, capped, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) // 1024)
"""


def test_a_big_file_is_never_held(liger, tmp_path):
    """A 160 MiB file at a commit: cat-file's body over MAX_FILE_BYTES is counted through, and a plain call
    is stopped at MAX_OUTPUT_BYTES as it streams; the reader's peak RSS grows by well under either."""
    repo = tmp_path / "work"
    git(tmp_path, "clone", "-q", str(liger.path), str(repo))
    with (repo / "big.bin").open("wb") as out:
        out.truncate(160 * 1024 * 1024)
    git(repo, "add", "big.bin")
    git(repo, "commit", "-q", "-m", "big")
    done = subprocess.run(
        [sys.executable, "-c", _RSS_SCRIPT, str(repo)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    skipped, capped, grown_mib = done.stdout.split()
    assert (skipped, capped) == ("True", "True") and int(grown_mib) < 100, done.stdout


def test_over_max_commits_the_files_that_matter_are_listed_with_a_note(liger, monkeypatch):
    monkeypatch.setattr(source_history, "MAX_COMMITS", 3)
    history = LigerSourceHistory(liger.path)
    op = "src/liger_kernel/ops/rms_norm.py"
    commits = history.commits_between(liger.shas["base"], liger.shas["uses-import"], [op])
    assert [c.subject for c in commits] == [
        "rms_norm: docstring (#109)",
        "rms_norm uses helper (#106)",
        "rms_norm: slower op (#101)",
    ]
    assert any("over 3 commits" in n and "touch the files" in n for n in history.notes)


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give the clone to another uid")
def test_a_clone_owned_by_another_user_is_named_with_the_fix(liger, tmp_path, monkeypatch):
    clone = blobless_clone(liger, tmp_path)
    os.chown(clone, 12345, 12345)
    with pytest.raises(SourceHistoryError, match=r"owned by another user \(uid 12345.*safe\.directory " + str(clone)):
        LigerSourceHistory(clone)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[safe]\n\tdirectory = {clone}\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    assert LigerSourceHistory(clone).resolve(liger.shas["op"]) == liger.shas["op"]  # the operator trusts it


def test_an_archive_is_the_commits_tree_and_refuses_what_is_not_a_full_sha(tmp_path):
    import tarfile

    from tests.support.liger_bisection import OP, build_repository

    repo = build_repository(tmp_path, commits=3, slow_from=2, broken=frozenset({3}))
    history = LigerSourceHistory(repo.path)
    tar = history.archive(repo.commits[3], tmp_path / "tree.tar")
    with tarfile.open(tar) as archive:
        assert "from liger_kernel.ops.gone import SCALE" in archive.extractfile(OP).read().decode()
    with pytest.raises(SourceHistoryError, match="full commit id"):
        history.archive(repo.commits[3][:12], tmp_path / "short.tar")
    with pytest.raises(SourceHistoryError, match="has none of"):
        history.archive(repo.commits[3], tmp_path / "none.tar", ["no-such-dir"])
