"""The snapshot of Liger's CI results shipped with the package, and what `import-ci` without locators
imports: every run Liger's gh-pages lists, or the snapshot where that cannot be read (issue 30)."""

from __future__ import annotations

import pytest

from kernelindex_pipeline.liger import ci_snapshot


def test_the_snapshot_unpacks_into_a_folder_that_says_it_is_one(tmp_path):
    files = ci_snapshot.extract_snapshot(tmp_path)
    assert [f.parent.name for f in files] == [ci_snapshot.SNAPSHOT_FOLDER] * 11
    assert "2845fe8.csv" in {f.name for f in files} and "7644a0f-v0.7.0.csv" in {f.name for f in files}
    for path in files:
        assert path.read_text().split("\n", 1)[0].startswith("kernel_name,"), path
    assert ci_snapshot.extract_snapshot(tmp_path) == files  # again: kept, nothing rewritten


def test_an_unpacked_snapshot_that_was_changed_is_refused_not_imported(tmp_path):
    files = ci_snapshot.extract_snapshot(tmp_path)
    files[0].write_bytes(files[0].read_bytes().replace(b"liger", b"ligre", 1))  # same size: kept, then checked
    with pytest.raises(ci_snapshot.SnapshotError, match=f"not the shipped one \\({files[0].name}\\)"):
        ci_snapshot.extract_snapshot(tmp_path)


def test_commits_txt_lists_the_run_directories_as_benchmark_urls():
    listing = b"c1bdc24\n\n2845fe8\n7644a0f-v0.7.0\nnot a dir/../x\n2845fe8\n"
    assert ci_snapshot.upstream_locators(listing) == [
        f"{ci_snapshot.GH_PAGES}/c1bdc24/benchmark.csv",
        f"{ci_snapshot.GH_PAGES}/2845fe8/benchmark.csv",
        f"{ci_snapshot.GH_PAGES}/7644a0f-v0.7.0/benchmark.csv",
    ]


def test_where_the_list_cannot_be_read_the_snapshot_is_imported_and_said(tmp_path, monkeypatch):
    monkeypatch.setenv(ci_snapshot.LIST_ENV, "http://127.0.0.1:9/benchmarks/commits.txt")  # nothing listens
    said: list[str] = []
    locators = ci_snapshot.resolve_locators(tmp_path, said.append)
    assert len(locators) == 11 and all(ci_snapshot.SNAPSHOT_FOLDER in locator for locator in locators)
    assert said[0].startswith("note: Liger's CI results cannot be listed (")
    assert f"gh-pages at {ci_snapshot.SNAPSHOT_COMMIT}" in said[0] and "importing the snapshot" in said[0]


def test_a_readable_list_is_imported_as_listed(tmp_path, monkeypatch):
    listing = tmp_path / "commits.txt"
    listing.write_text("c1bdc24\n2845fe8\n")
    monkeypatch.setenv(ci_snapshot.LIST_ENV, str(listing))
    said: list[str] = []
    assert ci_snapshot.resolve_locators(tmp_path, said.append) == [
        f"{ci_snapshot.GH_PAGES}/c1bdc24/benchmark.csv",
        f"{ci_snapshot.GH_PAGES}/2845fe8/benchmark.csv",
    ]
    assert said == [f"Liger's CI results: 2 runs listed in {listing}"]
    assert len(ci_snapshot.resolve_locators(tmp_path, said.append, snapshot=True)) == 11  # --snapshot: offline
