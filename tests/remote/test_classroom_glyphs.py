"""Every glyph the class sees is drawn by the page's font: xterm.js's "monospace", which
Chromium on Debian finds in DejaVu Sans Mono (or falls back from). A glyph no installed
font has is an empty box (stage 2's "⏸", the hosts screen's "⛔", a worker's "⧗"); the
real Chromium is asked, by drawing each glyph and the private-use U+E000 that no font
has. The glyphs: those of stage 2 on screen, and every one in the TUI's string literals."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, cast

from test_classroom_browser import CHROMIUM_ARGS, browser_path
from tui_support import TIMEOUT, screen_text

from crawlscope import tui
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.waiting import wait_until

STEPS = 200
__all__ = ["browser_path"]  # the fixture, shared with the class's browser tests

# Each glyph drawn on a canvas in xterm.js's default font; those drawn as U+E000 is.
BOXES = """(chars) => {
  const canvas = document.createElement('canvas');
  canvas.width = canvas.height = 48;
  const g = canvas.getContext('2d');
  const draw = (ch) => {
    g.clearRect(0, 0, 48, 48);
    g.font = '32px monospace';
    g.fillText(ch, 4, 36);
    return Array.from(g.getImageData(0, 0, 48, 48).data).join(',');
  };
  const box = draw('\\uE000');
  return chars.filter((ch) => draw(ch) === box);
}"""


def literals() -> list[str]:
    """Every string constant in the TUI's code (docstrings and comments are never drawn,
    but a glyph in them costs nothing to check)."""
    found = []
    for source in Path(tui.__file__).parent.rglob("*.py"):
        tree = ast.parse(source.read_text(encoding="utf-8"))
        found += [node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                  and isinstance(node.value, str)]  # fmt: skip
    return found


async def boxes_in_chromium(path: str, chars: list[str]) -> list[str]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chrome = await playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            page = await chrome.new_page()
            return cast(list[str], await page.evaluate(BOXES, chars))
        finally:
            await chrome.close()


async def test_no_glyph_the_class_sees_is_an_empty_box(browser_path: str) -> None:
    app = LectureApp(
        ["generators"],
        make_config=lambda roots: CrawlConfig(roots=tuple(roots), max_tasks=1),
        demo=DemoConfig(pages=24, links_per_page=4, seed=3),
        walk=True,
        reproducible=True,
    )
    async with app.run_test(size=(120, 40)) as pilot:

        def text() -> str:
            return screen_text(cast(Any, app))

        await wait_until(lambda: app.stage is not None, "stage 2", timeout=TIMEOUT)
        for _ in range(STEPS):  # step by step, to the first task suspended on a Future
            if "waits on" in text():
                break
            await pilot.press("n")
            await pilot.pause()
        shown = text()
    assert "waits on" in shown, f"no task waited on a Future in {STEPS} steps"
    chars = sorted({ch for ch in shown + "".join(literals()) if ord(ch) > 0x7E})
    assert chars, "no glyph beyond ASCII to ask about"
    assert await boxes_in_chromium(browser_path, chars) == []
