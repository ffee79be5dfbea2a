"""`crawlscope serve` in real browsers (Debian's Chromium, driven by Playwright), for each
mode: the lecturer's page and two class pages show the same screen; the lecturer's key
(pressed with no click first) changes all three; a class page sends nothing whatever is
typed on it; a class page made small keeps the screen's size; and a page opened after ten
steps of the lecture shows step ten, and the code pane once the lecturer shows it.

The pages' terminal is xterm.js; the test reads its buffer, the text the page shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from classroom_support import TIMEOUT, serving
from redis_support import RedisServer, redis_server

from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.tui.remote_screenshot import SCREEN_TEXT

__all__ = ["redis_server"]  # a fixture, used by name

OFF_SITE = re.compile(r"^https?://(?!127\.0\.0\.1[:/])")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]  # fmt: skip
RECORDING = Path(__file__).parents[1] / "data" / "demo-crawl.jsonl"

# Counts what the page's WebSocket sends: a class page must send nothing.
COUNT_SENT = """
window.__sent = 0;
const RealSocket = window.WebSocket;
window.WebSocket = class extends RealSocket {
  send(data) { window.__sent += 1; return super.send(data); }
};
"""


def chromium() -> str | None:
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


@pytest.fixture(scope="module")
def browser_path() -> str:
    path = chromium()
    if path is None:
        pytest.skip("no chromium on this machine (apt-get install chromium)")
    pytest.importorskip("playwright", reason="pip install playwright (the test extra)")
    return path


@contextlib.asynccontextmanager
async def browser(path: str) -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chrome = await playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield chrome
        finally:
            await chrome.close()


async def open_page(chrome: Any, url: str) -> Any:
    page = await chrome.new_page(viewport={"width": 1400, "height": 900})
    await page.add_init_script(COUNT_SENT)
    await page.route(OFF_SITE, lambda route: route.abort())
    await page.goto(url, wait_until="load")
    return page


async def screen(page: Any) -> str:
    return str(await page.evaluate(SCREEN_TEXT))


async def shows(page: Any, words: str) -> None:
    await page.wait_for_function(
        f"() => ({SCREEN_TEXT})().includes({words!r})", timeout=TIMEOUT * 1000
    )


async def same_screen(pages: list[Any]) -> None:
    """Waits until every page shows the same, non-blank, screen."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT
    texts: list[str] = []
    while True:
        texts = [await screen(page) for page in pages]
        if texts[0].strip() and len(set(texts)) == 1:
            return
        if loop.time() >= deadline:
            bars = [await page.inner_text("#bar") for page in pages]
            raise AssertionError(f"pages' bars: {bars}\n{differences(texts)}")
        await asyncio.sleep(0.1)


def differences(texts: list[str]) -> str:
    """The lines where the pages' screens differ, each page's version of them."""
    lines = [text.split("\n") for text in texts]
    out = []
    for row, cells in enumerate(zip(*lines, strict=False)):
        if len(set(cells)) > 1:
            out += [f"row {row}, page {n}: {cell!r}" for n, cell in enumerate(cells)]
    return "\n".join(out) or f"blank or of different heights: {[len(t) for t in lines]}"


async def size(page: Any) -> list[int]:
    return list(await page.evaluate("() => [crawlscopeTerminal.cols, crawlscopeTerminal.rows]"))


# mode: (serve's options, words on its screen, the lecturer's key, what it shows after)
MODES = {
    "live": (["--max-tasks", "2", "--running"], "RUNNING", "p", "PAUSED"),
    "replay": (["--replay", str(RECORDING)], "event 287/287", ",", "event 286/287"),
    "lecture": (["--lecture"], "step 0 ", "n", "step 1 "),
    "cluster": (["--max-tasks", "2", "--running"], "RUNNING", "p", "PAUSED"),
}


@pytest.mark.parametrize("mode", list(MODES))
async def test_the_lecturer_and_two_class_pages_see_one_screen(
    mode: str, browser_path: str, request: pytest.FixtureRequest
) -> None:
    options, before, key, after = MODES[mode]
    async with contextlib.AsyncExitStack() as stack:
        if mode == "cluster":
            redis: RedisServer = request.getfixturevalue("redis_server")
            site = await stack.enter_async_context(DemoServer(DemoConfig(pages=5000, latency=0.05)))
            options = [site.url, "--redis", redis.url, "--crawl-id", "c", *options]
        served = stack.enter_context(serving(*options))
        chrome = await stack.enter_async_context(browser(browser_path))
        lecturer = await open_page(chrome, served.lecturer_page)
        first = await open_page(chrome, served.class_page)
        second = await open_page(chrome, served.class_page)
        pages = [lecturer, first, second]
        for page in pages:
            await shows(page, before)
        assert "read-only" in await first.inner_text("#bar")
        await first.wait_for_function("() => document.querySelector('#count').textContent === '3'")
        assert "lecturer" in await lecturer.inner_text("#bar")
        # A class page: typed on, after a click, it sends nothing.
        await first.click("#screen")
        await first.keyboard.type(key * 3)
        # The lecturer's page: the key works with no click first.
        await lecturer.keyboard.press(key)
        for page in pages:
            await shows(page, after)
        await same_screen(pages)
        assert await first.evaluate("() => window.__sent") == 0
        assert await second.evaluate("() => window.__sent") == 0
        # A small window scales the font; the screen keeps its size everywhere.
        await second.set_viewport_size({"width": 400, "height": 300})
        await second.wait_for_function(
            "() => crawlscopeTerminal.options.fontSize < 8", timeout=TIMEOUT * 1000
        )
        assert await size(second) == [120, 40]
        assert await size(lecturer) == [120, 40]
        await same_screen(pages)


async def test_a_page_opened_after_ten_steps_shows_step_ten(browser_path: str) -> None:
    with serving("--lecture") as served:
        async with browser(browser_path) as chrome:
            lecturer = await open_page(chrome, served.lecturer_page)
            await shows(lecturer, "step 0 ")
            for step in range(1, 11):
                await lecturer.keyboard.press("n")
                await shows(lecturer, f"step {step} ")
            late = await open_page(chrome, served.class_page)
            await shows(late, "step 10 ")
            await same_screen([lecturer, late])
            # The code at the lecturer's 120 columns: folded, and the status line says
            # how to show it; the lecturer's c shows it on every page.
            pane = "stage_callbacks.py · the chapter"  # the code pane's title
            assert pane not in await screen(late)
            await shows(late, "c: code")
            await lecturer.keyboard.press("c")
            await shows(late, pane)
            await shows(late, "▶ ")
            await same_screen([lecturer, late])


def test_chromium_and_playwright_are_there_on_ci() -> None:
    if os.environ.get("CI") != "true":
        pytest.skip("only CI promises a chromium")
    assert chromium() is not None, "CI must run the browser tests, not skip them"
    import importlib.util

    assert importlib.util.find_spec("playwright") is not None, "pip install '.[test]'"
    assert sys.executable
