"""The site of the full 0.8.5 history, rendered in headless Chromium (the matplotlib report's test, moved to the
site when the report became the site: issue 21).

Needs the package index (the 0.8.5 sdist) and Debian's Chromium at /usr/bin/chromium
(`apt-get install -y chromium`; Playwright cannot download its own browser here).
Set KERNELINDEX_REPORT_SCREENSHOT=<path.png> to also keep a screenshot of RMSNorm's page there.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter, defaultdict

import pytest

from tests.support.browser import page_of
from tests.support.run_series import run_series

pytestmark = [pytest.mark.network, pytest.mark.browser]


@pytest.fixture(scope="module")
def history_manifests(tmp_path_factory):
    from kernelindex_pipeline.liger import import_csv
    from kernelindex_pipeline.liger.release import fetch_release, read_history_csv

    artifact = fetch_release(
        "0.8.5", cache_dir=os.environ.get("KERNELINDEX_CACHE_DIR") or tmp_path_factory.mktemp("release-cache")
    )
    data, snapshot = read_history_csv(artifact)
    return list(import_csv(data, snapshot=snapshot).manifests.values())


def expected_series_by_kernel(manifests) -> dict[str, set]:
    """Series counted straight from the runs: kernel, mode, metric, provider, GPU, case key and the four
    digests (`run_series`, an independent reading of the externalId)."""
    by_kernel: dict[str, set] = defaultdict(set)
    for m in manifests:
        series = run_series(m)
        if series is not None:
            by_kernel[series.kernel].add(series)
    return by_kernel


@pytest.mark.slow  # 24 s on a quiet two-core machine
def test_full_history_site_renders_in_chromium(browser, history_manifests, tmp_path):
    from kernelindex_pipeline.reporting.site import build_site

    result = build_site(history_manifests, tmp_path / "site")
    expected = expected_series_by_kernel(history_manifests)
    assert len(expected) > 20  # the 0.8.5 history has data for some 35 curated kernels
    assert result.counts["kernels"] == len(expected)
    assert result.counts["series"] == sum(len(s) for s in expected.values())
    # every kernel with data has its page, and its series count is the input's
    state = json.loads((result.path.parent / "site-state.json").read_text(encoding="utf-8"))["kernels"]
    assert {k: f["series"] for k, f in state.items()} == {k: len(v) for k, v in expected.items()}

    with page_of(browser, 1300, 1000) as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(result.path.resolve().as_uri())
        page.wait_for_selector("#overview-chart[data-rendered='1'] svg", timeout=30_000)
        assert int(page.locator("body").get_attribute("data-series-count")) == result.counts["series"]
        # the kernel list leads to every kernel's page, as a reader would use it; each page draws its charts
        links = page.eval_on_selector_all("nav#kernels a", "as => as.map(a => a.getAttribute('href'))")
        assert sorted(links) == sorted(f"kernels/{f['slug']}.html" for f in state.values())
        page.get_by_role("link", name="LayerNorm").first.click()
        page.wait_for_selector("figure.chart .vega[data-rendered='1'] svg", timeout=30_000)
        assert page.url.endswith("/kernels/layer-norm.html")
        for kernel, facts in state.items():
            page.goto((result.path.parent / "kernels" / f"{facts['slug']}.html").resolve().as_uri())
            page.locator("figure.chart").first.scroll_into_view_if_needed()  # drawn once in view
            page.wait_for_selector("figure.chart .vega[data-rendered]", timeout=30_000)
            assert page.locator("figure.chart .vega[data-rendered='error']").count() == 0, (kernel, errors)
            kinds = set(page.eval_on_selector_all("figure.chart", "fs => fs.map(f => f.dataset.chartKind)"))
            assert kinds & {"latency", "memory"}, f"no latency or memory chart for {kernel}"
            if kernel == "rms_norm":  # Liger over the Transformers baseline: the history has both
                assert "speedup" in kinds
                screenshot = tmp_path / "site-rms-norm.png"  # its first sweep's charts, drawn
                page.add_style_tag(content=".filters{position:static}")  # no sticky bar over the shot
                sweep = page.locator("div.sweep").first
                sweep.scroll_into_view_if_needed()
                page.wait_for_function(
                    "[...document.querySelector('div.sweep').querySelectorAll('.vega')]"
                    ".every(v => v.dataset.rendered === '1')",
                    timeout=30_000,
                )
                sweep.screenshot(path=str(screenshot))
                assert screenshot.stat().st_size > 10_000
                if os.environ.get("KERNELINDEX_REPORT_SCREENSHOT"):
                    shutil.copyfile(screenshot, os.environ["KERNELINDEX_REPORT_SCREENSHOT"])
        assert errors == []

    # every series with too few runs for a change (two on each side) is reported as insufficient data, not as
    # "no regression"; the others are judged
    from kernelindex_pipeline.liger.identity import parse_external_id

    runs_by_series: Counter = Counter()
    for m in history_manifests:
        if m["kind"] == "BenchmarkRun":
            found = parse_external_id(m["spec"]["sourceNative"]["externalId"])
            runs_by_series[
                (found.kernel, found.mode, found.provider, found.gpu_slug, found.case_key, found.memory)
            ] += 1
    short = sum(1 for n in runs_by_series.values() if n < result.regressions.settings.min_runs)
    assert len(result.regressions.insufficient) == short
    assert len(result.regressions.trends) == len(runs_by_series) - short
    if short:
        assert "Insufficient data" in (result.path.parent / "regressions.html").read_text(encoding="utf-8")
