"""Link-dense pages (issue 10, item 4): taking links holds memory for the links kept, not
the tags seen, the parse stops at max_links, and a crawl parses few big pages at once.

Memory is measured with tracemalloc (what Python allocates, whichever thread), and work
by counting what the parser reports; nothing here is timed.
"""

from __future__ import annotations

import asyncio
import threading
import time
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from crawlscope.engine import crawler as crawler_module
from crawlscope.engine import links
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.links import FEED_BYTES, href_budget, parse_links
from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.sites.hostile import build_hostile_app
from crawlscope.engine.sites.hostile_dense import MANY, SAME, same_page
from helpers import Handler, assert_accounted, html

Serve = Callable[[dict[str, Handler]], Awaitable[str]]

MAX_LINKS = 5000


def distinct_links(count: int, prefix: str = "/p") -> bytes:
    return b"".join(b"<a href=%s%d>" % (prefix.encode(), n) for n in range(count))


class CountingStarts:
    """Counts the start tags lxml reports to parse_links' parser target."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        start = links._TagTarget.start

        def counted(target: links._TagTarget, tag: Any, attrib: Any) -> None:
            self.count += 1
            start(target, tag, attrib)

        monkeypatch.setattr(links._TagTarget, "start", counted)
        # A kept parser holds the target's start as it was when the parser was made.
        monkeypatch.setattr(links, "_idle", {})


def test_a_million_tags_of_one_link_hold_no_more_than_a_page_of_links() -> None:
    # One href, so no budget stops the parse: every tag is seen, and none may be kept.
    body = same_page(250_000)
    tracemalloc.start()
    try:
        encoding, found = parse_links(body, "http://h/hostile/dense/same", None, MAX_LINKS)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (encoding, found) == ("utf-8", ["http://h/hostile/dense/leaf/x"])
    # A tree of the tags (what parse_links built before) takes about 75 times the page.
    assert peak < len(body) / 10, f"{peak:,} bytes at the peak for a {len(body):,}-byte page"


def test_the_parse_stops_once_it_has_max_links(monkeypatch: pytest.MonkeyPatch) -> None:
    starts = CountingStarts(monkeypatch)
    body = distinct_links(1_000_000)
    _, found = parse_links(body, "http://h/", "utf-8", MAX_LINKS)
    assert found == [f"http://h/p{n}" for n in range(MAX_LINKS)]
    # What lxml had been fed when the last link came, at most: one slice more.
    tag_bytes = len(body) // 1_000_000
    assert starts.count <= MAX_LINKS + FEED_BYTES // tag_bytes + 2, starts.count


def test_a_page_of_repeats_and_junk_stops_after_so_many_hrefs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Distinct fragments of the page itself: each must be resolved, none is a new link.
    starts = CountingStarts(monkeypatch)
    body = distinct_links(1_000_000, prefix="#")
    _, found = parse_links(body, "http://h/", "utf-8", 100)
    assert found == ["http://h/"]
    assert starts.count <= href_budget(100) + FEED_BYTES // 8 < 100_000, starts.count


def test_junk_before_the_links_does_not_spend_a_small_budget() -> None:
    # Hrefs that give no link (not http) before the one that does, with max_links 1.
    page = distinct_links(5000, prefix="mailto:") + b"<a href=/real>"
    assert parse_links(page, "http://h/", "utf-8", 1)[1] == ["http://h/real"]


def test_no_max_links_takes_every_link() -> None:
    _, found = parse_links(distinct_links(20_000), "http://h/", "utf-8", 0)
    assert len(found) == 20_000


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        # A late <base> still applies to the links before it, as in a browser.
        (b'<a href="a"><base href="/d/"><a href="b">', ["http://h/d/a", "http://h/d/b"]),
        # The first <base href> counts; one without href is no base.
        (
            b'<base><base href="/d/"><base href="/e/"><a href="a">',
            ["http://h/d/a"],
        ),
        # Two spellings of one link count once, before a base and after it.
        (b'<a href="a"><a href="./a"><base href="/d/"><a href="a">', ["http://h/d/a"]),
    ],
)
def test_base_href_wherever_it_stands(page: bytes, expected: list[str]) -> None:
    assert parse_links(page, "http://h/x", None)[1] == expected


def test_a_base_after_max_links_changes_nothing() -> None:
    page = distinct_links(3) + b'<base href="/elsewhere/">'
    assert parse_links(page, "http://h/", None, 3)[1] == [f"http://h/p{n}" for n in range(3)]


# ---- over real sockets ---------------------------------------------------------------------


@asynccontextmanager
async def hostile_site() -> AsyncIterator[str]:
    runner = web.AppRunner(build_hostile_app(), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest.mark.slow
async def test_a_crawl_of_the_dense_page_holds_the_page_not_its_tags() -> None:
    async with hostile_site() as base:
        url = base + SAME
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            await response.read()  # the server builds its page now, before the count starts
        crawler = Crawler(CrawlConfig(roots=(url,), max_tasks=1, max_pages=1))
        tracemalloc.start()
        try:
            await crawler.crawl()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    size = crawler.ledger.done[url].size
    assert size > 10_000_000 and crawler.ledger.done[url].num_urls == 1
    # The body, and its pieces as they came in: not a tree of its million tags.
    assert peak < 3 * size, f"{peak:,} bytes at the peak for a {size:,}-byte page"


@pytest.mark.slow
async def test_the_dense_pages_give_their_links_over_real_sockets() -> None:
    async with hostile_site() as base:
        roots = (base + SAME, base + MANY)
        crawler = Crawler(CrawlConfig(roots=roots, max_tasks=2, max_pages=2, obey_robots=False))
        await crawler.crawl()
    same, many = (crawler.ledger.done[root] for root in roots)
    assert same.size > 10_000_000 and many.size > 9_000_000
    assert (same.num_urls, same.num_new_urls) == (1, 0)  # the leaf is left by max_pages
    assert crawler.ledger.unfetched == {base + "/hostile/dense/leaf/x"}
    assert many.num_urls == MAX_LINKS
    assert len(crawler.ledger.filtered) == MAX_LINKS  # out of scope: dense.invalid
    assert "http://dense.invalid/0" in crawler.ledger.filtered
    assert_accounted(crawler)


async def test_big_pages_are_parsed_a_few_at_a_time(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight big pages come at once; at most PARSE_THREADS (2) are parsed at the same time."""
    pages = 8
    lock = threading.Lock()
    inside = 0  # parses under way
    done = 0  # parses over
    most = 0
    crawler: Crawler | None = None

    bound = getattr(crawler_module, "PARSE_THREADS", 2)

    def may_go_on() -> bool:
        # Each parse holds on until every page has been parsed, is being parsed or waits
        # in the crawler's pool for a thread, so that as many run at once as ever can; or
        # until more than the bound run at once, which is the answer already.
        assert crawler is not None
        pool = getattr(crawler, "_parse_pool", None)
        queued = pool._work_queue.qsize() if pool is not None else 0
        return inside > bound or done + inside + queued == pages

    def parse_when_all_wait(*args: Any) -> tuple[str, list[str]]:
        nonlocal inside, done, most
        with lock:
            inside += 1
            most = max(most, inside)
        try:
            deadline = time.monotonic() + 60  # a bound on the wait for the condition
            while not may_go_on():
                if time.monotonic() > deadline:
                    raise AssertionError("the big pages never all reached the parser")
                time.sleep(0.005)
            return parse_links(*args)
        finally:
            with lock:
                inside -= 1
                done += 1

    monkeypatch.setattr(crawler_module, "parse_links", parse_when_all_wait)
    big = (
        "<p>"
        + "filler " * (crawler_module.PARSE_IN_THREAD_BYTES // 6)
        + '</p><a href="/leaf">x</a>'
    )
    routes = {f"/big/{i}": html(big) for i in range(pages)}
    root = await serve({"/": html(""), **routes})
    roots = tuple(f"{root}big/{i}" for i in range(pages))
    crawler = Crawler(CrawlConfig(roots=roots, max_tasks=pages, per_host=0, max_pages=pages))
    await asyncio.wait_for(crawler.crawl(), 60)
    assert all(crawler.ledger.done[url].num_urls == 1 for url in roots)
    assert 1 <= most <= bound
    assert all(w.state is WorkerState.STOPPED for w in crawler.workers.values())
