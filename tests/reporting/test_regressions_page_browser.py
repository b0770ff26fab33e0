"""The regressions page of Liger's real CI runs (the tests/fixtures/liger-ci-slice slice), rendered in
headless Chromium as a reader sees it: offline from file://, every change with its trend chart drawn in the
browser when it scrolls into view (not before), tooltips naming the run, no console errors.

Needs Debian's Chromium at /usr/bin/chromium (`apt-get install -y chromium`). Set
KERNELINDEX_REGRESSIONS_SCREENSHOT=<path.png> to keep a screenshot (docs/images/regressions.png is made so).
"""

from __future__ import annotations

import os
import shutil

import pytest

from kernelindex_pipeline.cli import main
from kernelindex_pipeline.reporting.site_files import read_js_payload
from tests.support.ci_slice import unpack_ci_slice
from tests.support.ui_support import CHROMIUM, CHROMIUM_ARGS

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_regressions_page_renders_in_chromium(tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    files = [str(path) for path in unpack_ci_slice(tmp_path / "runs")]
    out = tmp_path / "out"
    assert main(["regressions", "--records", *files, "--out", str(out)]) == 0

    data = read_js_payload((out / "data" / "regressions.js").read_text(encoding="utf-8"))

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 1000}, offline=True)
            page = context.new_page()
            errors, requests = [], []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.goto((out / "regressions.html").resolve().as_uri())
            page.wait_for_load_state("load")
            seen = page.evaluate("""() => ({
                body: {...document.body.dataset},
                causes: Array.from(document.querySelectorAll('section.cause')).map(s => ({
                    cause: s.dataset.cause, changes: Number(s.dataset.changeCount),
                    rows: s.querySelectorAll('table tr').length - 1,
                    figures: s.querySelectorAll('figure.trend').length})),
                trends: Array.from(document.querySelectorAll('figure.trend')).map(f => ({
                    trend: Number(f.dataset.trend), split: Number(f.dataset.split), metric: f.dataset.metric})),
                host: !!document.querySelector('figure#host-effects .vega'),
                hostRows: document.querySelectorAll('#host table tr').length - 1,
                groups: Array.from(document.querySelectorAll('#by-commit details.change-group')).map(g => ({
                    cause: g.dataset.cause, changes: Number(g.dataset.changeCount),
                    rows: g.querySelectorAll('table tr').length - 1})),
                byCommitSummary: document.querySelector('#by-commit p.summary')?.textContent || "",
            })""")
            # the five causes, in order, each listing every one of its changes, each change with its chart
            assert [c["cause"] for c in seen["causes"]] == [
                "liger_kernel",
                "benchmark_script",
                "environment",
                "host",
                "unknown",
            ]
            changes = int(seen["body"]["changeCount"])
            assert sum(c["changes"] for c in seen["causes"]) == changes > 0
            for cause in seen["causes"]:
                assert cause["rows"] == (cause["changes"] if cause["changes"] else -1)
                assert cause["figures"] == cause["changes"]
            # each figure's data: its series' metric, the change inside it (a run on each side)
            for figure in seen["trends"]:
                trend = data["trends"][figure["trend"]]
                assert trend["metric"] == figure["metric"] and 0 < figure["split"] < len(trend["t"])
                assert len(trend["t"]) == len(trend["v"]) == len(trend["c"]) == len(trend["src"])
            # grouped by (boundary, cause, suspects): every change in exactly one entry, each listing its series
            assert seen["groups"] and sum(g["changes"] for g in seen["groups"]) == changes
            assert all(g["rows"] == g["changes"] for g in seen["groups"])
            assert seen["byCommitSummary"].startswith("0 slowdowns from 0 commits")  # no clone: no commit named
            assert seen["host"] and seen["hostRows"] == int(seen["body"]["hostEffectCount"]) > 0

            # lazily drawn: opening the page draws only what is in view, never every chart
            drawn = "document.querySelectorAll('figure .vega[data-rendered]').length"
            assert page.evaluate(drawn) < changes
            page.locator("#host-effects").scroll_into_view_if_needed()
            page.wait_for_selector("#host-effects .vega[data-rendered='1'] svg", timeout=30_000)
            first = page.locator("figure.trend").first
            first.scroll_into_view_if_needed()
            first.locator(".vega[data-rendered='1'] svg").wait_for(timeout=30_000)
            assert page.evaluate(drawn) < changes  # the host chart and the few trends in view
            # a point's tooltip names its run
            first.locator(".mark-symbol path").first.hover(force=True)
            text = page.wait_for_selector("#vg-tooltip-element.visible", timeout=10_000).inner_text()
            trend = data["trends"][seen["trends"][0]["trend"]]
            for field in ("date", "source", "Liger", "commit", "raw value"):
                assert field in text, (field, text)
            assert trend["t"][0] in text and data["sources"][trend["src"][0]] in text

            # every chart draws once scrolled to: the last one too, without an error
            figures = page.locator("figure.trend")
            for i in range(0, changes, 6):
                figures.nth(i).scroll_into_view_if_needed()
            figures.last.scroll_into_view_if_needed()
            page.wait_for_function(
                f"document.querySelectorAll('figure.trend .vega[data-rendered]').length === {changes}", timeout=120_000
            )
            assert page.locator("figure.trend .vega[data-rendered='1'] svg").count() == changes
            assert errors == []
            assert all(u.startswith("file://") for u in requests), requests

            # the screenshot: the host effects chart and the first changes' trend charts, drawn
            page.locator("#host").scroll_into_view_if_needed()
            top = page.locator("#host").bounding_box()["y"] + page.evaluate("window.scrollY")
            screenshot = tmp_path / "regressions.png"
            page.screenshot(
                path=str(screenshot), clip={"x": 0, "y": top, "width": 1300, "height": 1500}, full_page=True
            )
            assert screenshot.stat().st_size > 10_000
            if os.environ.get("KERNELINDEX_REGRESSIONS_SCREENSHOT"):
                shutil.copyfile(screenshot, os.environ["KERNELINDEX_REGRESSIONS_SCREENSHOT"])
        finally:
            browser.close()
