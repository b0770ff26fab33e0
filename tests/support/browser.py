"""Chromium for the browser tests: one Chromium process for the whole session (`chromium_endpoint` in
tests/conftest.py starts it on first use), each test connected to it with its own Playwright (`browser`) and
its own context per page, so nothing a page leaves behind reaches another test.

A test's Playwright connection lives only as long as the test: Playwright's sync API marks an asyncio loop
as running in its thread while it is connected, so a session-long connection would break every later test
that calls `asyncio.run`. Debian's Chromium (Playwright cannot download its own here, scripts/test installs
it); without it a browser test fails and says so, never skips.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path(os.environ.get("KERNELINDEX_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
START_TIMEOUT_S = 60  # Chromium prints its DevTools address within a second here; a loaded machine is slower
_LISTENING = re.compile(r"DevTools listening on (ws://\S+)")


@contextlib.contextmanager
def chromium_process(profile: Path) -> Iterator[str]:
    """A headless Chromium with a fresh profile, listening for DevTools on a free loopback port; yields its
    address for `connect_over_cdp` and stops it (and waits for it) on exit."""
    if not CHROMIUM.exists():
        pytest.fail(f"Chromium not found at {CHROMIUM}: apt-get install -y chromium (or set KERNELINDEX_CHROMIUM)")
    process = subprocess.Popen(
        [str(CHROMIUM), *CHROMIUM_ARGS, "--remote-debugging-port=0", f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    found: list[str] = []
    said: list[str] = []
    listening = threading.Event()

    def read_stderr() -> None:  # drained to the end, so Chromium never blocks on a full pipe
        for line in process.stderr:
            said.append(line)
            if not found and (match := _LISTENING.search(line)):
                found.append(match[1])
                listening.set()
        listening.set()  # Chromium exited (or closed its stderr) without listening

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        if not listening.wait(START_TIMEOUT_S) or not found:
            pytest.fail(f"Chromium did not listen for DevTools within {START_TIMEOUT_S} s: {''.join(said)[-2000:]}")
        yield found[0]
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        reader.join(timeout=30)


@contextlib.contextmanager
def connected(endpoint: str):
    """A Playwright `Browser` connected to the session's Chromium, for the length of the `with` block."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(endpoint)
        try:
            yield browser
        finally:
            browser.close()  # closes this connection's contexts; the session's Chromium goes on


@contextlib.contextmanager
def page_of(browser, width: int = 1300, height: int = 1000, *, offline: bool = True):
    """A page in a context of its own. `offline`: the network is off (pages opened from file://, which
    must load nothing else); a page served over HTTP, even on loopback, needs offline=False."""
    context = browser.new_context(viewport={"width": width, "height": height}, offline=offline)
    try:
        yield context.new_page()
    finally:
        context.close()


class Watched:
    """A page whose console errors, page errors and every request are recorded, in a context of its own
    with the network off, so a site is opened as it would be offline (`page_of`)."""

    def __init__(self, browser, width: int = 1300, height: int = 1000):
        self.context = browser.new_context(viewport={"width": width, "height": height}, offline=True)
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page = self.context.new_page()
        self.page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))

    def close(self):
        self.context.close()
