"""Screenshot of the top of a static page with Debian's Chromium (the browser tests' path and flags).

.venv/bin/python scripts/page_screenshot.py ci-regressions/regressions.html docs/images/regressions-by-commit.png
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository: tests.support
from tests.support.ui_support import CHROMIUM, CHROMIUM_ARGS  # noqa: E402


def main(page_path: str, png: str, width: int = 1300, height: int = 1100) -> int:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            page.goto(Path(page_path).resolve().as_uri())
            page.wait_for_load_state("load")
            page.screenshot(path=png, clip={"x": 0, "y": 0, "width": width, "height": height})
        finally:
            browser.close()
    print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
