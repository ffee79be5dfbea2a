"""Finding workers among many (issue 42): `f` and a host typed keep only the workers holding
that host's URLs, every one of them; clearing it brings all back; `o` orders them by time
in their state. The real TUI under Pilot, crawling two demo sites (two hosts)."""

from __future__ import annotations

import pytest
from textual.widgets import Input
from tui_support import config, crawler_of, until

from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.screens.worker_filter import FilterScreen
from crawlscope.tui.startup import LiveCrawl

pytestmark = pytest.mark.slow

SLOW = DemoConfig(pages=400, latency=0.3)


async def test_typing_a_host_shows_only_its_workers_and_clearing_brings_all_back() -> None:
    async with DemoServer(SLOW) as one, DemoServer(SLOW) as other:
        app = CrawlScopeApp(
            LiveCrawl(roots=(one.url, other.url), make_config=config(8, per_host=4))
        )
        async with app.run_test(size=(160, 48)) as pilot:
            crawler = await crawler_of(pilot)
            await until(pilot, lambda: len(crawler.ledger.done) >= 6, "6 pages")
            table = app.panels._table
            host = one.url.split("://")[1].rstrip("/")
            await pilot.press("f")
            await until(pilot, lambda: isinstance(app.screen, FilterScreen), "the filter")
            for key in host:
                await pilot.press(key)
            await pilot.press("enter")

            def only_that_host() -> bool:
                """The rows are every worker holding the host's URLs, of the views the
                table was given (all of them, while it filters), and no other."""
                views = table._views
                holding = [i for i, v in sorted(views.items()) if v.url and host in v.url]
                shown = list(table._order)
                return bool(shown) and len(views) == 8 and shown == holding

            # (A moment when the other host's URLs are held too: the queue is first in,
            # first out, and the two sites' links come in turns.)
            await until(pilot, lambda: only_that_host() and 0 < len(table._order) < 8,
                        "only the host's workers, while others hold the other's")  # fmt: skip
            assert f'holding "{host}"' in str(table.border_title)
            # Cleared: every worker again, in the order of their numbers.
            await pilot.press("f")
            await until(pilot, lambda: isinstance(app.screen, FilterScreen), "the filter")
            assert app.screen.query_one(Input).value == host
            for _ in host:
                await pilot.press("backspace")
            await pilot.press("enter")
            await until(pilot, lambda: list(table._order) == sorted(crawler.workers), "all back")
            assert str(table.border_title) == "workers"
            # o: the longest in their state first.
            await pilot.press("o")

            def by_time_in_state() -> bool:
                views, order = table._views, list(table._order)
                if len(order) != 8 or set(order) - set(views):
                    return False
                # (At a moment when that order is not the workers' numbers' own.)
                return order == sorted(order, key=lambda i: (views[i].since, i)) != sorted(order)

            await until(pilot, by_time_in_state, "by time in state")
            assert "by time in state" in str(table.border_title)
