"""The hosts in a cluster: each process's rows in Redis, merged in the cluster's view,
and the hosts screen's controls sent to every process; with a real redis-server."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from host_sites import counted_site
from redis_support import RedisServer, redis_server
from textual.app import App

from crawlscope.engine.cluster.node import redis_crawler
from crawlscope.engine.cluster.observe import ClusterControls, ClusterCrawl
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.hosts.figures import merge_depths, merge_host_rows
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.tui.screens.hosts import HostsScreen
from helpers import Handler, until

__all__ = ["redis_server"]  # a fixture, used by name

Serve = Callable[[dict[str, Handler]], Awaitable[str]]


async def test_the_cluster_view_shows_and_steers_the_hosts(redis_server: RedisServer) -> None:
    import redis.asyncio as aioredis

    async with DemoServer(DemoConfig(pages=60, latency=0.05)) as site:
        origin = site.url.rstrip("/")
        crawler = redis_crawler(CrawlConfig(roots=(site.url,), max_tasks=3), redis_server.url, "h")
        crawling = asyncio.create_task(crawler.crawl())
        view = ClusterCrawl(aioredis.Redis(port=redis_server.port), "h")
        controls = ClusterControls(view)
        watching = asyncio.create_task(view.run())
        try:
            await until(lambda: view.ready.is_set() and view.snapshot().hosts)
            assert view.snapshot().hosts[0].origin == origin
            ((_name, rows),) = view.process_hosts()
            assert rows[0].origin == origin
            assert controls.block_host(origin)
            await until(lambda: crawler.host_book.blocked(origin))
            await until(lambda: view.snapshot().hosts[0].blocked)
            controls.set_host_limit(origin, 2)
            await until(lambda: crawler.hosts.limit_of(origin) == 2)
            controls.unblock_host(origin)
            await asyncio.wait_for(crawling, 60)
            await until(lambda: view.snapshot().hosts[0].done == len(crawler.ledger.done))
            assert crawler.accounting().balanced
        finally:
            watching.cancel()
            crawling.cancel()
            await view.client.aclose()


async def test_rows_of_two_crawls_merge_into_one_per_host(serve: Serve) -> None:
    root = await serve(counted_site("p", 6, []))
    other = await serve(counted_site("q", 3, []))
    crawls = [Crawler(CrawlConfig(roots=roots, max_tasks=2)) for roots in ((root,), (root, other))]
    for crawler in crawls:
        await crawler.crawl()
    one, two = (crawler.snapshot().hosts for crawler in crawls)
    merged = {row.origin: row for row in merge_host_rows([one, two])}
    assert set(merged) == {root.rstrip("/"), other.rstrip("/")}
    both = merged[root.rstrip("/")]
    assert both.done == 14 and both.tries == 14
    first, second = (next(r for r in rows if r.origin == both.origin) for rows in (one, two))
    assert both.latency == tuple(a + b for a, b in zip(first.latency, second.latency, strict=True))
    assert merged[other.rstrip("/")].done == 4
    # Pages by depth add up too: 1 + 2 roots at depth 0, 6 + 6 + 3 pages at depth 1.
    assert merge_depths(crawler.snapshot().depths for crawler in crawls) == (3, 15)
    # The shared queue's own count, when there is one, is what a merged row shows queued.
    queued = merge_host_rows([one, two], {root.rstrip("/"): 5})
    assert {row.origin: row.queued for row in queued} == {
        root.rstrip("/"): 5, other.rstrip("/"): 0,
    }  # fmt: skip


class HostsApp(App[None]):
    """The hosts screen alone, on a cluster's view: what `h` opens in `attach redis://`."""

    def __init__(self, view: ClusterCrawl) -> None:
        super().__init__()
        self.view = view

    def on_mount(self) -> None:
        self.push_screen(HostsScreen(self.view, ClusterControls(self.view)))


async def test_the_hosts_screen_shows_a_cluster_merged_and_by_process(
    redis_server: RedisServer,
) -> None:
    import redis.asyncio as aioredis

    async with DemoServer(DemoConfig(pages=60, latency=0.05)) as site:
        origin = site.url.rstrip("/")
        crawler = redis_crawler(CrawlConfig(roots=(site.url,), max_tasks=3), redis_server.url, "s")
        crawler.pause_all()
        crawling = asyncio.create_task(crawler.crawl())
        view = ClusterCrawl(aioredis.Redis(port=redis_server.port), "s")
        watching = asyncio.create_task(view.run())
        app = HostsApp(view)
        try:
            await until(lambda: view.ready.is_set() and view.snapshot().hosts)
            async with app.run_test(size=(160, 30)) as pilot:
                screen = app.screen
                assert isinstance(screen, HostsScreen)
                await until(lambda: screen.table.selected == origin)
                await pilot.press("b")  # the merged row: sent to every process
                await until(lambda: crawler.host_book.blocked(origin))
                await pilot.press("P")
                ((name, _rows),) = view.process_hosts()
                await until(lambda: screen.table.selected == f"{name} {origin}")
                assert screen.check_action("toggle_block", ()) is None  # merged rows only
                await pilot.press("P")
                await until(lambda: screen.table.selected == origin)
                await pilot.press("b")
                await until(lambda: not crawler.host_book.blocked(origin))
        finally:
            watching.cancel()
            crawler.stop()
            await asyncio.gather(crawling, return_exceptions=True)
            await view.client.aclose()
