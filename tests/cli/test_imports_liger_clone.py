"""The Liger clone the import commands make (issue 30 item 1): a blob-less bare clone under DAGSTER_HOME that
attribution reads by default, refreshed by the next import, and one line where it cannot be made. Over
file:// from a synthetic repository (production clones Liger's over https)."""

from __future__ import annotations

import pytest

from kernelindex_pipeline.cli.imports import _liger_clone_line
from kernelindex_pipeline.defs.resources import LigerGitResource
from kernelindex_pipeline.home import LIGER_CLONE_DIR, liger_clone
from kernelindex_pipeline.liger.source_history import LigerSourceHistory, SourceHistoryError, clone_blobless
from tests.support.liger_git import _commit, build, git


@pytest.fixture
def source(tmp_path):
    liger = build(tmp_path / "upstream")
    git(liger.path, "config", "uploadpack.allowFilter", "true")
    git(liger.path, "tag", "v0.1.0", liger.shas["base"])
    return liger


def test_a_blobless_clone_is_made_then_refreshed(source, tmp_path):
    dest = tmp_path / "home" / LIGER_CLONE_DIR
    assert clone_blobless(dest, f"file://{source.path}").startswith("cloned ")
    assert git(dest, "rev-parse", "--is-bare-repository").strip() == "true"
    assert git(dest, "config", "remote.origin.partialclonefilter").strip() == "blob:none"
    history = LigerSourceHistory(dest)
    assert history.resolve("v0.1.0") == source.shas["base"]  # tags come along: release code refs resolve
    assert not [p for p in dest.parent.iterdir() if p.name != LIGER_CLONE_DIR]  # no partial clone left beside it

    newer = _commit(source.path, {"src/liger_kernel/ops/new.py": "X = 1\n"}, "a night's commit (#200)", 20)
    assert LigerSourceHistory(dest).resolve(newer[:7]) is None
    assert clone_blobless(dest, f"file://{source.path}").startswith("fetched ")
    assert LigerSourceHistory(dest).resolve(newer[:7]) == newer


@pytest.mark.parametrize("url", ["ssh://example.org/liger.git", "ext::sh -c touch% /tmp/pwned", "/just/a/path"])
def test_only_https_and_file_urls_are_cloned(tmp_path, url):
    with pytest.raises(SourceHistoryError, match="only https or file URLs are cloned"):
        clone_blobless(tmp_path / "clone", url)
    assert not (tmp_path / "clone").exists()


def test_a_clone_that_fails_leaves_nothing_and_hides_the_urls_secret(tmp_path):
    with pytest.raises(SourceHistoryError) as caught:
        clone_blobless(tmp_path / "clone", "https://user:s3cret@127.0.0.1:9/liger.git")
    assert "s3cret" not in str(caught.value) and "git clone" in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_the_import_commands_clone_into_the_home_and_attribution_reads_it(source, tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.delenv("KERNELINDEX_LIGER_GIT", raising=False)
    assert liger_clone() is None and LigerGitResource().clone() == ""

    monkeypatch.setenv("KERNELINDEX_LIGER_URL", "none")
    assert "none" in _liger_clone_line(home) and liger_clone() is None

    monkeypatch.setenv("KERNELINDEX_LIGER_URL", f"file://{source.path}")
    assert _liger_clone_line(home).startswith("Liger clone: cloned file://")
    assert liger_clone() == str(home / LIGER_CLONE_DIR) == LigerGitResource().clone()
    assert _liger_clone_line(home).startswith("Liger clone: fetched ")

    # unreachable upstream: one line, and the clone made before is still used
    monkeypatch.setenv("KERNELINDEX_LIGER_URL", f"file://{tmp_path / 'gone'}")
    line = _liger_clone_line(home)
    assert line.startswith("Liger clone: cannot clone or refresh it: ") and "the one made before is used" in line
    assert liger_clone() == str(home / LIGER_CLONE_DIR)

    # the operator's own clone wins, and nothing is cloned
    monkeypatch.setenv("KERNELINDEX_LIGER_GIT", str(source.path))
    assert _liger_clone_line(home) == f"Liger clone: {source.path} (KERNELINDEX_LIGER_GIT)"
    assert LigerGitResource().clone() == str(source.path)
    assert LigerGitResource(path="/given").clone() == "/given"
