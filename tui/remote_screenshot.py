"""A PNG of `crawlscope serve` as a browser shows it, taken with headless Chromium.

Needs Playwright (the test extra) and a Chromium on this machine (Debian's `chromium`:
Playwright's own browser download is not used); without either the screenshot is skipped
with a message saying which is missing.
"""

from __future__ import annotations

import json
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
OFF_SITE = re.compile(r"^https?://(?!127\.0\.0\.1[:/])")
# In the page before its own scripts: marks when the screen's first panels have arrived.
DRAWN = """
window.__drawn = false;
const RealSocket = window.WebSocket;
window.WebSocket = class extends RealSocket {
  constructor(...args) {
    super(...args);
    const decoder = new TextDecoder();
    this.addEventListener("message", (event) => {
      if (typeof event.data !== "string" && decoder.decode(event.data).includes(WORD)) {
        window.__drawn = true;
      }
    });
  }
};
"""
CRAWL_FOR = 6.0  # seconds of crawl on screen before the picture
VIEWPORT = {"width": 1280, "height": 800}


def chromium() -> str | None:
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None


def browser_scene(target: Path) -> Path | None:
    """Serve the demo crawl, open the viewers' page in Chromium, and save a PNG of it.
    None (and a message on stderr) when Playwright or Chromium is missing."""
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
    process, viewers = _serve()
    try:
        with sync_playwright() as playwright:
            chrome = playwright.chromium.launch(executable_path=browser, args=CHROMIUM_ARGS)
            page = chrome.new_page(viewport=VIEWPORT)  # type: ignore[arg-type]
            page.add_init_script(DRAWN.replace("WORD", json.dumps("workers")))
            page.route(OFF_SITE, lambda route: route.abort())
            page.goto(viewers, wait_until="domcontentloaded")
            page.wait_for_function("() => window.__drawn", timeout=60_000)
            time.sleep(CRAWL_FOR)  # a picture of a crawl under way, not of its start
            page.screenshot(path=str(target))
            chrome.close()
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
    return target


def _serve() -> tuple[subprocess.Popen[str], str]:
    """`crawlscope serve` on a free port; the process and its viewers' URL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "crawlscope", "serve", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    threading.Thread(target=_read, args=(process.stdout, lines), daemon=True).start()
    while True:
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            process.kill()
            raise RuntimeError("crawlscope serve did not say where it serves") from None
        if line.startswith("serving: "):
            return process, line.removeprefix("serving: ").strip()


def _read(stream: IO[str], into: queue.Queue[str]) -> None:
    for line in stream:
        into.put(line)
