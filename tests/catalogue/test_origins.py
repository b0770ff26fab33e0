"""Every site point links to where its run came from (catalogue/origins.py): the CI run's file on Liger's gh-pages
(a file of the shipped snapshot by its upstream URL), the history's sdist, the sweep's run in the Dagster UI
($KERNELINDEX_DAGSTER_UI_URL). Through a real SQLite catalogue and the site's kernel data."""

from __future__ import annotations

from kernelindex_pipeline.catalogue.origins import DEFAULT_UI_URL, UI_URL_ENV, origin_of_snapshot, run_origins
from kernelindex_pipeline.catalogue.store import CatalogueStore
from kernelindex_pipeline.liger import ci_snapshot
from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.reporting.site import build_site
from kernelindex_pipeline.reporting.site_files import read_js_payload
from tests.reporting.test_site_catalogue import data_of, small_catalogue

SDIST = "https://files.pythonhosted.org/packages/ab/cd/liger_kernel-0.8.1.tar.gz"
CI_NAME = "2845fe8.csv"  # a file of the shipped snapshot, unpacked under DAGSTER_HOME
CI_URL = f"{ci_snapshot.GH_PAGES}/2845fe8/benchmark.csv"


def _snapshots(tmp_path) -> dict[str, dict]:
    shipped = tmp_path / ci_snapshot.SNAPSHOT_FOLDER / CI_NAME
    return {
        "0.8.0": {"locator": str(shipped), "sha256": ci_snapshot.SNAPSHOT_FILES[CI_NAME], "resolvedVersion": "0.8.0"},
        "0.8.1": {
            "locator": f"{SDIST}#liger_kernel-0.8.1/benchmark/data/all_benchmark_data.csv",
            "sha256": "0" * 64,
            "resolvedVersion": "0.8.1",
        },
        "0.2.1": {"locator": "sweep:/tmp/work/benchmark/data/all_benchmark_data.csv", "dagsterRunId": "1234-abcd"},
    }


def test_each_chain_links_its_origin(tmp_path, monkeypatch):
    monkeypatch.delenv(UI_URL_ENV, raising=False)
    snapshots = _snapshots(tmp_path)
    assert origin_of_snapshot(snapshots["0.8.0"]) == CI_URL  # the shipped file: its gh-pages URL
    assert origin_of_snapshot({**snapshots["0.8.0"], "sha256": "f" * 64}) == (tmp_path / ci_snapshot.SNAPSHOT_FOLDER / CI_NAME).as_uri()  # fmt: skip
    assert origin_of_snapshot({"locator": CI_URL, "sha256": "1" * 64}) == CI_URL
    assert origin_of_snapshot(snapshots["0.8.1"]) == SDIST
    assert origin_of_snapshot({"locator": "pypi:liger-kernel==0.6.1/liger_kernel-0.6.1.tar.gz#x/y.csv"}) == (
        "https://pypi.org/project/liger-kernel/0.6.1/#files"
    )
    assert origin_of_snapshot(snapshots["0.2.1"]) == f"{DEFAULT_UI_URL}/runs/1234-abcd"
    monkeypatch.setenv(UI_URL_ENV, "http://dagster.example:8080/")
    assert origin_of_snapshot(snapshots["0.2.1"]) == "http://dagster.example:8080/runs/1234-abcd"
    assert origin_of_snapshot({"locator": "sweep:/tmp/work/x.csv"}) is None  # no run id kept: nothing to link
    assert origin_of_snapshot(None) is None


def test_site_points_link_where_their_runs_came_from(tmp_path, monkeypatch):
    monkeypatch.setenv(UI_URL_ENV, "http://ui.test:3000")
    manifests = small_catalogue().manifests()
    runs = [m for m in manifests if m["kind"] == "BenchmarkRun"]
    version_of = {digest_of(m): m["metadata"]["labels"]["liger_version"] for m in runs}
    snapshots = _snapshots(tmp_path)
    with CatalogueStore.open(f"sqlite:///{tmp_path / 'catalogue.sqlite'}") as store:
        others = [m for m in manifests if m["kind"] != "BenchmarkRun"]
        for i, (version, snapshot) in enumerate(snapshots.items()):
            chosen = [m for m in runs if version_of[digest_of(m)] == version]
            assert chosen, version
            store.publish((others if i == 0 else []) + chosen, partition=f"test:{version}", source=snapshot)
        store.publish(
            runs, partition="test:again", source={"locator": "https://elsewhere.test/x.csv", "sha256": "2" * 64}
        )
        origins = run_origins(store)
    expected = {"0.8.0": CI_URL, "0.8.1": SDIST, "0.2.1": "http://ui.test:3000/runs/1234-abcd"}
    assert origins == {digest: expected[version] for digest, version in version_of.items()}  # the first publication's

    site = build_site(manifests, tmp_path / "site", origins=origins)
    linked = set()
    for kernel in ("rms_norm", "swiglu"):
        data = data_of(site, kernel)
        for points in data["points"]:
            for point in points:
                assert data["origins"][point[12]] == origins[point[5]]  # [5]: the run digest
                linked.add(data["origins"][point[12]])
    assert linked == set(expected.values())  # every point linked, each chain's link among them
    # the regressions page's trend points: each source run (detection's '<gpu> <observedAt>') links its origin
    regressions = read_js_payload((tmp_path / "site" / "data" / "regressions.js").read_text(encoding="utf-8"))
    by_source = dict(zip(regressions["sources"], regressions["sourceOrigins"], strict=True))
    assert regressions["trends"] and set(by_source.values()) == {CI_URL, SDIST}  # rms_norm's two versions' runs
    for trend in regressions["trends"]:
        for i, when in zip(trend["src"], trend["t"], strict=True):
            version = "0.8.0" if when < "2025-06" else "0.8.1"  # the catalogue's 0.8.0 runs: March to May
            assert by_source[regressions["sources"][i]] == expected[version], (regressions["sources"][i], when)

    data = data_of(build_site(manifests, tmp_path / "unlinked"), "rms_norm")
    assert data["origins"] == [] and {p[12] for points in data["points"] for p in points} == {None}
