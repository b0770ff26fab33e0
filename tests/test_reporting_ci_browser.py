"""The report of real Liger CI rows, rendered in headless Chromium: peak-memory charts next to the
latency charts, Liger's memory saving, the coverage table.

The rows are `fixtures/liger-ci-report/ab7fe2a-report-slice.csv`: one real CI file of Liger-Kernel at the
first two x values of each sweep (every kernel, provider, mode and metric; see its make_slice.py). Needs
Debian's Chromium at /usr/bin/chromium. KERNELINDEX_MEMORY_SCREENSHOT=<path.png> keeps a screenshot of the
fused linear cross-entropy charts there (docs/memory-report.png was made this way, from the eleven whole
files).
"""

from __future__ import annotations

import os
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
from ui_support import CHROMIUM, CHROMIUM_ARGS

CI_DIR = Path(__file__).parent / "fixtures" / "liger-ci-report"

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def ci_import():
    from kernelindex_pipeline.liger import import_csv

    manifests: dict[str, dict] = {}
    reports = []
    for path in sorted(CI_DIR.glob("*.csv")):
        result = import_csv(path)
        manifests.update(result.manifests)
        reports.append(result.report)
    return list(manifests.values()), reports


@pytest.mark.slow  # 15 s on a quiet two-core machine
def test_ci_report_has_memory_charts_next_to_latency(ci_import, tmp_path):
    if not CHROMIUM.exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    from kernelindex_pipeline.imports.coverage import CoverageTable
    from kernelindex_pipeline.reporting import build_report

    manifests, reports = ci_import
    coverage = CoverageTable.of(reports).cells
    result = build_report(manifests, tmp_path / "report", coverage=coverage)

    # expectations read straight from the runs: which kernels have peak-memory runs, on which GPUs
    memory_kernels: dict[str, set[str]] = defaultdict(set)
    for m in manifests:
        if m["kind"] == "BenchmarkRun" and "timing" not in m["spec"]:
            memory_kernels[m["spec"]["sourceNative"]["benchmark"].split("/")[0]].add(m["spec"]["environmentDigest"])
    assert len(memory_kernels) > 15  # most curated kernels measure memory too
    assert result.counts["memorySeries"] > 0

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto(result.path.resolve().as_uri())
            page.wait_for_load_state("load")
            page.wait_for_function("Array.from(document.images).every(img => img.complete)")
            seen = page.evaluate("""() => ({
                sections: Array.from(document.querySelectorAll('section.kernel')).map(s => ({
                    kernel: s.dataset.kernel, series: Number(s.dataset.seriesCount)})),
                charts: Array.from(document.querySelectorAll('figure.chart')).map(f => {
                    const img = f.querySelector('img'), box = f.getBoundingClientRect();
                    return {kernel: f.dataset.kernel, kind: f.dataset.chartKind, series: Number(f.dataset.seriesCount),
                            environment: f.closest('section.gpu').dataset.environment,
                            sweep: Array.from(document.querySelectorAll('div.sweep')).indexOf(f.closest('div.sweep')),
                            loaded: !!img && img.complete && img.naturalWidth > 0, top: box.top, left: box.left};
                }),
                coverageRows: document.querySelectorAll('#coverage tr.coverage').length,
            })""")
            assert [c for c in seen["charts"] if not c["loaded"]] == []
            charts = defaultdict(list)
            for c in seen["charts"]:
                charts[c["kernel"]].append(c)
            # every kernel and GPU with memory runs has memory charts, in the same sweep as a latency chart
            for kernel, environments in memory_kernels.items():
                for environment in environments:
                    here = [c for c in charts[kernel] if c["environment"] == environment]
                    memory = [c for c in here if c["kind"] == "memory"]
                    assert memory, (kernel, environment)
                    latency_sweeps = {c["sweep"] for c in here if c["kind"] == "latency"}
                    assert any(c["sweep"] in latency_sweeps for c in memory), kernel
            # latency and memory charts account for every series of a kernel once
            for section in seen["sections"]:
                accounted = sum(c["series"] for c in charts[section["kernel"]] if c["kind"] in ("latency", "memory"))
                assert accounted == section["series"], section["kernel"]
            # Liger's saving over its baseline, where Liger exists for it (memory is what it is for)
            for kernel in ("fused_linear_cross_entropy", "rms_norm", "cross_entropy"):
                assert any(c["kind"] == "memory-saving" for c in charts[kernel]), kernel
            # a one-panel memory chart and its saving sit side by side
            flce = charts["fused_linear_cross_entropy"]
            memory = next(c for c in flce if c["kind"] == "memory")
            saving = next(c for c in flce if c["kind"] == "memory-saving" and c["sweep"] == memory["sweep"])
            assert saving["top"] == memory["top"] and saving["left"] > memory["left"]
            assert seen["coverageRows"] == len(coverage)

            if os.environ.get("KERNELINDEX_MEMORY_SCREENSHOT"):  # the latency, memory and saving charts
                sweep = page.locator("#kernel-fused-linear-cross-entropy div.sweep").nth(0)
                sweep.scroll_into_view_if_needed()
                scroll = page.evaluate("window.scrollY")
                boxes = [
                    sweep.locator(f'figure[data-chart-kind="{kind}"]').first.bounding_box()
                    for kind in ("latency", "memory", "memory-saving")
                ]
                top = min(b["y"] for b in boxes) + scroll - 10
                bottom = max(b["y"] + b["height"] for b in boxes) + scroll + 10
                shot = tmp_path / "memory.png"
                page.screenshot(
                    path=str(shot), full_page=True, clip={"x": 0, "y": top, "width": 1300, "height": bottom - top}
                )
                shutil.copyfile(shot, os.environ["KERNELINDEX_MEMORY_SCREENSHOT"])
        finally:
            browser.close()
