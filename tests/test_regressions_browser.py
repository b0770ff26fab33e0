"""The regressions page of Liger's real CI runs (the tests/fixtures/liger-ci-slice slice), rendered in
headless Chromium as a reader sees it.

Needs Debian's Chromium at /usr/bin/chromium (`apt-get install -y chromium`). Set
KERNELINDEX_REGRESSIONS_SCREENSHOT=<path.png> to keep a screenshot (docs/regressions.png is made so).
"""

from __future__ import annotations

import gzip
import os
import shutil
from pathlib import Path

import pytest
from ui_support import CHROMIUM, CHROMIUM_ARGS

from kernelindex_pipeline.cli import main

pytestmark = [pytest.mark.browser]
SLICE = Path(__file__).parent / "fixtures" / "liger-ci-slice"


def test_regressions_page_renders_in_chromium(tmp_path):
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium")
    from playwright.sync_api import sync_playwright

    files = []
    for gz in sorted(SLICE.glob("*.jsonl.gz")):
        target = tmp_path / "runs" / gz.name.removesuffix(".jsonl.gz") / "records.jsonl"
        target.parent.mkdir(parents=True)
        target.write_bytes(gzip.decompress(gz.read_bytes()))
        files.append(str(target))
    out = tmp_path / "out"
    assert main(["regressions", "--records", *files, "--out", str(out)]) == 0

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto((out / "regressions.html").resolve().as_uri())
            page.wait_for_load_state("load")
            page.wait_for_function("Array.from(document.images).every(img => img.complete)")
            seen = page.evaluate("""() => ({
                body: {...document.body.dataset},
                causes: Array.from(document.querySelectorAll('section.cause')).map(s => ({
                    cause: s.dataset.cause, changes: Number(s.dataset.changeCount),
                    rows: s.querySelectorAll('table tr').length - 1,
                    figures: s.querySelectorAll('figure.trend').length})),
                images: Array.from(document.images).map(img => ({loaded: img.complete && img.naturalWidth > 0,
                                                                 width: img.getBoundingClientRect().width})),
                host: !!document.querySelector('figure#host-effects img'),
                hostRows: document.querySelectorAll('#host table tr').length - 1,
                groups: Array.from(document.querySelectorAll('#by-commit details.change-group')).map(g => ({
                    cause: g.dataset.cause, changes: Number(g.dataset.changeCount),
                    rows: g.querySelectorAll('table tr').length - 1})),
                byCommitSummary: document.querySelector('#by-commit p.summary')?.textContent || "",
            })""")
            # the five causes, in order, each listing every one of its changes; charts for the first ones
            assert [c["cause"] for c in seen["causes"]] == [
                "liger_kernel",
                "benchmark_script",
                "environment",
                "host",
                "unknown",
            ]
            assert sum(c["changes"] for c in seen["causes"]) == int(seen["body"]["changeCount"]) > 0
            for cause in seen["causes"]:
                assert cause["rows"] == (cause["changes"] if cause["changes"] else -1)
                assert cause["figures"] == min(cause["changes"], 24)
            # grouped by (boundary, cause, suspects): every change in exactly one entry, each listing its series
            assert seen["groups"] and sum(g["changes"] for g in seen["groups"]) == int(seen["body"]["changeCount"])
            assert all(g["rows"] == g["changes"] for g in seen["groups"])
            assert seen["byCommitSummary"].startswith("0 slowdowns from 0 commits")  # no clone: no commit named
            # every chart loaded and laid out; the host effects have their chart and their table
            assert seen["images"] and all(i["loaded"] and i["width"] > 100 for i in seen["images"])
            assert seen["host"] and seen["hostRows"] == int(seen["body"]["hostEffectCount"]) > 0

            screenshot = tmp_path / "regressions.png"
            page.screenshot(path=str(screenshot), clip={"x": 0, "y": 0, "width": 1300, "height": 1500}, full_page=True)
            assert screenshot.stat().st_size > 10_000
            if os.environ.get("KERNELINDEX_REGRESSIONS_SCREENSHOT"):
                shutil.copyfile(screenshot, os.environ["KERNELINDEX_REGRESSIONS_SCREENSHOT"])
        finally:
            browser.close()
