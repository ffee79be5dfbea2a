"""The frame budget sees what a frame really costs: the sampling and widget updates, and
Textual's drawing of what they changed, which is most of it."""

from __future__ import annotations

from tui_support import config, crawler_of, frames

from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl


async def test_the_screens_time_counts_its_drawing_as_well_as_its_ticks() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(3), demo=DemoConfig(pages=30)))
    async with app.run_test(size=(120, 40)) as pilot:
        await crawler_of(pilot)
        await frames(pilot, 5)
        panels = app.panels
        ticks = sum(panels.frame_costs)
        assert ticks > 0
        # Drawing 120x40 cells takes time of its own beyond the ticks that asked for it.
        assert panels.ui_seconds > ticks
