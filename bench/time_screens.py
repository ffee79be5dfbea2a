"""What the views of time cost on screen, at 500 workers: a frame of the timeline (the lanes
that fit, built and written) and its catching up with the flight recorder (every 0.1 s),
opening a rewind (the kept past made a replay) and moving it to any moment (a seek and the
snapshot a frame draws), and finding a fetch's waterfall in the ring as `enter` on a lane
does.

The TUI runs in this process on Textual's headless driver (160x48), crawling a slow demo
site served by another process so that 500 workers stay busy; after `--after` seconds the
timeline is opened and its frames timed as they come; then the rewind is timed on the ring.

    python -m bench.time_screens [--quick] [--workers N] [--after S]
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Any

from bench.common import (
    DemoSite,
    SiteOptions,
    machine_line,
    parser,
    percentile,
    table,
    write_results,
)

FRAME_TARGET = 0.010  # a timeline frame at 500 workers
REWIND_TARGET = 0.100  # to open it, and to any moment of the kept past


async def measure(url: str, workers: int, after: float, frames: int) -> dict[str, Any]:
    from crawlscope.engine.config import CrawlConfig
    from crawlscope.tui.app import CrawlScopeApp
    from crawlscope.tui.startup import LiveCrawl
    from crawlscope.tui.widgets.timeline_screen import TimelineScreen

    def config(roots: Any) -> CrawlConfig:
        return CrawlConfig(roots=tuple(roots), max_tasks=workers, per_host=0)

    app = CrawlScopeApp(LiveCrawl(roots=(url,), make_config=config))
    out: dict[str, Any] = {}
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause(after)
        await pilot.press("t")
        while not isinstance(app.screen, TimelineScreen):
            await pilot.pause(0.05)
        view = app.screen.view
        source = app.source
        assert isinstance(source, LiveCrawl) and source.flight is not None
        costs: list[float] = []
        catch_ups: list[float] = []
        drawn, caught = view.frames, view.catch_up_seconds
        # A frame is drawn only when something moved: once the crawl is over, none comes.
        while len(costs) < frames and (source.crawler is None or source.crawler.t1 is None):
            await pilot.pause(0.02)
            if view.frames != drawn:
                drawn = view.frames
                costs.append(view.frame_seconds)
            if view.catch_up_seconds != caught:
                caught = view.catch_up_seconds
                catch_ups.append(caught)
        if not costs:
            raise SystemExit("the crawl ended before the timeline drew a frame: a longer one?")
        ring = source.flight.ring
        # As `r` opens it: the kept past made a replay, put 5 s before its end.
        t0 = time.perf_counter()
        replay = ring.replay()
        replay.seek(replay.duration - 5.0)
        replay.snapshot()
        opened = time.perf_counter() - t0
        seeks = []
        rng = random.Random(1)
        for _ in range(30):
            moment = rng.uniform(replay.first, replay.duration)
            t0 = time.perf_counter()
            replay.seek(moment)
            replay.snapshot()
            seeks.append(time.perf_counter() - t0)
        # As `enter` on a lane finds a fetch's waterfall: the ring searched from its end.
        from crawlscope.engine.observe.waterfall import waterfall_of
        from crawlscope.engine.trace.events import FETCH

        kept = [item[2].url for item in ring.items() if item[0] == FETCH]
        falls = []
        for url in rng.sample(kept, min(30, len(kept))):
            t0 = time.perf_counter()
            waterfall_of(ring.events_for(url), url)
            falls.append(time.perf_counter() - t0)
        crawler = source.crawler
        assert crawler is not None
        out = {
            "lanes": len(view.timeline.lanes),
            "frames": sorted(costs),
            "catch_ups": sorted(catch_ups),
            "rewind_open_s": opened,
            "seeks": sorted(seeks),
            "waterfalls": sorted(falls),
            "ring_events": len(ring),
            "ring_seconds": ring.last_t - ring.first_t,
            "ring_mb": ring.bytes / 1e6,
            "pages_done": len(crawler.ledger.done),
        }
        crawler.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=500)
    p.add_argument("--after", type=float, help="seconds of crawl before the timeline opens")
    args = p.parse_args(argv)
    after = args.after or (3.0 if args.quick else 30.0)
    frames = 10 if args.quick else 60
    pages = 20_000 if args.quick else 100_000  # more than a quick look takes to crawl
    with DemoSite(SiteOptions(pages=pages, latency=0.05)) as site:
        got = asyncio.run(measure(site.url, args.workers, after, frames))
    frames_s, seeks, falls = got["frames"], got["seeks"], got["waterfalls"]
    catch_ups = got["catch_ups"] or [0.0]
    print(machine_line())
    kept = f"{got['ring_seconds']:.1f} s of the crawl, {got['ring_mb']:.1f} MB estimated"
    print(f"{got['lanes']} lanes, the ring: {got['ring_events']:,} events, {kept}")
    print(table(
        ("what", "p50 ms", "p99 ms", "max ms", "target ms"),
        [("timeline frame", percentile(frames_s, 50) * 1e3, percentile(frames_s, 99) * 1e3,
          frames_s[-1] * 1e3, FRAME_TARGET * 1e3),
         ("timeline: catching up (every 0.1 s)", percentile(catch_ups, 50) * 1e3,
          percentile(catch_ups, 99) * 1e3, catch_ups[-1] * 1e3, FRAME_TARGET * 1e3),
         ("rewind: open", got["rewind_open_s"] * 1e3, got["rewind_open_s"] * 1e3,
          got["rewind_open_s"] * 1e3, REWIND_TARGET * 1e3),
         ("rewind: seek + snapshot", percentile(seeks, 50) * 1e3, percentile(seeks, 99) * 1e3,
          seeks[-1] * 1e3, REWIND_TARGET * 1e3),
         ("a fetch's waterfall", percentile(falls, 50) * 1e3, percentile(falls, 99) * 1e3,
          falls[-1] * 1e3, REWIND_TARGET * 1e3)],
    ))  # fmt: skip
    write_results("time_screens", args, {**got, "workers": args.workers, "after": after})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
