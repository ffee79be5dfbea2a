"""`crawlscope serve` in a real browser: headless Chromium, driven by Playwright, loads the
page, sees the panels, and the lecturer's p pauses the one crawl every viewer watches.

The page draws the terminal on a canvas, so the test reads what the browser received
instead: every byte the page's WebSocket brought in, as text (the screen's words are in
it as they were drawn).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import pytest

from crawlscope.engine.remote.client import RemoteCrawl
from crawlscope.engine.snapshot import Phase
from crawlscope.tui.waiting import wait_until

TIMEOUT = 60.0
OFF_SITE = re.compile(r"^https?://(?!127\.0\.0\.1[:/])")
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

# Run in the page before its own scripts: each word of WORDS is marked found once the
# page's WebSocket brings it (the screen is drawn from those bytes). Only a short tail is
# kept, for a word cut across two messages: the stream runs to megabytes a minute.
CAPTURE = """
window.__found = {};
const words = WORDS;
const RealSocket = window.WebSocket;
window.WebSocket = class extends RealSocket {
  constructor(...args) {
    super(...args);
    const decoder = new TextDecoder();
    let tail = "";
    this.addEventListener("message", (event) => {
      if (typeof event.data === "string") return;
      const text = tail + decoder.decode(event.data, {stream: true});
      for (const word of words) {
        if (text.includes(word)) window.__found[word] = true;
      }
      tail = text.slice(-200);
    });
  }
};
"""


def chromium() -> str | None:
    """Debian's chromium: Playwright's own download cannot be reached from here."""
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="module")
def browser_path() -> str:
    path = chromium()
    if path is None:
        reason = "no chromium on this machine (apt-get install chromium); browser tests skipped"
        print(f"\n{reason}", file=sys.stderr)
        pytest.skip(reason)
    pytest.importorskip("playwright", reason="pip install playwright (the test extra)")
    return path


@dataclass
class Served:
    viewers: str
    lecturer: str
    monitor: str


def _lines(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)


@contextlib.contextmanager
def serving(*options: str) -> Iterator[Served]:
    """`crawlscope serve` in its own process, on any free port, until the block ends."""
    process = subprocess.Popen(
        [sys.executable, "-m", "crawlscope", "serve", "--port", "0", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    for stream in (process.stdout, process.stderr):
        assert stream is not None
        threading.Thread(target=_lines, args=(stream, lines), daemon=True).start()
    urls: dict[str, str] = {}
    try:
        while len(urls) < 3:
            line = lines.get(timeout=TIMEOUT)
            word, _, url = line.strip().partition(": ")
            if word in ("serving", "lecturer", "monitor"):
                urls[word] = url
        yield Served(urls["serving"], urls["lecturer"], urls["monitor"])
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.asynccontextmanager
async def browser(path: str) -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chrome = await playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield chrome
        finally:
            await chrome.close()


async def open_page(chrome: Any, url: str, words: list[str]) -> Any:
    page = await chrome.new_page(viewport={"width": 1400, "height": 900})
    await page.add_init_script(CAPTURE.replace("WORDS", json.dumps(words)))
    # The page asks Google for a font: refused at once, since with no network the request
    # could hang, and the page starts its terminal only once everything has loaded.
    await page.route(OFF_SITE, lambda route: route.abort())
    await page.goto(url, wait_until="domcontentloaded")
    return page


async def sees(page: Any, text: str) -> None:
    await page.wait_for_function(
        "(word) => window.__found[word] === true", arg=text, timeout=TIMEOUT * 1000
    )


async def test_the_lecturer_pauses_the_crawl_every_browser_watches(browser_path: str) -> None:
    with serving() as served:
        remote = RemoteCrawl(served.monitor.split("?")[0])  # the test's own eye on it
        watching = asyncio.create_task(remote.run())
        await wait_until(remote.ready.is_set, "the monitor's first frame", timeout=TIMEOUT)
        site = remote.config.roots[0]
        words = ["workers", "RUNNING", "PAUSED", "read-only", site]
        async with browser(browser_path) as chrome:
            first = await open_page(chrome, served.viewers, words)
            second = await open_page(chrome, served.viewers, words)
            lecturer = await open_page(chrome, served.lecturer, words)
            for page in (first, second, lecturer):
                await sees(page, "workers")
                await sees(page, "RUNNING")
            await sees(first, "read-only")
            await wait_until(
                lambda: len(remote.viewers) >= 4, "three browsers and the test", timeout=TIMEOUT
            )
            # Each browser is named to the lecturer by its own address.
            assert remote.viewers.count("127.0.0.1 via 127.0.0.1") == 3, remote.viewers
            await lecturer.click(".textual-terminal")
            await lecturer.keyboard.press("p")
            for page in (lecturer, first, second):
                await sees(page, "PAUSED")
            await wait_until(
                lambda: remote.snapshot().phase is Phase.PAUSED, "the crawl paused", timeout=TIMEOUT
            )
            # The same crawl in both: the same demo site, at the same address.
            await sees(first, site)
            await sees(second, site)
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching


def test_chromium_and_playwright_are_there_on_ci() -> None:
    if os.environ.get("CI") != "true":
        pytest.skip("only CI promises a chromium")
    assert chromium() is not None, "CI must run the browser tests, not skip them"
    # Playwright drives it: without the package the browser tests would skip as well.
    assert importlib.util.find_spec("playwright") is not None, "pip install '.[test]'"
