"""The README's site screenshots, taken in Chromium from the site of the eleven real CI files.

    .venv/bin/kernelindex-pipeline site --records ci/*/records.jsonl --out ci-site
    .venv/bin/python scripts/efficiency_screenshots.py ci-site docs/images

writes docs/images/efficiency-chart.png (RMSNorm on H100), docs/efficiency-table.png (the ranking),
docs/images/efficiency-regression.png (a change on the regressions page with its efficiency line), and
docs/images/memory-report.png (fused linear cross-entropy on H100: latency, peak memory, Liger's saving). A chart is
drawn when it scrolls into view: each is scrolled to and awaited. Uses the same Chromium as the browser tests
(tests/support/ui_support.py: $KERNELINDEX_CHROMIUM, default /usr/bin/chromium).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("KERNELINDEX_CHROMIUM", "/usr/bin/chromium")
H100 = "nvidia-h100-80gb-hbm3"
SHOTS = [  # (page, selector, file)
    (
        f"kernels/rms-norm.html#gpu={H100}",
        'figure.chart[data-chart-kind="efficiency"]',
        "efficiency-chart.png",
    ),
    ("index.html", "#efficiency-section", "efficiency-table.png"),
    (
        "regressions.html",
        'figure.trend:has(span.efficiency-moved):has-text("fused_linear_cpo_loss forward · liger")',
        "efficiency-regression.png",
    ),
    (f"kernels/fused-linear-cross-entropy.html#gpu={H100}&mode=full", "div.sweep", "memory-report.png"),
]


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    report, docs = Path(argv[0]).resolve(), Path(argv[1])
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            for name, selector, out in SHOTS:
                path, _, view = name.partition("#")
                page.goto((report / path).as_uri() + (f"#{view}" if view else ""))
                page.wait_for_load_state("load")
                page.add_style_tag(content=".filters{position:static}")  # the sticky filter bar would cover a shot
                element = page.locator(selector).first
                element.scroll_into_view_if_needed()
                charts = element.locator(".vega")
                for i in range(charts.count()):  # every chart inside drawn (site.js marks it)
                    charts.nth(i).scroll_into_view_if_needed()
                    charts.nth(i).locator("xpath=self::*[@data-rendered='1']").wait_for(timeout=60_000)
                element.scroll_into_view_if_needed()
                element.screenshot(path=str(docs / out))
                print(docs / out)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
