"""The site on a small constructed catalogue (no browser needed): counts, each kernel's data against the runs,
regressions.json, a kernel with one version, a rebuild after a kernel left, an empty catalogue. (Moved from the
matplotlib report's tests, tests/test_reporting_html.py, when the report became the site: issue 21.)"""

from __future__ import annotations

import json

import pytest

from kernelindex_pipeline.reporting.site import build_site
from kernelindex_pipeline.reporting.site_files import read_js_payload
from tests.support.factories import SampleCatalogue


def small_catalogue() -> SampleCatalogue:
    """rms_norm swept over seq on H100 (Liger, torch baseline, torch.compile; two versions measured three
    times each with 1 % noise, Liger forward 30% slower in 0.8.1), plus swiglu on A100 at one version only
    with a single workload."""
    catalogue = SampleCatalogue()
    for run, (version, month, liger_factor) in enumerate(
        (
            ("0.8.0", 3, 1.0),
            ("0.8.0", 4, 1.0),
            ("0.8.0", 5, 1.0),
            ("0.8.1", 6, 1.3),
            ("0.8.1", 7, 1.3),
            ("0.8.1", 8, 1.3),
        )
    ):
        for mode in ("forward", "backward"):
            for provider, cost in (("liger", 1.0), ("torch", 2.0), ("torch_compile", 1.5)):
                for seq in (512, 1024, 2048, 4096):
                    slower = liger_factor if (provider, mode) == ("liger", "forward") else 1.0
                    noise = 1 + 0.01 * ((run * 7 + seq // 512) % 3 - 1)
                    catalogue.run(
                        kernel="rms_norm",
                        mode=mode,
                        provider=provider,
                        axes={"seq": seq, "hidden": 4096},
                        version=version,
                        median_ns=int(seq * 1000 * cost * slower * noise),
                        timestamp=f"2025-{month:02d}-01 00:00:00",
                    )
    for provider in ("liger", "huggingface"):
        catalogue.run(
            kernel="swiglu",
            mode="full",
            provider=provider,
            gpu="NVIDIA A100-SXM4-80GB",
            axes={"batch": 4, "seq": 2048},
            version="0.2.1",
            median_ns=3_000_000,
        )
    return catalogue


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return build_site(small_catalogue().manifests(), tmp_path_factory.mktemp("site"))


def data_of(site, kernel: str) -> dict:
    state = json.loads((site.path.parent / "site-state.json").read_text(encoding="utf-8"))["kernels"]
    return read_js_payload((site.path.parent / "data" / f"{state[kernel]['slug']}.js").read_text(encoding="utf-8"))


def test_counts_and_each_kernels_series(site):
    # rms_norm: 3 providers x 2 modes x 4 seq = 24 series; swiglu: 2 series
    assert site.counts["kernels"] == 2
    assert site.counts["series"] == 26
    assert site.counts["slowdowns"] == 4  # Liger forward at each of the four seq values
    assert site.counts["runs"] == 24 * 6 + 2
    rms_norm, swiglu = data_of(site, "rms_norm"), data_of(site, "swiglu")
    assert len(rms_norm["series"]) == 24 and len(swiglu["series"]) == 2
    assert rms_norm["versions"] == ["0.8.0", "0.8.1"] and swiglu["versions"] == ["0.2.1"]
    # one sweep of seq per pass on the H100: every workload on it at its x
    [sweep] = rms_norm["sweeps"]
    assert sweep["axis"] == "seq" and sorted(x for _, x in sweep["members"]) == [512, 1024, 2048, 4096]
    # one point per series and version: the newest of the three runs of a version, which folds the other two
    for points in rms_norm["points"]:
        assert [p[0] for p in points] == [0, 1] and [p[9] for p in points] == [3, 3]
    page = site.path.read_text(encoding="utf-8")
    assert 'data-kernel-count="2" data-series-count="26"' in page
    assert 'href="kernels/rms-norm.html"' in page and 'href="kernels/swiglu.html"' in page


def test_regressions_are_written_beside_the_site(site):
    saved = json.loads((site.path.parent / "regressions.json").read_text())
    assert saved["counts"]["slowdowns"] == 4 and saved["series"] == 24 and saved["insufficient"] == 2
    assert {
        (r["provider"], r["mode"], r["before"]["ligerVersion"], r["after"]["ligerVersion"], r["cause"])
        for r in saved["changes"]
    } == {("liger", "forward", "0.8.0", "0.8.1", "unknown")}  # no commits known
    assert all(
        abs(r["magnitude"] - 1.3) < 0.03 and r["ci95"][0] < r["magnitude"] < r["ci95"][1] for r in saved["changes"]
    )
    page = (site.path.parent / "regressions.html").read_text(encoding="utf-8")
    assert page.count('<figure class="trend" data-kernel="rms_norm"') == 4  # every change its chart
    assert "4 slowdowns" in site.path.read_text(encoding="utf-8")  # the landing page's summary links it


def test_a_kernel_with_one_version_is_insufficient_for_detection(site):
    assert site.regressions.counts()["insufficient"] == 2
    assert "Insufficient data" in (site.path.parent / "regressions.html").read_text(encoding="utf-8")


def test_a_rebuild_removes_the_pages_of_a_kernel_that_left(tmp_path):
    first = build_site(small_catalogue().manifests(), tmp_path)
    assert (tmp_path / "kernels" / "rms-norm.html").exists() and (tmp_path / "data" / "rms-norm.js").exists()
    only_swiglu = [
        m
        for m in small_catalogue().manifests()
        if m["kind"] != "BenchmarkRun" or m["spec"]["sourceNative"]["benchmark"].startswith("swiglu")
    ]
    second = build_site(only_swiglu, tmp_path)
    assert first.path == second.path and second.counts["kernels"] == 1
    assert second.changed == {"rms_norm": "removed"}
    assert not (tmp_path / "kernels" / "rms-norm.html").exists() and not (tmp_path / "data" / "rms-norm.js").exists()
    assert sorted(p.name for p in (tmp_path / "kernels").iterdir()) == ["swiglu.html"]
    assert [p.name for p in tmp_path.rglob(".*.tmp")] == []  # no half-written file left


def test_an_empty_catalogue_gives_an_empty_but_valid_site(tmp_path):
    result = build_site([], tmp_path)
    assert result.counts["kernels"] == result.counts["series"] == result.counts["runs"] == 0
    assert 'data-kernel-count="0"' in result.path.read_text(encoding="utf-8")
    assert "Insufficient data" not in (tmp_path / "regressions.html").read_text(encoding="utf-8")
    assert json.loads((tmp_path / "regressions.json").read_text())["counts"]["slowdowns"] == 0
