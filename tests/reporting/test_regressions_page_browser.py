"""The regressions page of Liger's real CI runs (the tests/fixtures/liger-ci-slice slice), rendered in
headless Chromium as a reader sees it: offline from file://, every change with its trend chart drawn in the
browser when it scrolls into view (not before), tooltips naming the run, no console errors.

One claim per test, each on its own page of one regressions output (the session's Chromium: tests/support/
browser.py). Set KERNELINDEX_REGRESSIONS_SCREENSHOT=<path.png> to keep a screenshot (docs/images/regressions.png
is made so).
"""

from __future__ import annotations

import os

import pytest

from kernelindex_pipeline.cli import main
from kernelindex_pipeline.reporting.site_files import read_js_payload
from tests.support.browser import Watched
from tests.support.ci_slice import unpack_ci_slice

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# What the page shows, read in one call: its counts, each cause's section, each trend figure, the host
# effects and the groups by commit.
PAGE_FACTS = """() => ({
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
})"""
DRAWN = "document.querySelectorAll('figure .vega[data-rendered]').length"


@pytest.fixture(scope="module")
def regressions(tmp_path_factory):
    """(the output folder, its data/regressions.js) of `regressions --records` over the CI slice, no clone."""
    root = tmp_path_factory.mktemp("regressions-page")
    files = [str(path) for path in unpack_ci_slice(root / "runs")]
    out = root / "out"
    assert main(["regressions", "--records", *files, "--out", str(out)]) == 0
    return out, read_js_payload((out / "data" / "regressions.js").read_text(encoding="utf-8"))


@pytest.fixture
def opened(browser, regressions):
    """The page, opened offline from file:// and loaded, its console errors and requests recorded."""
    out, _ = regressions
    watched = Watched(browser)
    try:
        watched.page.goto((out / "regressions.html").resolve().as_uri())
        watched.page.wait_for_load_state("load")
        yield watched
    finally:
        watched.close()


def _facts(opened) -> dict:
    return opened.page.evaluate(PAGE_FACTS)


def test_the_page_lists_the_five_causes_in_order_each_with_every_change_and_its_chart(opened):
    seen = _facts(opened)
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


def test_each_trend_chart_shows_its_series_metric_with_the_change_inside_it(opened, regressions):
    _, data = regressions
    for figure in _facts(opened)["trends"]:
        trend = data["trends"][figure["trend"]]
        assert trend["metric"] == figure["metric"] and 0 < figure["split"] < len(trend["t"])
        assert len(trend["t"]) == len(trend["v"]) == len(trend["c"]) == len(trend["src"])


def test_every_change_is_in_exactly_one_group_by_what_changed_it_and_without_a_clone_no_commit_is_named(opened):
    seen = _facts(opened)
    assert seen["groups"] and sum(g["changes"] for g in seen["groups"]) == int(seen["body"]["changeCount"])
    assert all(g["rows"] == g["changes"] for g in seen["groups"])
    assert seen["byCommitSummary"].startswith("0 slowdowns from 0 commits")


def test_the_host_effects_have_their_chart_and_a_row_each(opened):
    seen = _facts(opened)
    assert seen["host"] and seen["hostRows"] == int(seen["body"]["hostEffectCount"]) > 0


def test_opening_the_page_draws_only_the_charts_in_view(opened):
    page, changes = opened.page, int(_facts(opened)["body"]["changeCount"])
    assert page.evaluate(DRAWN) < changes
    page.locator("#host-effects").scroll_into_view_if_needed()
    page.wait_for_selector("#host-effects .vega[data-rendered='1'] svg", timeout=30_000)
    first = page.locator("figure.trend").first
    first.scroll_into_view_if_needed()
    first.locator(".vega[data-rendered='1'] svg").wait_for(timeout=30_000)
    assert page.evaluate(DRAWN) < changes  # the host chart and the few trends in view


def test_a_points_tooltip_names_its_run(opened, regressions):
    _, data = regressions
    page = opened.page
    first = page.locator("figure.trend").first
    first.scroll_into_view_if_needed()
    first.locator(".vega[data-rendered='1'] svg").wait_for(timeout=30_000)
    first.locator(".mark-symbol path").first.hover(force=True)
    text = page.wait_for_selector("#vg-tooltip-element.visible", timeout=10_000).inner_text()
    trend = data["trends"][_facts(opened)["trends"][0]["trend"]]
    for field in ("date", "source", "Liger", "commit", "raw value"):
        assert field in text, (field, text)
    assert trend["t"][0] in text and data["sources"][trend["src"][0]] in text


def test_every_chart_draws_once_scrolled_to_offline_and_without_an_error(opened):
    page, changes = opened.page, int(_facts(opened)["body"]["changeCount"])
    figures = page.locator("figure.trend")
    for i in range(0, changes, 6):
        figures.nth(i).scroll_into_view_if_needed()
    figures.last.scroll_into_view_if_needed()
    page.wait_for_function(
        f"document.querySelectorAll('figure.trend .vega[data-rendered]').length === {changes}", timeout=120_000
    )
    assert page.locator("figure.trend .vega[data-rendered='1'] svg").count() == changes
    assert opened.errors == []
    assert all(u.startswith("file://") for u in opened.requests), opened.requests
    if os.environ.get("KERNELINDEX_REGRESSIONS_SCREENSHOT"):  # the host effects chart and the first trend charts
        page.locator("#host").scroll_into_view_if_needed()
        top = page.locator("#host").bounding_box()["y"] + page.evaluate("window.scrollY")
        page.screenshot(
            path=os.environ["KERNELINDEX_REGRESSIONS_SCREENSHOT"],
            clip={"x": 0, "y": top, "width": 1300, "height": 1500},
            full_page=True,
        )
