"""One crawl in this process, headless or under the TUI, with an optional event-loop probe.

The TUI runs as it does for a user (a Textual app on the crawler's own loop, redrawing
at its normal frame rate), only with Textual's headless driver instead of a terminal.

    python -m bench.inprocess headless URL --workers 100 [--lag] [--no-turns]
    python -m bench.inprocess tui URL --workers 100 [--lag]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import resource
import statistics
import time
from typing import Any

from bench.common import percentile
from bench.trial import engine_config
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import OVER, Phase
from crawlscope.tui.heap import settled_heap

TUI_SIZE = (160, 48)  # columns, rows: a big terminal window, about 40 worker rows shown


class LagProbe:
    """A coroutine that sleeps 10 ms again and again and notes how late it wakes up: any
    callback that holds the loop (parsing a page, drawing a frame) shows up as lateness."""

    def __init__(self, interval: float = 0.01) -> None:
        self.interval = interval
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(self.interval)
            self.lags.append(time.perf_counter() - t0 - self.interval)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="lag probe")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def stats(self) -> dict[str, float]:
        return lag_stats(self.lags)


def lag_stats(lags: list[float]) -> dict[str, float]:
    data = sorted(lags)
    return {
        "samples": len(data),
        "p50_ms": percentile(data, 50) * 1000,
        "p99_ms": percentile(data, 99) * 1000,
        "max_ms": (data[-1] if data else float("nan")) * 1000,
    }


def _result(crawler: Crawler, cpu: float) -> dict[str, Any]:
    seconds = crawler.elapsed
    pages = len(crawler.ledger.done) + len(crawler.ledger.failed)
    return {
        "pages": pages,
        "seconds": seconds,
        "pages_per_s": pages / seconds if seconds else float("nan"),
        "cpu_seconds": cpu,
    }


async def crawl_headless(
    url: str, workers: int, lag: bool, per_host: int = 0, turns: bool = True
) -> dict[str, Any]:
    crawler = Crawler(engine_config(url, workers, per_host))
    if not turns:
        crawler.turns.slice = math.inf  # every parse in the pass its answer came in
    probe = LagProbe()
    if lag:
        probe.start()
    c0 = time.process_time()
    # As `crawlscope crawl` runs it (and the TUI its own crawl): the collector set for a
    # crawl (heap.py).
    with settled_heap():
        await crawler.crawl()
    cpu = time.process_time() - c0
    await probe.stop()
    result = _result(crawler, cpu)
    if lag:
        result["lag"] = probe.stats()
    return result


async def crawl_tui(
    url: str, workers: int, lag: bool, per_host: int = 0, turns: bool = True
) -> dict[str, Any]:
    if not turns:
        raise ValueError("--no-turns is for headless crawls")
    from crawlscope.tui.app import CrawlScopeApp
    from crawlscope.tui.startup import LiveCrawl

    live = LiveCrawl((url,), make_config=lambda roots: engine_config(roots[0], workers, per_host))
    app = CrawlScopeApp(live)
    running = asyncio.create_task(app.run_async(headless=True, size=TUI_SIZE))
    probe = LagProbe()

    async def until(done: Any, every: float) -> None:
        # Polled rather than hooked: the bench must not need anything from the app but
        # its public `crawler`.
        while not done():
            if running.done():
                running.result()  # the app died: raise its error
                raise RuntimeError("the TUI exited before the crawl ended")
            await asyncio.sleep(every)

    # 5 ms: the clocks below start within a frame of the crawl's.
    await until(lambda: live.crawler is not None and live.crawler.phase is Phase.RUNNING, 0.005)
    crawler = live.crawler
    assert crawler is not None
    if lag:
        probe.start()
    panels = app.panels
    c0, frames0, costs0 = time.process_time(), app.frames, len(app.frame_costs)
    w0, ui0 = time.perf_counter(), panels.ui_seconds
    skipped0 = getattr(panels, "frames_skipped", 0)
    # Pages per second come from the crawler's own clock, so how soon the end is seen does
    # not move them; a 5 ms poll here was 200 turns of the loop a second that the headless
    # crawl, which awaits its crawl, never pays. 20 ms: a tenth of that, and the CPU time
    # and frames counted after the end (a frame at most) stay a small part of a crawl's.
    await until(lambda: crawler.phase in OVER, 0.02)
    cpu, watched = time.process_time() - c0, time.perf_counter() - w0
    frames = app.frames - frames0
    skipped = getattr(panels, "frames_skipped", 0) - skipped0
    ui_seconds = panels.ui_seconds - ui0
    costs = (
        list(app.frame_costs)[costs0:]
        if len(app.frame_costs) < (app.frame_costs.maxlen or 0)
        else []
    )
    await probe.stop()
    app.exit(0)
    await running
    result = _result(crawler, cpu)
    result["frames"] = frames
    result["frames_skipped"] = skipped  # frame slots with no frame drawn
    # Frames and the screen's seconds over the time they were counted in (the crawl, and
    # up to a poll more), not the crawl's alone.
    result["fps"] = frames / watched if watched else float("nan")
    if costs:
        result["frame_ms_mean"] = statistics.fmean(costs) * 1000
        result["frame_ms_max"] = max(costs) * 1000
    # The share of the crawl's time the loop spent on the screen: ticks and drawing.
    result["ui_share"] = ui_seconds / watched if watched else float("nan")
    if lag:
        result["lag"] = probe.stats()
    return result


def tui_available() -> str | None:
    """None when the TUI can be benchmarked, else why not."""
    try:
        from crawlscope.tui.app import CrawlScopeApp  # noqa: F401
    except Exception as exc:  # the app is being written: any failure means "not yet"
        return f"{type(exc).__name__}: {exc}"
    return None


MODES = {"headless": crawl_headless, "tui": crawl_tui}


def main() -> None:
    p = argparse.ArgumentParser(description="one crawl in this process, as a JSON line")
    p.add_argument("mode", choices=sorted(MODES))
    p.add_argument("root")
    p.add_argument("--workers", type=int, default=100)
    p.add_argument("--lag", action="store_true", help="run the 10 ms event-loop probe")
    p.add_argument("--per-host", type=int, default=0, help="requests in flight per host (0: off)")
    p.add_argument(
        "--no-turns",
        dest="turns",
        action="store_false",
        help="parse every answer in the loop pass it came in (engine/timing/turns.py off)",
    )
    args = p.parse_args()
    crawl = MODES[args.mode]
    result = asyncio.run(crawl(args.root, args.workers, args.lag, args.per_host, args.turns))
    result["max_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(result))


if __name__ == "__main__":
    main()
