"""The README's efficiency screenshots, taken in Chromium from a report of the eleven real CI files.

    .venv/bin/kernelindex-pipeline report --records ci/*/records.jsonl --out ci-report
    .venv/bin/python scripts/efficiency_screenshots.py ci-report docs

writes docs/efficiency-chart.png (RMSNorm on H100), docs/efficiency-table.png (the ranking) and
docs/efficiency-regression.png (a change on the regressions page with its efficiency line). Uses the
same Chromium as the browser tests (tests/ui_support.py: $KERNELINDEX_CHROMIUM, default /usr/bin/chromium).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = os.environ.get("KERNELINDEX_CHROMIUM", "/usr/bin/chromium")
SHOTS = [  # (page, selector, file)
    (
        "index.html",
        '#kernel-rms-norm section.gpu[data-gpu*="H100"] figure[data-chart-kind="efficiency"]',
        "efficiency-chart.png",
    ),
    ("index.html", "#efficiency-section", "efficiency-table.png"),
    (
        "regressions.html",
        'figure.trend:has(span.efficiency-moved):has-text("fused_linear_cpo_loss forward · liger")',
        "efficiency-regression.png",
    ),
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
                page.goto((report / name).as_uri())
                page.wait_for_load_state("load")
                page.wait_for_function("Array.from(document.images).every(img => img.complete)")
                element = page.locator(selector).first
                element.scroll_into_view_if_needed()
                element.screenshot(path=str(docs / out))
                print(docs / out)
        finally:
            browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
