"""Screenshots of the site the morning after (docs/operate/morning-after.md): the landing page, a regressions
group, an acknowledged group and a compare of two runs, from Liger's CI results as the README's first command
imports them.

    .venv/bin/python scripts/site_screenshots.py [--home DIR] [--out docs/images]

--home: a DAGSTER_HOME the first command (or `import-ci --wait`) has filled; without it, a temporary one is
filled from the snapshot shipped with the package (`import-ci --snapshot --wait`, about 2 minutes, offline).
The script then acknowledges the second group of the regressions page there (`kernelindex-pipeline
acknowledge ... --status expected`, unless a group already is), builds the site from that catalogue
(`kernelindex-pipeline site`, which shows the acknowledgements) and takes the pictures with Debian's Chromium
(the browser tests' path and flags) into OUT/site-morning-*.png.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the repository: tests.support
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

CLI = [sys.executable, "-W", "ignore", "-m", "kernelindex_pipeline.cli"]
NOTE = "the screenshot's example: expected (site_screenshots.py)"


def _cli(*args: str, home: Path) -> str:
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    env.setdefault("KERNELINDEX_LIGER_URL", "none")  # no clone unless the operator's environment names one
    done = subprocess.run([*CLI, *args], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        sys.exit(f"kernelindex-pipeline {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    return done.stdout


def _acknowledge_one(home: Path) -> str:
    """The id of an acknowledged group of the regressions page under `home` (the second one, made so if none
    is)."""
    report = json.loads((home / "report" / "regressions.json").read_text(encoding="utf-8"))
    groups = [g for g in report["groups"] if g.get("slowdowns")]
    marked = [g for g in groups if g.get("acknowledgement")]
    if marked:
        return marked[0]["id"]
    if len(groups) < 2:
        sys.exit(f"{home}: fewer than two groups of slowdowns; nothing to acknowledge for the picture")
    group = groups[1]["id"]
    print(_cli("acknowledge", group, "--status", "expected", "--note", NOTE, "--by", "site_screenshots", home=home))
    return group


def _shoot(site: Path, out: Path, acknowledged: str) -> list[Path]:
    from playwright.sync_api import sync_playwright

    written = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 900})

            page.goto((site / "index.html").resolve().as_uri())
            page.wait_for_selector("#headline li.gpu-headline")
            written.append(out / "site-morning-landing.png")
            page.screenshot(path=str(written[-1]))

            page.goto((site / "regressions.html").resolve().as_uri())
            first = page.locator("details.change-group[data-acknowledged='']").first
            first.evaluate("d => { d.open = true; }")
            first.scroll_into_view_if_needed()
            written.append(out / "site-morning-regressions-group.png")
            page.screenshot(path=str(written[-1]), full_page=True, clip=_clip(first.bounding_box(), page, 1100))

            marked = page.locator(f"details.change-group[data-group-id='{acknowledged}']")
            marked.evaluate("d => { d.open = true; }")
            marked.scroll_into_view_if_needed()
            marked.locator("p.acknowledged").wait_for()
            written.append(out / "site-morning-acknowledged-group.png")
            page.screenshot(path=str(written[-1]), full_page=True, clip=_clip(marked.bounding_box(), page, 700))

            page.goto((site / "kernels" / "fused-linear-cross-entropy.html").resolve().as_uri())
            page.wait_for_selector("#compare-ratio[data-rendered='1'] svg", timeout=30_000)
            page.select_option("#c-by", "run")
            page.select_option("#c-mode", "forward")
            page.select_option("#c-provider", "liger")
            page.select_option("#c-fixed", "nvidia-h100-80gb-hbm3")
            runs = page.eval_on_selector_all("#c-a option", "os => os.map(o => [o.value, o.textContent])")
            side = {label.split(" ")[1]: value for value, label in runs if " (" in label}
            page.select_option("#c-a", side["(5e8f12b)"])
            page.select_option("#c-b", side["(2845fe8)"])
            page.wait_for_selector("#compare-ratio[data-rendered='1'] svg", timeout=30_000)
            compare = page.locator("#compare")
            compare.scroll_into_view_if_needed()
            written.append(out / "site-morning-compare.png")
            page.screenshot(path=str(written[-1]), full_page=True, clip=_clip(compare.bounding_box(), page, 900))
        finally:
            browser.close()
    return written


def _clip(box: dict | None, page, height: int) -> dict:
    """The element's box on the page, at most `height` tall (the picture's top part)."""
    assert box is not None
    scroll = page.evaluate("window.scrollY")
    return {"x": 0, "y": box["y"] + scroll, "width": 1300, "height": min(box["height"], height)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--home", type=Path, help="a DAGSTER_HOME the first command filled (default: a new one)")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images", help="where the pictures go")
    args = parser.parse_args(argv)
    if not CHROMIUM.exists():
        sys.exit(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium (or set KERNELINDEX_CHROMIUM)")
    with tempfile.TemporaryDirectory(prefix="site-screenshots-") as scratch:
        home = args.home or Path(scratch) / "home"
        if not (home / "report" / "regressions.json").is_file():
            print(f"importing the shipped CI snapshot into {home} (about 2 minutes) ...", flush=True)
            _cli("import-ci", "--snapshot", "--wait", home=home)
        acknowledged = _acknowledge_one(home)
        site = Path(scratch) / "site"
        print(_cli("site", "--out", str(site), home=home), end="")
        args.out.mkdir(parents=True, exist_ok=True)
        for path in _shoot(site, args.out, acknowledged):
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
