"""The host warnings (politeness-bound, retry storm), raised from real crawls' snapshots."""

from __future__ import annotations

import asyncio
import io
import socket
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.lints.hosts import RETRY_STORM_STREAK, host_lints, idle_workers
from crawlscope.engine.lints.lint import Lint, LintKind
from crawlscope.engine.observe.snapshot import Snapshot
from crawlscope.engine.report import write_report
from helpers import Handler, html, until

Serve = Callable[[dict[str, Handler]], Awaitable[str]]


def lints_of(snap: Snapshot) -> list[Lint]:
    return host_lints(snap.hosts, idle_workers(snap), snap.live_workers, snap.elapsed)


def assert_kind_said_once(lint: Lint) -> None:
    """Every place a warning is shown puts its kind before its text (`w`, the report, a
    recording): the text must not say the kind again ("politeness-bound politeness-bound")."""
    words = lint.kind.value.replace("-", " ")
    start = lint.text.lower().replace("-", " ")
    assert not start.startswith(words), f"{lint.kind.value} said twice: {lint.text!r}"


def robots(text: str) -> Handler:
    async def handler(_request: web.Request) -> web.Response:
        return web.Response(text=text, content_type="text/plain")

    return handler


def small_site(robots_text: str) -> dict[str, Handler]:
    links = " ".join(f'<a href="/p{i}">{i}</a>' for i in range(6))
    routes = {"/": html(links), "/robots.txt": robots(robots_text)}
    routes.update({f"/p{i}": html("") for i in range(6)})
    return routes


async def watch(crawler: Crawler, seen: list[Lint], until_found: LintKind | None) -> None:
    """Take a snapshot every few ms while the crawl runs, keeping every lint raised."""
    crawling = asyncio.ensure_future(crawler.crawl())
    try:
        while not crawling.done():
            seen.extend(lints_of(crawler.snapshot()))
            if until_found is not None and any(lint.kind is until_found for lint in seen):
                break
            await asyncio.sleep(0.01)
    finally:
        crawler.stop()
        await asyncio.gather(crawling, return_exceptions=True)


async def test_a_crawl_bound_by_a_crawl_delay_is_said_politeness_bound(serve: Serve) -> None:
    root = await serve(small_site("User-agent: *\nCrawl-delay: 1\n"))
    origin = root.rstrip("/")
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=4))
    seen: list[Lint] = []
    await asyncio.wait_for(watch(crawler, seen, LintKind.POLITENESS), 60)
    found = [lint for lint in seen if lint.kind is LintKind.POLITENESS]
    assert found, "no politeness warning"
    assert found[0].host == origin
    assert origin in found[0].text and "Crawl-delay 1 s" in found[0].text


async def test_a_small_quick_site_raises_no_host_warning(serve: Serve) -> None:
    root = await serve(small_site("User-agent: *\nDisallow:\n"))
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=4))
    seen: list[Lint] = []
    await asyncio.wait_for(watch(crawler, seen, None), 60)
    assert len(crawler.ledger.done) == 7
    assert seen == []


async def test_a_host_that_never_answers_raises_a_retry_storm() -> None:
    # A port nothing listens on: every try is refused at once.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    dead = f"http://127.0.0.1:{port}"
    config = CrawlConfig(
        roots=(dead + "/",), max_tasks=1, max_tries=RETRY_STORM_STREAK + 1, backoff=0.0,
        obey_robots=False,
    )  # fmt: skip
    crawler = Crawler(config)
    await asyncio.wait_for(crawler.crawl(), 60)
    (storm,) = lints_of(crawler.snapshot())
    assert storm.kind is LintKind.RETRY_STORM and storm.host == dead
    assert f"{RETRY_STORM_STREAK + 1} times in a row" in storm.text
    assert_kind_said_once(storm)


async def test_a_storm_ends_with_an_answer(serve: Serve) -> None:
    root = await serve(small_site(""))
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=2))
    await crawler.crawl()
    origin = root.rstrip("/")
    for _ in range(RETRY_STORM_STREAK):
        crawler.host_book.no_answer(origin)
    assert [lint.kind for lint in lints_of(crawler.snapshot())] == [LintKind.RETRY_STORM]
    crawler.host_book.answered(origin, 0.01)
    assert lints_of(crawler.snapshot()) == []


@pytest.mark.slow
async def test_the_crawls_own_warnings_name_the_host_that_binds_it(serve: Serve) -> None:
    # Raised by the crawl itself (its loop health's checks), so it is in the snapshot,
    # the report, a recording and a monitor's frames, and told once while it holds.
    root = await serve(small_site("User-agent: *\nCrawl-delay: 1\n"))
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=4))
    await asyncio.wait_for(crawler.crawl(), 60)
    snap = crawler.snapshot()
    found = [lint for lint in snap.warnings if lint.kind is LintKind.POLITENESS]
    assert len(found) == 1, snap.warnings
    assert found[0].host == root.rstrip("/") and "Crawl-delay 1 s" in found[0].text
    report = io.StringIO()
    write_report(crawler, report)
    assert_kind_said_once(found[0])
    # (In the warnings: "What limited it", after them, may say politeness-bound too.)
    warned = report.getvalue().split("Warnings (")[1].split("What limited it:")[0]
    (line,) = [line for line in warned.splitlines() if "politeness-bound" in line]
    assert line.count("politeness-bound") == 1, line


async def test_one_worker_of_ten_at_a_gate_is_not_politeness_bound(serve: Serve) -> None:
    # Eight workers fetch from one host, one waits out another host's Crawl-delay, one is
    # idle: the crawl is bound by its fetches, not by politeness (that takes half the
    # workers doing nothing but wait).
    release = asyncio.Event()

    async def held(_request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(text="a", content_type="text/html")

    fetching = {"/": html(" ".join(f'<a href="/a{i}">a</a>' for i in range(8)))}
    fetching.update({f"/a{i}": held for i in range(8)})
    polite = {"/": html('<a href="/b">b</a>'), "/b": html(""),
              "/robots.txt": robots("User-agent: *\nCrawl-delay: 5\n")}  # fmt: skip
    a, b = await serve(fetching), await serve(polite)
    crawler = Crawler(CrawlConfig(roots=(a, b), max_tasks=10))
    crawling = asyncio.ensure_future(crawler.crawl())
    try:
        await until(
            lambda: (
                (snap := crawler.snapshot()).state_counts() is not None
                and sum(h.in_flight for h in snap.hosts) == 8
                and sum(h.waiting for h in snap.hosts) == 1
            ),
            "eight workers fetching and one at the Crawl-delay's gate",
        )
        snap = crawler.snapshot()
        assert (snap.live_workers, idle_workers(snap)) == (10, 1)
        assert lints_of(snap) == []
    finally:
        crawler.stop()
        release.set()
        await asyncio.gather(crawling, return_exceptions=True)
