"""Liger at any commit (liger/commit_build.py) from a synthetic clone: a real `git archive` through the
hardened runner and a real `pip wheel` build, cached by commit; blob-less, shallow and missing clones."""

from __future__ import annotations

import json
import zipfile

import pytest

from kernelindex_pipeline.liger.commit_build import CommitBuildError, build_liger, harness_at
from kernelindex_pipeline.liger.source_history import LigerSourceHistory, SourceHistoryError
from tests.support.liger_bisection import VERSION, build_repository
from tests.support.liger_git import git


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return build_repository(tmp_path_factory.mktemp("bisect-repo"), commits=3, slow_from=2, broken=frozenset({3}))


def wheel_text(wheel, name):
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(name).decode()


def test_a_commit_builds_once_and_the_next_bisection_builds_nothing(repo, tmp_path):
    history = LigerSourceHistory(repo.path)
    first = build_liger(history, repo.commits[1][:10], tmp_path)
    assert first.commit == repo.commits[1] and first.version == VERSION and not first.reused
    assert first.wheel.name == f"liger_kernel-{VERSION}-py3-none-any.whl"
    assert "REVISION = 1\n" in wheel_text(first.wheel, "liger_kernel/ops/rms_norm.py")
    marker = json.loads((tmp_path / repo.commits[1] / "build.json").read_text())
    assert marker["digest"] == first.digest and marker["commit"] == repo.commits[1]
    # A second bisection: a build interpreter that cannot run proves no build is attempted.
    again = build_liger(LigerSourceHistory(repo.path), repo.commits[1], tmp_path, python="/nonexistent/python")
    assert again.reused and again.wheel == first.wheel and again.digest == first.digest
    # ...and another commit is a build of its own, of that commit's tree.
    other = build_liger(history, repo.commits[2], tmp_path)
    assert not other.reused and "COST_MS = 1.6" in wheel_text(other.wheel, "liger_kernel/ops/rms_norm.py")
    assert other.digest != first.digest


def test_a_cached_wheel_that_changed_is_refused(repo, tmp_path):
    target = tmp_path / repo.commits[0]
    target.mkdir()
    wheel = target / f"liger_kernel-{VERSION}-py3-none-any.whl"
    wheel.write_bytes(b"not the wheel that was built")
    (target / "build.json").write_text(
        json.dumps({"commit": repo.commits[0], "wheel": wheel.name, "version": VERSION, "digest": "sha256:" + "0" * 64})
    )
    with pytest.raises(CommitBuildError, match="not the wheel that was built"):
        build_liger(LigerSourceHistory(repo.path), repo.commits[0], tmp_path, python="/nonexistent/python")


def test_a_half_built_entry_is_rebuilt_not_used(repo, tmp_path):
    target = tmp_path / repo.commits[0]
    target.mkdir()
    (target / f"liger_kernel-{VERSION}-py3-none-any.whl").write_bytes(b"interrupted")  # no marker: never finished
    with pytest.raises(CommitBuildError, match="does not build"):
        build_liger(LigerSourceHistory(repo.path), repo.commits[0], tmp_path, python="/bin/false")


def test_a_commit_that_does_not_build_names_the_commit_and_the_reason(repo, tmp_path):
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo.path), str(clone))
    # Liger's setup.py computes its dependencies per platform: here it fails, as a broken commit's would.
    (clone / "setup.py").write_text("raise RuntimeError('stand-in: setup.py cannot compute the dependencies')\n")
    git(clone, "add", "setup.py")
    git(clone, "commit", "-q", "-m", "break the build")
    sha = git(clone, "rev-parse", "HEAD").strip()
    with pytest.raises(CommitBuildError, match=rf"Liger at {sha[:12]} does not build") as caught:
        build_liger(LigerSourceHistory(clone), sha, tmp_path / "cache")
    assert "stand-in: setup.py cannot compute the dependencies" in str(caught.value)
    assert not (tmp_path / "cache" / sha).exists()  # a failure is not cached


def test_the_harness_is_the_benchmark_tree_of_its_commit(repo, tmp_path):
    root = harness_at(LigerSourceHistory(repo.path), repo.commits[2], tmp_path / "harness")
    assert (root / "benchmark" / "scripts" / "benchmark_rms_norm.py").is_file()
    assert (root / "benchmark" / "data" / "all_benchmark_data.csv").is_file()
    assert not (root / "src").exists() and not (root / "pyproject.toml").exists()  # the build is not the harness's


def test_a_commit_the_clone_lacks_is_named(repo, tmp_path):
    with pytest.raises(SourceHistoryError, match="no commit 'deadbeef' in the clone"):
        build_liger(LigerSourceHistory(repo.path), "deadbeef", tmp_path)


def test_a_blob_less_clone_fetches_the_blobs_of_the_commit_it_builds(repo, tmp_path):
    git(repo.path, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "blobless"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--bare", f"file://{repo.path}", str(clone))
    build = build_liger(LigerSourceHistory(clone), repo.commits[2], tmp_path / "cache")
    assert "REVISION = 2\n" in wheel_text(build.wheel, "liger_kernel/ops/rms_norm.py")


def test_a_blob_less_clone_that_cannot_fetch_says_what_is_missing(repo, tmp_path):
    git(repo.path, "config", "uploadpack.allowFilter", "true")
    clone = tmp_path / "blobless"
    git(tmp_path, "clone", "-q", "--filter=blob:none", "--bare", f"file://{repo.path}", str(clone))
    git(clone, "remote", "set-url", "origin", str(repo.path))  # a plain path: no transport we allow
    with pytest.raises(SourceHistoryError, match=r"blob-less clone lacks .* at .* is not fetched from"):
        build_liger(LigerSourceHistory(clone), repo.commits[3], tmp_path / "cache")


def test_a_shallow_or_missing_clone_gives_a_clear_message(repo, tmp_path):
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth=1", f"file://{repo.path}", str(shallow))
    with pytest.raises(SourceHistoryError, match="a shallow clone.*git fetch --unshallow"):
        LigerSourceHistory(shallow)
    with pytest.raises(SourceHistoryError, match="no such directory.*git clone"):
        LigerSourceHistory(tmp_path / "nowhere")
