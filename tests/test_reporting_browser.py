"""The report for the full 0.8.5 history, rendered in headless Chromium.

Needs the package index (the 0.8.5 sdist) and Debian's Chromium at /usr/bin/chromium
(`apt-get install -y chromium`; Playwright cannot download its own browser here).
Set KERNELINDEX_REPORT_SCREENSHOT=<path.png> to also keep a screenshot there
(docs/report.png is made this way).
"""

from __future__ import annotations

import os
import shutil
from collections import Counter, defaultdict

import pytest
from ui_support import CHROMIUM, CHROMIUM_ARGS

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
    digests (an independent reading of the externalId: memory runs have a `memory` segment after the mode)."""
    by_kernel: dict[str, set] = defaultdict(set)
    for m in manifests:
        if m["kind"] != "BenchmarkRun":
            continue
        spec = m["spec"]
        parts = spec["sourceNative"]["externalId"].split("/")
        metric = parts.pop(2) if len(parts) == 7 else "speed"
        kernel, mode, provider, gpu, case_key, _timestamp = parts
        by_kernel[kernel].add(
            (
                mode,
                metric,
                provider,
                gpu,
                case_key,
                spec["implementationDigest"],
                spec["workloadDigest"],
                spec["protocolDigest"],
                spec["environmentDigest"],
            )
        )
    return by_kernel


@pytest.mark.slow  # 24 s on a quiet two-core machine
def test_full_history_report_renders_in_chromium(history_manifests, tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    from kernelindex_pipeline.reporting import build_report

    result = build_report(history_manifests, tmp_path / "report")
    expected = expected_series_by_kernel(history_manifests)
    assert len(expected) > 20  # the 0.8.5 history has data for some 35 curated kernels
    assert result.counts["kernels"] == len(expected)
    assert result.counts["series"] == sum(len(s) for s in expected.values())

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto(result.path.resolve().as_uri())
            page.wait_for_load_state("load")
            page.wait_for_function("Array.from(document.images).every(img => img.complete)")
            seen = page.evaluate("""() => ({
                body: {...document.body.dataset},
                kernels: Array.from(document.querySelectorAll('section.kernel')).map(s => ({
                    kernel: s.dataset.kernel, series: Number(s.dataset.seriesCount), id: s.id})),
                charts: Array.from(document.querySelectorAll('figure.chart')).map(f => {
                    const img = f.querySelector('img');
                    return {kernel: f.dataset.kernel, kind: f.dataset.chartKind, series: Number(f.dataset.seriesCount),
                            loaded: !!img && img.complete && img.naturalWidth > 0,
                            width: img ? img.getBoundingClientRect().width : 0};
                }),
                toc: Array.from(document.querySelectorAll('nav#toc a')).map(a => a.getAttribute('href')),
            })""")

            # every kernel with data has a section, and its series count is the input's
            assert {k["kernel"]: k["series"] for k in seen["kernels"]} == {k: len(v) for k, v in expected.items()}
            assert int(seen["body"]["seriesCount"]) == sum(len(v) for v in expected.values())
            # every kernel has charts, all of them loaded and laid out; latency charts account for every series
            charts_by_kernel = defaultdict(list)
            for chart in seen["charts"]:
                charts_by_kernel[chart["kernel"]].append(chart)
            for kernel, series in expected.items():
                charts = charts_by_kernel[kernel]
                accounting = [c for c in charts if c["kind"] in ("latency", "memory")]
                assert accounting, f"no latency or memory chart for {kernel}"
                assert sum(c["series"] for c in accounting) == len(series), kernel
            not_loaded = [c for c in seen["charts"] if not c["loaded"] or c["width"] < 100]
            assert not_loaded == []
            assert len(seen["charts"]) == result.counts["charts"]
            # a Liger-over-baseline speed-up exists wherever the history has both (e.g. rms_norm vs huggingface)
            assert any(c["kind"] == "speedup" for c in charts_by_kernel["rms_norm"])
            # the table of contents leads to the sections, as a reader would use it
            assert sorted(seen["toc"]) == sorted(f"#{k['id']}" for k in seen["kernels"])
            page.get_by_role("link", name="LayerNorm").first.click()
            page.wait_for_function("location.hash === '#kernel-layer-norm'")
            assert page.locator("#kernel-layer-norm h2").is_visible()

            # the screenshot shows one kernel's charts (RMSNorm: Liger against the Transformers baseline)
            screenshot = tmp_path / "report.png"
            section = page.locator("#kernel-rms-norm")
            section.scroll_into_view_if_needed()
            box = section.bounding_box()
            page.screenshot(
                path=str(screenshot),
                full_page=True,
                clip={
                    "x": 0,
                    "y": box["y"] + page.evaluate("window.scrollY") - 10,
                    "width": 1300,
                    "height": min(box["height"] + 20, 950),
                },
            )
            assert screenshot.stat().st_size > 10_000
            if os.environ.get("KERNELINDEX_REPORT_SCREENSHOT"):
                shutil.copyfile(screenshot, os.environ["KERNELINDEX_REPORT_SCREENSHOT"])
        finally:
            browser.close()

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
    if short == len(runs_by_series):
        assert "Insufficient data" in result.path.read_text(encoding="utf-8")
