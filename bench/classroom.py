"""What a class costs `crawlscope serve`: the demo crawl served to 0, 30, 100 and 300
viewers (real WebSocket clients that read every byte) plus 3 Chromium pages, side by side
in one run, each row a fresh `serve` process on the same demo site (a process of its own).

For each row: the serving side's processes (serve and what it started) and their total
RSS, sampled through the measured window (the largest); the crawl's pages/s over the
window, read from its monitor, and its ratio to the row with no viewers; the time from a
lecturer's key (p: pause, then resume) to the change on each viewer's screen, p50 and p99
over the viewers; and the bytes a second sent to one viewer while the crawl runs. The
viewers, the lecturer's socket and Chromium run in one more process (`viewers` below),
never in the serving one. Goals: the count does not grow with viewers, total RSS at 300
viewers within 300 MB, pages/s >= 0.95x at 300, p99 <= 250 ms at 300.

    python -m bench.classroom [--quick] [--window S] [--counts N ...]
    python -m bench.classroom viewers CLASS LECTURER MONITOR N WINDOW [CHROMIUM]  (internal)
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit

import aiohttp

from bench.common import (
    DemoSite,
    SiteOptions,
    machine_line,
    parser,
    percentile,
    table,
    write_results,
)

COUNTS = (0, 30, 100, 300)
PAGES = 100_000  # enough that no row's crawl ends before its window does
WORKERS = 20
TOGGLES = 6  # presses of each key (on, off, ...) timed a row
PRESS_DEADLINE = 10.0  # seconds a press is waited for; one not seen by then is left out
RSS_GOAL_MB = 300
RATE_GOAL = 0.95
P99_GOAL_MS = 250
# A key and what it draws when pressed, then pressed again.
KEYS = {"?": [b"Close", b"Quit"], "p": [b"PAUSED", b"RUNNING"]}
KEY_NAMES = {"?": "help_key", "p": "pause_key"}


# ---- the serving side, measured from /proc --------------------------------------------------


def tree(root: int) -> list[int]:
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                stat = Path(f"/proc/{entry}/stat").read_text()
                parents.setdefault(int(stat.rsplit(")", 1)[1].split()[1]), []).append(int(entry))
    found, todo = [root], [root]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
    return total / 1024


def cpu_by_pid(pids: list[int]) -> dict[int, float]:
    ticks = os.sysconf("SC_CLK_TCK")
    seconds: dict[int, float] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            seconds[pid] = (int(fields[11]) + int(fields[12])) / ticks
    return seconds


def cpu_seconds(pids: list[int]) -> float:
    return sum(cpu_by_pid(pids).values())


def cpu_since(before: dict[int, float], pids: list[int]) -> float:
    """CPU seconds `pids` took since `before` was read: a process there then counts from
    then, a new one from its start, one gone meanwhile not at all (its last figures are
    lost with it)."""
    now = cpu_by_pid(pids)
    return sum(seconds - before.get(pid, 0.0) for pid, seconds in now.items())


class Serve:
    """`crawlscope serve ROOT` on a free port, its lines read as they come."""

    def __init__(self, root: str, fps: float | None) -> None:
        rate = [] if fps is None else ["--fps", f"{fps:g}"]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "crawlscope", "serve", root, "--port", "0",
             "--max-tasks", str(WORKERS), *rate],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
            text=True, start_new_session=True,
        )  # fmt: skip
        self.lines: dict[str, str] = {}
        self.said = threading.Event()
        for stream in (self.proc.stdout, self.proc.stderr):
            assert stream is not None
            threading.Thread(target=self._read, args=(stream,), daemon=True).start()
        if not self.said.wait(90):
            self.close()
            raise RuntimeError("crawlscope serve did not say where it serves")

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            name, _, value = line.partition(": ")
            if name in ("serving", "lecturer", "monitor"):
                self.lines[name] = value.strip()
                if len(self.lines) == 3:
                    self.said.set()

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def machine_idle() -> tuple[float, float]:
    """(idle, total) clock ticks of the whole machine so far, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return fields[3] + fields[4], sum(fields)


def one_row(
    site: str, count: int, window: float, chromium: str | None, fps: float | None
) -> dict[str, Any]:
    serve = Serve(site, fps)
    try:
        viewers = subprocess.Popen(
            [sys.executable, "-m", "bench.classroom", "viewers", serve.lines["serving"],
             serve.lines["lecturer"], serve.lines["monitor"], str(count), str(window),
             chromium or ""],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert viewers.stdout is not None
        pids: list[int] = []
        peak_rss = 0.0
        cpu0 = 0.0
        others0: dict[int, float] = {}
        idle0 = (0.0, 0.0)
        result: dict[str, Any] = {}
        for line in viewers.stdout:
            message = json.loads(line)
            if message.get("window") == "start":
                pids = tree(serve.proc.pid)
                cpu0 = cpu_seconds(pids)
                others0 = cpu_by_pid(tree(viewers.pid))
                idle0 = machine_idle()
                peak_rss = rss_mb(pids)
            elif message.get("window") == "sample":
                peak_rss = max(peak_rss, rss_mb(tree(serve.proc.pid)))
            elif message.get("window") == "end":
                pids = tree(serve.proc.pid)
                peak_rss = max(peak_rss, rss_mb(pids))
                result["serve_cpu_s"] = cpu_seconds(pids) - cpu0
                # The stand-ins for the class's machines (the sockets and Chromium) share
                # this one: what they took is what the crawl could not have.
                result["viewers_cpu_s"] = cpu_since(others0, tree(viewers.pid))
                idle1 = machine_idle()
                result["machine_idle"] = (idle1[0] - idle0[0]) / max(idle1[1] - idle0[1], 1)
            else:
                result.update(message)
        viewers.wait()
        result.update(viewers=count, processes=len(pids), rss_mb=peak_rss, fps=fps)
        return result
    finally:
        serve.close()


# ---- the viewers' side: one process, every socket and Chromium ------------------------------


class Eye:
    """One viewer's socket: bytes counted, and when each mark was first seen since asked."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.received = 0
        self.tail = b""
        self.wanted: bytes | None = None
        self.seen_at: float | None = None
        self.closed = False  # the server let it go (dropped: it fell behind)

    def want(self, mark: bytes) -> None:
        self.wanted, self.seen_at, self.tail = mark, None, b""

    async def read(self) -> None:
        try:
            await self._read()
        finally:
            self.closed = True

    async def _read(self) -> None:
        async for message in self.ws:
            if message.type is not aiohttp.WSMsgType.BINARY:
                continue
            data: bytes = message.data
            self.received += len(data)
            if self.wanted is not None and self.seen_at is None:
                text = self.tail + data
                if self.wanted in text:
                    self.seen_at = time.perf_counter()
                self.tail = text[-32:]


async def watch(
    class_page: str, lecturer_page: str, monitor: str, count: int, window: float, chromium: str
) -> None:
    from crawlscope.engine.remote.client import RemoteCrawl

    def say(**message: Any) -> None:
        print(json.dumps(message), flush=True)

    own = "{0.scheme}://{0.netloc}".format(urlsplit(class_page))
    crawl = RemoteCrawl(monitor.split("?")[0])
    watching = asyncio.create_task(crawl.run())
    connector = aiohttp.TCPConnector(limit=0)
    async with contextlib.AsyncExitStack() as stack:
        session = await stack.enter_async_context(aiohttp.ClientSession(connector=connector))
        eyes: list[Eye] = []
        for page in [lecturer_page, *[class_page] * count]:
            ws = await session.ws_connect(f"{page}ws", headers={"Origin": own})
            eyes.append(Eye(ws))
        readers = [asyncio.create_task(eye.read()) for eye in eyes]
        pages: list[Any] = []
        if chromium:
            pages = await stack.enter_async_context(_chromium(chromium, class_page))
        while not (crawl.ready.is_set() and all(eye.received for eye in eyes)):
            await asyncio.sleep(0.05)
        # The keys first, while the crawl surely runs (it ends: the site is finite), each
        # pressed an even number of times, so the window below sees it running.
        # ? (help) is drawn by the screen alone; p (pause) goes through the crawl's
        # monitor and back.
        timed: dict[str, list[float]] = {}
        for key, marks in KEYS.items():
            timed[key] = await _time_key(eyes, key, marks * (TOGGLES // 2))
        # The rate over the window, read from the crawl's own counters.
        say(window="start")
        done0, t0 = _done(crawl), time.perf_counter()
        bytes0 = eyes[-1].received
        end = t0 + window
        while time.perf_counter() < end:
            await asyncio.sleep(min(1.0, max(0.0, end - time.perf_counter())))
            say(window="sample")
        done1, t1 = _done(crawl), time.perf_counter()
        say(window="end")
        one = eyes[-1].received - bytes0
        dropped = sum(eye.closed for eye in eyes)
        for reader in readers:
            reader.cancel()
        figures: dict[str, Any] = {}
        for key, latencies in timed.items():
            name = KEY_NAMES[key]
            figures[f"{name}_p50_ms"] = percentile(latencies, 50) if latencies else None
            figures[f"{name}_p99_ms"] = percentile(latencies, 99) if latencies else None
            figures[f"{name}_samples"] = len(latencies)
            figures[f"{name}_wanted"] = TOGGLES * max(1, count)
        say(
            pages_per_s=(done1 - done0) / (t1 - t0),
            bytes_per_s_one_viewer=one / (t1 - t0),
            chromium_pages=len(pages),
            dropped=dropped,
            **figures,
        )
    watching.cancel()


async def _time_key(eyes: list[Eye], key: str, marks: list[bytes]) -> list[float]:
    """Milliseconds from each press of `key` on the lecturer's socket (eyes[0]) to its
    mark on each class viewer's screen (the lecturer's own when there are none)."""
    latencies: list[float] = []
    watchers = eyes[1:] or eyes
    for mark in marks:
        for eye in eyes:
            eye.want(mark)
        sent = time.perf_counter()
        if eyes[0].closed:  # the lecturer's socket fell behind and was dropped
            break
        await eyes[0].ws.send_str(json.dumps(["stdin", key]))
        deadline = sent + PRESS_DEADLINE
        while any(eye.seen_at is None for eye in watchers) and time.perf_counter() < deadline:
            await asyncio.sleep(0.002)
        latencies += [(eye.seen_at - sent) * 1000 for eye in watchers if eye.seen_at]
    return sorted(latencies)


def _done(crawl: Any) -> int:
    a = crawl.snapshot().accounting
    return int(a.done + a.failed)


@contextlib.asynccontextmanager
async def _chromium(path: str, page_url: str) -> Any:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chrome = await playwright.chromium.launch(
            executable_path=path, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        pages = []
        for _ in range(3):
            page = await chrome.new_page(viewport={"width": 1280, "height": 800})
            await page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), lambda r: r.abort())
            await page.goto(page_url, wait_until="load")
            pages.append(page)
        try:
            yield pages
        finally:
            await chrome.close()


# ---- the table ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["viewers"]:
        class_page, lecturer, monitor, count, window, browser = argv[1:7]
        asyncio.run(watch(class_page, lecturer, monitor, int(count), float(window), browser))
        return 0
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--window", type=float, default=10.0, help="seconds measured a row")
    p.add_argument("--counts", type=int, nargs="+", default=list(COUNTS), help="viewers a row")
    p.add_argument("--fps", type=float, help="serve --fps (default: serve's)")
    args = p.parse_args(argv)
    if args.quick:
        args.window, args.counts = 3.0, [0, 10]
    chromium: str | None = shutil.which("chromium") or (
        "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None
    )
    try:
        import playwright  # noqa: F401
    except ImportError:
        chromium = None
    print(machine_line())
    rows = []
    with DemoSite(SiteOptions(pages=PAGES)) as site:
        for count in args.counts:
            rows.append(one_row(site.url, count, args.window, chromium, args.fps))
            print(f"  {count} viewers: done", flush=True)
    # Against the rows with no viewers (--counts 0 300 0 300 interleaves them, so that a
    # machine busier at one time than another weighs on both alike).
    bases = [r["pages_per_s"] for r in rows if r["viewers"] == 0] or [rows[0]["pages_per_s"]]
    base = sum(bases) / len(bases) or float("nan")
    for row in rows:
        row["rate_vs_0"] = row["pages_per_s"] / base
    print(
        table(
            [
                "viewers",
                "+chromium",
                "processes",
                "RSS MB",
                "pages/s",
                "vs 0",
                "? p50 ms",
                "? p99 ms",
                "p p50 ms",
                "p p99 ms",
                "bytes/s to one",
                "dropped",
                "serve CPU s",
                "ms/page",
                "stand-ins CPU s",
                "idle",
            ],
            [
                [
                    r["viewers"],
                    r["chromium_pages"],
                    r["processes"],
                    f"{r['rss_mb']:.0f}",
                    f"{r['pages_per_s']:.0f}",
                    f"{r['rate_vs_0']:.2f}x",
                    _ms(r["help_key_p50_ms"]),
                    _ms(r["help_key_p99_ms"]),
                    _ms(r["pause_key_p50_ms"]),
                    _ms(r["pause_key_p99_ms"]),
                    f"{r['bytes_per_s_one_viewer']:,.0f}",
                    r["dropped"],
                    f"{r['serve_cpu_s']:.1f}",
                    f"{1000 * r['serve_cpu_s'] / max(r['pages_per_s'] * args.window, 1):.2f}",
                    f"{r['viewers_cpu_s']:.1f}",
                    f"{100 * r['machine_idle']:.0f}%",
                ]
                for r in rows
            ],
        )
    )
    last = rows[-1]
    notes = [
        f"goal: processes do not grow with viewers: {sorted({r['processes'] for r in rows})}",
        f"goal: RSS at {last['viewers']} viewers <= {RSS_GOAL_MB} MB: {last['rss_mb']:.0f} MB",
        f"goal: pages/s at {last['viewers']} >= {RATE_GOAL}x: {last['rate_vs_0']:.2f}x",
        f"goal: key p99 at {last['viewers']} <= {P99_GOAL_MS} ms: ? (help, the screen alone) "
        f"{_ms(last['help_key_p99_ms'])} ms, p (pause, through the crawl) "
        f"{_ms(last['pause_key_p99_ms'])} ms",
    ]
    print("\n".join(notes))
    write_results("classroom", args, {"rows": rows}, notes)
    return 0


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0f}"


if __name__ == "__main__":
    sys.exit(main())
