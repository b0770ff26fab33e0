"""The kernel page's compare of two runs of one GPU gives, per case, the changes detection found between them with
the regressions page's numbers (B / A and its 95 % interval, regressions.json's `magnitude` and `ci95`), and links
each compared value to where its run came from, in Chromium.
Input: the small constructed catalogue (rms_norm's Liger forward 30 % slower in 0.8.1)."""

from __future__ import annotations

import json

import pytest

from kernelindex_pipeline.records.canonical import digest_of
from kernelindex_pipeline.reporting.site import build_site
from tests.reporting.test_site_catalogue import data_of, small_catalogue
from tests.support.browser import page_of


@pytest.mark.browser
@pytest.mark.slow
def test_compare_two_runs_gives_the_regressions_pages_changes_between_them(tmp_path, browser):
    manifests = small_catalogue().manifests()
    # each run linked where it came from (catalogue/origins.py makes these from the publications)
    origins = {
        digest_of(m): f"https://ci.test/{m['metadata']['labels']['liger_version']}/{digest_of(m)}"
        for m in manifests
        if m["kind"] == "BenchmarkRun"
    }
    site = build_site(manifests, tmp_path / "site", origins=origins)
    report = json.loads((tmp_path / "site" / "regressions.json").read_text(encoding="utf-8"))
    expected = sorted(
        [c["magnitude"], *c["ci95"], c["id"]]
        for c in report["changes"]
        if (c["kernel"], c["mode"], c["provider"]) == ("rms_norm", "forward", "liger")
    )
    assert len(expected) == 4 and all(1.25 < m < 1.35 for m, *_ in expected)  # one per seq, the 30 % step
    data = data_of(site, "rms_norm")
    assert sorted(row[3:] for row in data["changes"]) == sorted(expected)  # the data carries them as they are

    with page_of(browser) as page:
        page.goto((tmp_path / "site" / "kernels" / "rms-norm.html").resolve().as_uri())
        page.wait_for_selector("#compare-ratio[data-rendered='1'] svg", timeout=30_000)
        page.select_option("#c-by", "run")
        page.select_option("#c-mode", "forward")
        page.select_option("#c-provider", "liger")
        runs = page.eval_on_selector_all("#c-a option", "os => os.map(o => [o.value, o.textContent])")
        assert [label.split(" ")[0] for _, label in runs] == ["0.8.0", "0.8.1"], runs

        def detected():
            page.wait_for_selector("#compare-ratio[data-rendered='1'] svg", timeout=30_000)
            cells = page.eval_on_selector_all(
                "#compare-table tr.compare-row td.detected",
                "cs => cs.map(c => [JSON.parse(c.dataset.changes), c.textContent])",
            )
            assert len(cells) == 4, cells
            return cells

        page.select_option("#c-a", runs[0][0])
        page.select_option("#c-b", runs[1][0])
        cells = detected()
        assert sorted([f["ratio"], f["low"], f["high"], f["id"]] for found, _ in cells for f in found) == expected
        assert all(text == f"×{found[0]['ratio']} [{found[0]['low']}–{found[0]['high']}]" for found, text in cells)
        # each compared value links to its run's origin: A's to a 0.8.0 run, B's to a 0.8.1 run
        links = page.eval_on_selector_all(
            "#compare-table tr.compare-row", "rs => rs.map(r => [...r.querySelectorAll('a.origin')].map(a => a.href))"
        )
        assert len(links) == 4 and all(len(pair) == 2 for pair in links), links
        assert all(a in origins.values() and "/0.8.0/" in a and "/0.8.1/" in b for a, b in links)

        page.select_option("#c-a", runs[1][0])  # B before A: the same changes, as B / A
        page.select_option("#c-b", runs[0][0])
        inverted = sorted(f["id"] for found, _ in detected() for f in found)
        assert inverted == sorted(e[3] for e in expected)
        for found, _ in detected():
            (f,) = found
            ratio, low, high, _ = next(e for e in expected if e[3] == f["id"])
            assert f["ratio"] == pytest.approx(1 / ratio, rel=1e-3) and f["low"] == pytest.approx(1 / high, rel=1e-3)

        page.select_option("#c-b", runs[1][0])  # one run against itself: nothing between them
        assert all(found == [] and text == "none (within noise)" for found, text in detected())
