"""A PNG of a lecture served to a class (`crawlscope serve --lecture`) as a student's
browser shows it, taken with headless Chromium: the lecturer's page steps the lecture,
then a class page (read-only, with the count of viewers) is photographed.

Needs Playwright (the test extra) and a Chromium on this machine (Debian's `chromium`:
Playwright's own browser download is not used); without either the screenshot is skipped
with a message saying which is missing.
"""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
OFF_SITE = re.compile(r"^https?://(?!127\.0\.0\.1[:/])")
STEPS = 6  # n presses on the lecturer's page before the picture
VIEWPORT = {"width": 1280, "height": 800}
WAIT_MS = 60_000
# The text of the page's terminal, row by row (xterm.js keeps it in its buffer).
SCREEN_TEXT = """() => {
  const term = window.crawlscopeTerminal;
  if (!term) return "";
  const rows = [];
  for (let y = 0; y < term.rows; y++) {
    rows.push(term.buffer.active.getLine(y).translateToString(true));
  }
  return rows.join("\\n");
}"""
SHOWS = f"(words) => ({SCREEN_TEXT})().includes(words)"


def chromium() -> str | None:
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def browser_scene(target: Path) -> Path | None:
    """Serve the lecture, step it from the lecturer's page, and save a PNG of a class
    page. None (and a message on stderr) when Playwright or Chromium is missing."""
    browser = chromium()
    if browser is None:
        print("skipped browser.png: no chromium (apt-get install chromium)", file=sys.stderr)
        return None
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        print("skipped browser.png: no playwright (pip install playwright)", file=sys.stderr)
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    process, pages = _serve()
    try:
        with sync_playwright() as playwright:
            chrome = playwright.chromium.launch(executable_path=browser, args=CHROMIUM_ARGS)
            lecturer = _open(chrome, pages["lecturer"])
            _wait_for(lecturer, "step 0 ")
            for step in range(1, STEPS + 1):
                lecturer.keyboard.press("n")
                _wait_for(lecturer, f"step {step} ")
            student = _open(chrome, pages["serving"])
            _wait_for(student, f"step {STEPS} ")
            student.wait_for_function(
                "() => document.querySelector('#count').textContent === '2'", timeout=WAIT_MS
            )
            student.screenshot(path=str(target))
            chrome.close()
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return target


def _open(chrome: Any, url: str) -> Any:
    page = chrome.new_page(viewport=VIEWPORT)
    page.route(OFF_SITE, lambda route: route.abort())
    page.goto(url, wait_until="load")
    return page


def _wait_for(page: Any, words: str) -> None:
    page.wait_for_function(SHOWS, arg=words, timeout=WAIT_MS)


def _serve() -> tuple[subprocess.Popen[str], dict[str, str]]:
    """`crawlscope serve --lecture` on a free port; the process and its pages' URLs."""
    process = subprocess.Popen(
        [sys.executable, "-m", "crawlscope", "serve", "--lecture", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
        start_new_session=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    threading.Thread(target=_read, args=(process.stdout, lines), daemon=True).start()
    pages: dict[str, str] = {}
    while len(pages) < 2:
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            process.kill()
            raise RuntimeError("crawlscope serve did not say where it serves") from None
        name, _, url = line.strip().partition(": ")
        if name in ("serving", "lecturer"):
            pages[name] = url
    return process, pages


def _read(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)
