"""Slow motion (engine/timing/slowmo.py): a lingering worker is held inside a real await, and
the lingers are the viewer's time, never the fetch's (issue 38, items 14 and 15)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest
from aiohttp import web
from host_sites import counted_site, host_row
from timing_support import Serve

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import SLOWED, Crawler
from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import until


@pytest.mark.slow
async def test_a_slowed_crawl_of_the_demo_site_shows_a_real_await_while_it_lingers() -> None:
    """The lecture's stage 3 setting (3 workers, 0.25 s): over the whole crawl, nearly every
    lingering row names the await it is held in, never "not suspended" or its own sleep."""
    async with DemoServer(DemoConfig(pages=30)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=3))
        crawler.set_slowmo(0.25)
        crawl = asyncio.ensure_future(crawler.crawl())
        lingering: list[tuple[WorkerState, str]] = []
        while not crawl.done():  # sampled as a screen does, until the crawl ends
            rows = crawler.snapshot().workers
            lingering += [(w.state, w.suspended_at) for w in rows if SLOWED in w.suspended_at]
            await asyncio.sleep(0.02)
        await crawl
    assert crawler.ledger.done, "the crawl fetched nothing"
    assert len(lingering) >= 30, f"only {len(lingering)} lingering samples"
    real = [at for _, at in lingering if ".py:" in at]
    by_state = Counter(state.value for state, at in lingering if ".py:" not in at)
    assert len(real) >= 0.9 * len(lingering), (len(real), len(lingering), by_state)
    # A worker is held inside its real await; a sleep is shown only as a backoff's.
    own_sleep = [(s, at) for s, at in lingering if "sleep " in at and s is not WorkerState.BACKOFF]
    assert not own_sleep, own_sleep[:5]


@pytest.mark.slow
async def test_lingering_is_left_out_of_fetch_times_host_latency_and_time_in_state(
    serve: Serve,
) -> None:
    """A server answering in 20 ms, crawled at 1 s a step: every figure of the fetch is
    the server's 20 ms or so, not a second or more."""
    hits: list[str] = []
    root = await serve(counted_site("p", 4, hits, latency=0.02))
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=2, obey_robots=False))
    crawler.set_slowmo(1.0)
    await crawler.crawl()
    assert len(hits) == 5
    lingered = sum(w.lingered for w in crawler.workers.values())
    assert lingered >= 2.0, f"the crawl lingered {lingered:.2f} s only: not slowed"
    # Records (recent fetches, the report): their start and end, without the lingers.
    took = [r.t_end - r.t_start for r in crawler.recent_fetches()]
    assert len(took) == 5 and max(took) < 0.5, took
    # The hosts screen's latency.
    row = host_row(crawler.snapshot(), root)
    assert row.p99 < 0.5, row.p99
    # Each worker's time in state (its detail screen's figures).
    for w in crawler.workers.values():
        for state, (seconds, times) in w.timing.state_totals().items():
            if state in ("connecting", "headers", "body") and times:
                assert seconds / times < 0.5, (w.id, state, seconds, times)


async def test_a_worker_cancelled_while_it_lingers_gives_its_url_back(serve: Serve) -> None:
    """Cancelled inside a held await, a worker ends as a cancel always did: its URL goes
    back on the queue, the held await is cancelled with it, and nothing is lost."""
    head, rest = asyncio.Event(), asyncio.Event()

    async def slow(request: web.Request) -> web.StreamResponse:
        await head.wait()
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        await response.write(b"<a href=/a>a</a>")
        await rest.wait()
        await response.write(b"<p>the rest</p>")
        return response

    async def page(_request: web.Request) -> web.Response:
        return web.Response(text="a", content_type="text/html")

    root = await serve({"/": slow, "/a": page})
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=1, obey_robots=False))
    crawl = asyncio.ensure_future(crawler.crawl())
    await until(
        lambda: bool(crawler.workers) and crawler.workers[0].state is WorkerState.HEADERS,
        "the worker awaiting the headers",
    )
    crawler.set_slowmo(60.0)  # the body's first await is held for a minute
    head.set()
    w = crawler.workers[0]
    await until(lambda: w.state is WorkerState.BODY, "the worker reading the body")
    rest.set()
    await until(lambda: w.lingering, "the worker held in its done await")
    (row,) = crawler.snapshot().workers
    assert row.suspended_at.startswith(SLOWED + " ") and ".py:" in row.suspended_at, row
    assert crawler.cancel_worker(0)
    await until(lambda: not w.alive, "the worker cancelled")
    assert not w.lingering and w.url is None and w.state is WorkerState.CANCELLED
    crawler.set_slowmo(0)
    crawler.add_worker()
    await asyncio.wait_for(crawl, 30)
    assert set(crawler.ledger.done) == {root, root + "a"}
