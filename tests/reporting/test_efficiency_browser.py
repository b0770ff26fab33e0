"""The site's efficiency charts (kernel pages) and ranking table (landing page) in real Chromium, on real Liger CI rows (H100,
Liger 0.7.0: the slice in tests/fixtures/liger-ci-report). Screenshots for the README:

    KERNELINDEX_EFFICIENCY_SCREENSHOT=docs/images/efficiency-chart.png \\
    KERNELINDEX_EFFICIENCY_TABLE_SCREENSHOT=docs/images/efficiency-table.png pytest tests/reporting/test_efficiency_browser.py
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.support import FIXTURES
from tests.support.browser import page_of

CI_DIR = FIXTURES / "liger-ci-report"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def ci_report(tmp_path_factory):
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.reporting.site import build_site

    manifests: dict[str, dict] = {}
    for path in sorted(CI_DIR.glob("*.csv")):
        manifests.update(import_csv(path).manifests)
    return build_site(list(manifests.values()), tmp_path_factory.mktemp("site"))


def _screenshot(page, locator, env: str, tmp_path: Path) -> None:
    if os.environ.get(env):
        locator.scroll_into_view_if_needed()
        shot = tmp_path / "shot.png"
        locator.screenshot(path=str(shot))
        shutil.copyfile(shot, os.environ[env])


def test_efficiency_charts_and_table_in_chromium(browser, ci_report, tmp_path):
    state = json.loads((ci_report.path.parent / "site-state.json").read_text(encoding="utf-8"))["kernels"]
    with page_of(browser, 1300, 1000) as page:
        kernels = set()
        for kernel, facts in state.items():
            page.goto((ci_report.path.parent / "kernels" / f"{facts['slug']}.html").resolve().as_uri())
            page.wait_for_selector("#chart-grid[data-figure-count]", timeout=30_000)
            if page.locator('figure.chart[data-chart-kind="efficiency"]').count():
                kernels.add(kernel)
            if kernel == "rms_norm":
                chart = page.locator('figure.chart[data-chart-kind="efficiency"]').first
                chart.scroll_into_view_if_needed()
                chart.locator(".vega[data-rendered='1'] svg").wait_for(timeout=30_000)
                rows = page.evaluate(
                    """() => document.querySelector('figure.chart[data-chart-kind="efficiency"] .vega').chartRows"""
                )
                assert rows and all(0 < r["pct"] for r in rows)
                _screenshot(page, chart, "KERNELINDEX_EFFICIENCY_SCREENSHOT", tmp_path)
        # bytes-bound and FLOP-bound kernels with cost models have charts; a kernel without one has none
        assert {"rms_norm", "layer_norm", "swiglu", "fused_linear_cross_entropy", "embedding"} <= kernels
        assert "dyt" not in kernels

        page.goto(ci_report.path.resolve().as_uri())
        page.wait_for_load_state("load")
        rows = page.evaluate("""() => Array.from(document.querySelectorAll('#efficiency-section tr.efficiency')).map(r => ({
                gpu: r.dataset.gpu, kernel: r.dataset.kernel, mode: r.dataset.mode, pct: Number(r.dataset.pct),
                flags: r.dataset.flags, implausible: r.classList.contains('implausible'),
                ranked: !!r.closest('table.efficiency-ranking'), folded: !!r.closest('details:not([open])'),
                shown: r.getBoundingClientRect().height > 0}))""")
        ranked = [r for r in rows if r["ranked"]]
        assert ranked and all(r["shown"] and not r["implausible"] for r in ranked)
        assert [r["pct"] for r in ranked] == sorted(r["pct"] for r in ranked)  # one GPU: least efficient first
        folded = [r for r in rows if not r["ranked"]]
        assert folded and all(r["implausible"] and r["folded"] for r in folded)  # apart, folded
        assert any("l2-resident" in r["flags"] for r in folded if r["kernel"] == "embedding")
        _screenshot(page, page.locator("#efficiency-section"), "KERNELINDEX_EFFICIENCY_TABLE_SCREENSHOT", tmp_path)
