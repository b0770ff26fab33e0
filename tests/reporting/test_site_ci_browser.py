"""The site of real Liger CI rows, rendered in headless Chromium: peak-memory charts next to the latency charts,
Liger's memory saving, the coverage pivot (the matplotlib report's test, moved to the site: issue 21).

The rows are `fixtures/liger-ci-report/ab7fe2a-report-slice.csv`: one real CI file of Liger-Kernel at the
first two x values of each sweep (every kernel, provider, mode and metric; see its make_slice.py). Needs
Debian's Chromium at /usr/bin/chromium. KERNELINDEX_MEMORY_SCREENSHOT=<path.png> keeps a screenshot of the
fused linear cross-entropy charts there (docs/images/memory-report.png was made this way, from the eleven whole
files).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections import defaultdict

import pytest

from tests.support import FIXTURES
from tests.support.browser import page_of

CI_DIR = FIXTURES / "liger-ci-report"

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
def test_ci_site_has_memory_charts_next_to_latency(browser, ci_import, tmp_path):
    from kernelindex_pipeline.imports.coverage import CoverageTable
    from kernelindex_pipeline.liger.identity import gpu_slug
    from kernelindex_pipeline.reporting.site import build_site

    manifests, reports = ci_import
    coverage = CoverageTable.of(reports).cells
    result = build_site(manifests, tmp_path / "site", coverage=coverage)
    state = json.loads((result.path.parent / "site-state.json").read_text(encoding="utf-8"))["kernels"]

    # expectations read straight from the runs: which kernels have peak-memory runs, on which GPUs
    memory_kernels: dict[str, set[str]] = defaultdict(set)
    for m in manifests:
        if m["kind"] == "BenchmarkRun" and "timing" not in m["spec"]:
            kernel, _mode, _memory, _provider, gpu = m["spec"]["sourceNative"]["externalId"].split("/")[:5]
            memory_kernels[kernel].add(gpu)
    assert len(memory_kernels) > 15  # most curated kernels measure memory too

    with page_of(browser, 1300, 1000) as page:
        errors = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        charts = {}
        for kernel in memory_kernels:
            page.goto((result.path.parent / "kernels" / f"{state[kernel]['slug']}.html").resolve().as_uri())
            page.wait_for_selector("#chart-grid[data-figure-count]", timeout=30_000)
            charts[kernel] = page.evaluate("""() => Array.from(document.querySelectorAll('figure.chart')).map(f => ({
                kind: f.dataset.chartKind, gpu: f.dataset.gpu,
                sweep: Array.from(document.querySelectorAll('div.sweep')).indexOf(f.closest('div.sweep')),
                top: f.getBoundingClientRect().top, left: f.getBoundingClientRect().left}))""")
            # every GPU with memory runs has memory charts, in the same sweep as a latency chart
            for gpu in memory_kernels[kernel]:
                here = [c for c in charts[kernel] if c["gpu"] == gpu]
                memory = [c for c in here if c["kind"] == "memory"]
                assert memory, (kernel, gpu)
                assert {c["sweep"] for c in memory} <= {c["sweep"] for c in here if c["kind"] == "latency"}, kernel
            if kernel == "fused_linear_cross_entropy":  # a memory chart and its saving in one sweep's block
                memory = next(c for c in charts[kernel] if c["kind"] == "memory")
                assert any(c["kind"] == "saving" and c["sweep"] == memory["sweep"] for c in charts[kernel])
                memory_figure = page.locator('figure.chart[data-chart-kind="memory"]').first
                memory_figure.scroll_into_view_if_needed()
                memory_figure.locator(".vega[data-rendered='1'] svg").wait_for(timeout=30_000)
                if os.environ.get("KERNELINDEX_MEMORY_SCREENSHOT"):  # the latency, memory and saving charts
                    shot = tmp_path / "memory.png"
                    page.locator("div.sweep").first.screenshot(path=str(shot))
                    shutil.copyfile(shot, os.environ["KERNELINDEX_MEMORY_SCREENSHOT"])
        # Liger's saving over its baseline, where Liger exists for it (memory is what it is for)
        for kernel in ("fused_linear_cross_entropy", "rms_norm", "cross_entropy"):
            assert any(c["kind"] == "saving" for c in charts[kernel]), kernel
        assert errors == []
    # the coverage pivot marks exactly the (kernel, GPU, version) cells whose rows did not all become runs
    page_text = result.path.read_text(encoding="utf-8")
    marked = set(re.findall(r'class="pivot-cell incomplete[^"]*" data-gpu="([^"]+)" data-version="([^"]+)"', page_text))
    lost = {(gpu_slug(c.gpu), c.version) for c in coverage if c.rows > c.runs}
    assert marked == lost
