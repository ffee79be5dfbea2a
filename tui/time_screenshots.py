"""The docs' pictures of time (issue 40): the timeline of a live crawl of the demo site,
and the waterfall of one of its fetches, each steered as a person would."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.sites.demo import DemoConfig

from .app import CrawlScopeApp
from .screenshot_run import shoot_app
from .startup import LiveCrawl
from .waiting import wait_until
from .widgets.timeline_screen import TimelineScreen
from .widgets.waterfall_screen import WaterfallScreen

# Slow pages, a few workers and a per-host limit of 4: lanes that show every state,
# the gate included, at a few seconds across.
DEMO = DemoConfig(pages=300, latency=0.15, jitter=0.1)


def _app() -> CrawlScopeApp:
    return CrawlScopeApp(
        LiveCrawl(make_config=lambda roots: CrawlConfig(roots=tuple(roots), max_tasks=8,
                                                        per_host=4), demo=DEMO)
    )  # fmt: skip


async def _timeline(p: Pilot[Any], app: CrawlScopeApp) -> TimelineScreen:
    await p.pause(6.0)
    await p.press("t")
    await wait_until(lambda: isinstance(app.screen, TimelineScreen), "the timeline")
    screen = app.screen
    assert isinstance(screen, TimelineScreen)
    await p.press("plus")  # 5 s across
    await p.pause(0.5)
    return screen


def timeline_scene(target: Path) -> Path:
    app = _app()

    async def steer(p: Pilot[Any]) -> None:
        await _timeline(p, app)

    return shoot_app(app, target, (120, 30), steer)


def waterfall_scene(target: Path) -> Path:
    app = _app()

    async def steer(p: Pilot[Any]) -> None:
        screen = await _timeline(p, app)
        view = screen.view
        await p.press("down", "down")  # worker 2
        # Back along its lane to a fetch that has ended: its waterfall is whole.
        assert app.source is not None and isinstance(app.source, LiveCrawl)
        crawler = app.source.crawler
        assert crawler is not None
        for _ in range(view.columns):
            held = view.timeline.lanes[2].state_at(view.cursor_t)
            if held is not None and held[1] is not None and held[1] in crawler.ledger.done:
                break
            await p.press("left")
        await p.press("enter")
        await wait_until(lambda: isinstance(app.screen, WaterfallScreen), "the waterfall")

    return shoot_app(app, target, (120, 30), steer)


TIME_SCENES: dict[str, Callable[[Path], Path]] = {
    "timeline.svg": timeline_scene,
    "waterfall.svg": waterfall_scene,
}
