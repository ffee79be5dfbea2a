"""The screen takes its running shape before the crawl starts: the workers panel's height,
the table's scrollbar and the footer's keys are laid out while the loop is idle, not in
the crawl's first moments, where each layout of the whole screen held the loop."""

from __future__ import annotations

import time

import pytest
from textual.geometry import Size
from tui_support import config, crawler_of, frames, until

from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.screens.panels import SETTLE_LIMIT, PanelsScreen
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.keys_footer import KeysFooter

# More workers than the table has room for at 120x40 (a scrollbar), on a site slow enough
# that the crawl outlasts the test: its end lays the footer out again.
WORKERS = 40
SITE = DemoConfig(pages=2000, latency=0.05)


async def test_no_layout_falls_in_the_crawls_first_frames(monkeypatch: pytest.MonkeyPatch) -> None:
    layouts: list[float] = []
    refresh_layout = PanelsScreen._refresh_layout

    def counting(screen: PanelsScreen, size: Size | None = None, scroll: bool = False) -> None:
        layouts.append(time.monotonic())
        refresh_layout(screen, size, scroll)

    monkeypatch.setattr(PanelsScreen, "_refresh_layout", counting)
    app = CrawlScopeApp(LiveCrawl(make_config=config(WORKERS), demo=SITE))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        panels = app.panels
        footer = panels.query_one(KeysFooter)
        rebuilds = footer.rebuilds
        await until(pilot, lambda: panels._table.row_count == WORKERS, "the workers' rows")
        await frames(pilot, 2)
        assert crawler.t0 is not None and layouts and layouts[0] < crawler.t0
        assert [t for t in layouts if t >= crawler.t0] == []
        # The keys that apply once there are workers were greyed back in place.
        assert footer.rebuilds == rebuilds and footer.greyings >= 1
        # Sized for its rows before they came: the rows fill it, with a scrollbar.
        assert panels._table.show_vertical_scrollbar
        assert panels._table.size.height < WORKERS


async def test_a_screen_that_never_settles_holds_the_crawl_back_for_a_moment_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # SETTLE_LIMIT, not the tests' minute: the crawl starts regardless.
    monkeypatch.setattr(KeysFooter, "settled", property(lambda _footer: False))
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=DemoConfig(pages=30)))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.panels.source is not None, "the crawl built")
        await crawler_of(pilot, timeout=SETTLE_LIMIT * 20)


async def test_the_table_keeps_room_for_the_rows_it_expects_until_they_come() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(3), demo=SITE, paused=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await crawler_of(pilot)
        table = app.panels._table
        await until(pilot, lambda: table.row_count == 3, "the rows")
        table.show([])  # the workers gone: the table shrinks with them
        assert table.rows_to_fit == 0
        table.expect(50)
        assert table.rows_to_fit == 50 and table.virtual_size.height == 51
        table.show([])  # no rows yet: the room stays
        assert table.rows_to_fit == 50
        source = app.panels.source
        assert source is not None
        snap = source.snapshot(table.wanted_ids())  # none shown: the ids bring the rows
        table.show(snap.workers, snap.elapsed, snap.worker_ids)
        assert table.rows_to_fit == 3 and table.virtual_size.height == 4
