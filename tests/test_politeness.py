"""robots.txt, the per-host limit and delay, and the User-Agent, against real servers."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable

from aiohttp import web

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import Handler, assert_accounted, html, path, run_crawl

Serve = Callable[[dict[str, Handler]], Awaitable[str]]

SITE = '<a href="/a">a</a> <a href="/private/b">b</a> <a href="/c">c</a>'


def robots(status: int, text: str = "") -> Handler:
    async def handler(_request: web.Request) -> web.Response:
        return web.Response(status=status, text=text, content_type="text/plain")

    return handler


def site(robots_handler: Handler | None) -> dict[str, Handler]:
    routes = {"/": html(SITE), "/a": html("a"), "/private/b": html("b"), "/c": html("c")}
    if robots_handler is not None:
        routes["/robots.txt"] = robots_handler
    return routes


async def test_robots_rules_are_obeyed(serve: Serve) -> None:
    root = await serve(site(robots(200, "User-agent: *\nDisallow: /private/\n")))
    crawler = await run_crawl(root)
    assert set(crawler.done) == {root, root + "a", root + "c"}
    assert crawler.filtered == {root + "private/b": "disallowed by robots.txt"}
    assert_accounted(crawler)


async def test_ignore_robots_fetches_everything(serve: Serve) -> None:
    root = await serve(site(robots(200, "User-agent: *\nDisallow: /\n")))
    crawler = await run_crawl(root, obey_robots=False)
    assert len(crawler.done) == 4


async def test_robots_4xx_allows_everything(serve: Serve) -> None:
    root = await serve(site(None))  # no robots.txt at all: 404
    crawler = await run_crawl(root)
    assert len(crawler.done) == 4
    assert crawler.filtered == {}


async def test_robots_5xx_disallows_everything(serve: Serve) -> None:
    root = await serve(site(robots(503)))
    crawler = await run_crawl(root)
    assert crawler.done == {}
    assert crawler.filtered == {root: "robots.txt answered 503: all disallowed (RFC 9309)"}


async def test_robots_is_fetched_once_per_host(serve: Serve) -> None:
    hits = 0

    async def counted(_request: web.Request) -> web.Response:
        nonlocal hits
        hits += 1
        await asyncio.sleep(0.05)  # so that many workers ask while the fetch is in flight
        return web.Response(text="User-agent: *\nAllow: /\n")

    links = "".join(f'<a href="/p{i}">p</a>' for i in range(30))
    routes = {"/": html(links), "/robots.txt": counted}
    routes.update({f"/p{i}": html("p") for i in range(30)})
    root = await serve(routes)
    crawler = await run_crawl(root, max_tasks=10)
    assert hits == 1
    assert len(crawler.done) == 31


async def test_crawl_delay_spaces_requests(serve: Serve) -> None:
    starts: list[float] = []

    async def page(_request: web.Request) -> web.Response:
        starts.append(time.monotonic())
        return web.Response(text="<p>x</p>", content_type="text/html")

    links = "".join(f'<a href="/p{i}">p</a>' for i in range(4))
    routes: dict[str, Handler] = {
        "/": html(links),
        "/robots.txt": robots(200, "User-agent: *\nCrawl-delay: 0.2\n"),
    }
    routes.update({f"/p{i}": page for i in range(4)})
    root = await serve(routes)
    await run_crawl(root, max_tasks=4)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(gaps) == 3
    assert min(gaps) >= 0.15  # a lower bound only: the delay held


async def test_per_host_limit_holds(serve: Serve) -> None:
    in_flight = 0
    peak = 0

    async def page(_request: web.Request) -> web.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return web.Response(text="<p>x</p>", content_type="text/html")

    links = "".join(f'<a href="/p{i}">p</a>' for i in range(40))
    routes: dict[str, Handler] = {"/": html(links)}
    routes.update({f"/p{i}": page for i in range(40)})
    root = await serve(routes)
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=20, per_host=3))
    throttled_seen = False

    async def watch() -> None:
        nonlocal throttled_seen
        while True:
            states = {w.state.value for w in crawler.workers.values()}
            throttled_seen |= "throttled" in states
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    await crawler.crawl()
    watcher.cancel()
    assert len(crawler.done) == 41
    assert peak == 3
    assert throttled_seen


async def test_user_agent_is_sent(serve: Serve) -> None:
    agents: list[str] = []

    async def page(request: web.Request) -> web.Response:
        agents.append(request.headers.get("User-Agent", ""))
        return web.Response(text="<p>x</p>", content_type="text/html")

    root = await serve({"/": page})
    await run_crawl(root, user_agent="crawlscope/0.1 (+ops@example.com)")
    assert agents == ["crawlscope/0.1 (+ops@example.com)"]


async def test_oversize_bodies_are_cut_and_recorded(serve: Serve) -> None:
    async def big(_request: web.Request) -> web.Response:
        return web.Response(text="<p>" + "x" * 5000 + "</p>", content_type="text/html")

    root = await serve({"/": html('<a href="/big">big</a>'), "/big": big})
    crawler = await run_crawl(root, max_size=1000)
    record = crawler.done[root + "big"]
    assert record.status == 200
    assert record.exception is not None and record.exception.startswith("TooLarge")
    assert record.num_urls == 0


async def test_links_per_page_are_capped(serve: Serve) -> None:
    links = "".join(f'<a href="/p{i}">p</a>' for i in range(500))
    root = await serve({"/": html(links)})
    crawler = await run_crawl(root, max_links=50, max_pages=1)
    assert crawler.done[root].num_urls == 50
    assert len(crawler.seen_urls) == 51


async def peak_concurrency(per_host: int) -> tuple[int, Crawler]:
    async with DemoServer(DemoConfig(pages=80, latency=0.01, jitter=0.01)) as server:
        crawler = await run_crawl(server.url, max_tasks=30, per_host=per_host)
    return server.concurrency.peak[server.url.split("/")[2]], crawler


async def test_the_demo_site_sees_the_per_host_limit_hold() -> None:
    limited_peak, limited = await peak_concurrency(per_host=4)
    free_peak, free = await peak_concurrency(per_host=0)
    assert limited_peak == 4
    assert free_peak > 4  # the measurement can see more, when more happens
    assert {path(u) for u in limited.done} == {path(u) for u in free.done}
    assert limited.accounting().balanced
