"""The hosts screen (`h`): its rows, its keys on a live crawl, and none where the source
cannot be steered; against real servers and the real app, driven by Textual's Pilot."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from pathlib import Path

from host_sites import counted_site, holding, host_row
from textual.pilot import Pilot
from textual.widgets import Static
from tui_support import config, crawler_of, frames, screen_text, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.screens.hosts import HostsScreen
from crawlscope.tui.startup import LiveCrawl, Recording
from crawlscope.tui.widgets.hosts_table import BLOCKED
from helpers import Handler, assert_accounted

Serve = Callable[[dict[str, Handler]], Awaitable[str]]


async def hosts_screen(pilot: Pilot[int]) -> HostsScreen:
    await pilot.press("h")
    app = pilot.app
    await until(pilot, lambda: isinstance(app.screen, HostsScreen), "the hosts screen")
    screen = app.screen
    assert isinstance(screen, HostsScreen)
    return screen


async def looked_again(pilot: Pilot[int], screen: HostsScreen) -> None:
    """Wait until the screen has looked at its rows twice more: what it last drew is laid
    out (a table measures its columns after a refresh, not in it)."""
    looks = screen.looks
    await until(pilot, lambda: screen.looks >= looks + 2, "two more looks at the rows")
    await pilot.pause()


async def select(pilot: Pilot[int], screen: HostsScreen, origin: str) -> None:
    """Move the cursor to `origin`'s row (the rows are ordered by how busy they are)."""
    await until(pilot, lambda: origin in screen.table._order, f"a row for {origin}")
    while screen.table.selected != origin:
        await pilot.press("down" if screen.table._order.index(origin) > 0 else "up")


async def test_b_blocks_the_selected_host_and_again_unblocks_it(serve: Serve) -> None:
    hits_a: list[str] = []
    hits_b: list[str] = []
    # Host a is slow: its pages are not all fetched before the keys reach the screen.
    root_a = await serve(counted_site("a", 30, hits_a, latency=0.2))
    root_b = await serve(counted_site("b", 30, hits_b))
    a = root_a.rstrip("/")
    app = CrawlScopeApp(LiveCrawl(roots=(root_a, root_b), make_config=config(2)))
    async with app.run_test(size=(160, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(hits_a) >= 2, "host a's first pages")
        screen = await hosts_screen(pilot)
        await select(pilot, screen, a)
        await pilot.press("b")
        await until(pilot, lambda: crawler.host_book.blocked(a), "host a blocked")
        await until(pilot, lambda: not holding(crawler, a), "host a's last request over")
        before = len(hits_a)
        await until(pilot, lambda: len(hits_b) == 31, "host b crawled to the end")
        await until(pilot, lambda: BLOCKED in screen_text(app), "the row says blocked")
        assert len(hits_a) == before < 31
        assert crawler.phase is Phase.RUNNING and crawler.accounting().balanced
        await pilot.press("b")
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
        assert len(hits_a) == 31
        assert_accounted(crawler)


async def one_paused_host(serve: Serve) -> tuple[str, CrawlScopeApp]:
    """A small site's origin, and the app on a paused crawl of it."""
    root = await serve(counted_site("p", 3, []))
    app = CrawlScopeApp(LiveCrawl(roots=(root,), make_config=config(1), paused=True))
    return root.rstrip("/"), app


async def on_its_row(pilot: Pilot[int], origin: str) -> tuple[Crawler, HostsScreen]:
    crawler = await crawler_of(pilot)
    screen = await hosts_screen(pilot)
    await select(pilot, screen, origin)
    return crawler, screen


async def test_delay_and_limit_keys_act_on_the_selected_host(serve: Serve) -> None:
    origin, app = await one_paused_host(serve)
    async with app.run_test(size=(160, 40)) as pilot:
        crawler, _screen = await on_its_row(pilot, origin)
        await pilot.press("d", "d", "D", "l", "L", "L")
        await until(pilot, lambda: crawler.hosts.delay_of(origin) == 0.5, "delay 0.5 s")
        await until(pilot, lambda: crawler.hosts.limit_of(origin) == 7, "limit 8 - 1")
        await until(pilot, lambda: "0.5s" in screen_text(app), "the delay shown")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HostsScreen), "closed")


async def test_a_replay_shows_the_hosts_without_keys(serve: Serve, tmp_path: Path) -> None:
    record = tmp_path / "crawl.jsonl"
    root = await serve(counted_site("p", 4, []))
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=1))
    recorder = Recorder(crawler, record)
    await crawler.crawl()
    recorder.close()
    replay = ReplayedCrawl.load(record)
    app = CrawlScopeApp(Recording(replay, record.name, paused=True))
    async with app.run_test(size=(160, 40)) as pilot:
        await frames(pilot, 2)
        await pilot.press("end")  # the recording's end: the rows the crawl ended with
        screen = await hosts_screen(pilot)
        await until(pilot, lambda: "watch only" in screen_text(app), "said read-only")
        await until(pilot, lambda: screen.table.selected == root.rstrip("/"), "its row")
        assert screen.table._cells[root.rstrip("/")][3].plain == "5"  # done
        assert screen.check_action("toggle_block", ()) is False  # hidden from the footer
        text = screen_text(app)
        assert "Block" not in text and "Delay" not in text and "Close" in text


def test_the_hosts_screen_of_a_finished_demo_crawl(snap_compare: Callable[..., bool]) -> None:
    """One worker in queue order and dashes for the clock's figures: the same screen
    every run."""
    app = CrawlScopeApp(
        LiveCrawl(make_config=config(1), demo=DemoConfig(pages=24, links_per_page=4, seed=3)),
        reproducible=True,
    )

    async def hosts_of_the_finished_crawl(pilot: Pilot[int]) -> None:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
        screen = await hosts_screen(pilot)
        await until(pilot, lambda: screen.table.selected is not None, "the rows")
        await frames(pilot, 3)

    assert snap_compare(app, terminal_size=(140, 30), run_before=hosts_of_the_finished_crawl)


async def test_a_crawl_bounded_by_max_pages_has_an_eta(serve: Serve) -> None:
    # Slow enough that the ETA, shown only while the crawl runs, is on screen for seconds
    # after the hosts screen opens, however loaded the machine (0.1 s ended it before).
    root = await serve(counted_site("p", 40, [], latency=0.4))
    app = CrawlScopeApp(LiveCrawl(roots=(root,), make_config=config(2, max_pages=20)))
    async with app.run_test(size=(160, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await hosts_screen(pilot)
        await until(pilot, lambda: "(--max-pages 20)" in screen_text(app), "an ETA")
        assert "ETA " in screen_text(app) and "pages by depth 0:1" in screen_text(app)
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
        await until(pilot, lambda: "pages by depth 0:1 1:19; " in screen_text(app), "depths")


async def test_at_120_columns_a_blocked_host_is_whole_and_out_of_the_eta(serve: Serve) -> None:
    """serve's default size: every column shown fits (none behind a scrollbar), a blocked
    host's name is whole, and the ETA is of the hosts whose queue can shrink."""
    hits_a: list[str] = []
    hits_b: list[str] = []
    # a's root answers first, so its pages are queued before b's: a is blocked with most
    # of them waiting, and b's long queue then shrinks alone for 20 s.
    root_a = await serve(counted_site("a", 60, hits_a, latency=0.1))
    root_b = await serve(counted_site("b", 200, hits_b, latency=0.2))
    a = root_a.rstrip("/")
    app = CrawlScopeApp(LiveCrawl(roots=(root_a, root_b), make_config=config(2)))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(hits_a) >= 3 and len(hits_b) >= 1, "a's first pages")
        screen = await hosts_screen(pilot)
        await select(pilot, screen, a)
        await pilot.press("b")
        await until(pilot, lambda: crawler.host_book.blocked(a), "host a blocked")
        shape = screen.query_one("#hosts-shape", Static)
        told = re.compile(r"\bETA \d")
        await until(pilot, lambda: told.search(str(shape.render())), "an ETA while b shrinks")
        line = str(shape.render())
        waits = re.search(r"\((\d+) URLs wait on blocked hosts: no ETA for them\)", line)
        assert waits is not None, line
        # a's URLs, parked; one a worker still held when the line was drawn may follow it.
        assert 1 <= int(waits[1]) <= host_row(crawler.snapshot(), root_a).queued, line
        assert "(the queue of the unblocked hosts shrinks)" in line, line
        await until(pilot, lambda: BLOCKED in screen_text(app), "the row says blocked")
        await looked_again(pilot, screen)
        assert f"{BLOCKED}{a}" in screen_text(app), "the blocked host's name is cut"
        table = screen.table
        assert table.max_scroll_x == 0, f"{table.virtual_size.width} > {table.size.width}"
        assert "host" in table.columns_shown and "done" in table.columns_shown
        assert "too narrow for " + ", ".join(table.left_out) in screen_text(app)
        crawler.stop()


async def test_the_only_host_blocked_keeps_its_whole_name(serve: Serve) -> None:
    # Its row stays where it was and every column fits at 160: the cells are updated in
    # place, the mark widening the name.
    origin, app = await one_paused_host(serve)
    async with app.run_test(size=(160, 40)) as pilot:
        crawler, screen = await on_its_row(pilot, origin)
        await until(pilot, lambda: screen.table.size.width > 0, "the table laid out")
        screen.refresh_rows()  # its columns as wide as its cells before the block
        await pilot.press("b")
        await until(pilot, lambda: crawler.host_book.blocked(origin), "the host blocked")
        await until(pilot, lambda: BLOCKED in screen_text(app), "the row says blocked")
        await looked_again(pilot, screen)
        assert f"{BLOCKED}{origin}" in screen_text(app), "the blocked host's name is cut"
