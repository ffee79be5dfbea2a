"""A cluster's process that waits on its Redis says so (issue 42's verdict): a real
redis-server reached through a proxy that holds each chunk 40 ms each way, a site that
answers at once and never runs short of links."""

from __future__ import annotations

import asyncio
import re

import verdict_sites as sites
from redis_support import RedisServer, far_redis, redis_server
from timing_support import Serve

from crawlscope.engine.cluster.node import redis_crawler
from crawlscope.engine.config import CrawlConfig
from crawlscope.tui.waiting import wait_until

__all__ = ["redis_server"]  # a fixture, used by name

SETTLE = 10.0  # seconds of the crawl's clock by which the verdict must be said
ONE_WAY = 0.04  # seconds the proxy holds each chunk


async def test_a_process_waiting_on_a_far_redis_is_redis_bound(
    redis_server: RedisServer, serve: Serve
) -> None:
    root = await serve(sites.tree(0.0))
    async with far_redis(redis_server.port, ONE_WAY) as port:
        config = CrawlConfig(roots=(root,), max_tasks=20, per_host=100, max_pages=1_000_000)
        crawler = redis_crawler(config, f"redis://127.0.0.1:{port}/0", "far")
        task = asyncio.create_task(crawler.crawl())
        history = crawler.health.diagnosis.history
        try:
            await wait_until(lambda: any(v.cause == "store" for v in history), "Redis-bound",
                             timeout=60)  # fmt: skip
            said_at = crawler.elapsed
        finally:
            crawler.stop()
            await asyncio.wait_for(task, 60)
    said = next(v for v in history if v.cause == "store")
    assert said_at <= SETTLE, (said_at, history)
    for words in ("Redis-bound", "idle on q.get()", "URLs queued", "a nearer Redis"):
        assert words in said.line, said.line
    # The round trip it names is the one the proxy imposed: two holds at least.
    trip = re.search(r"a round trip takes (\d+) ms", said.line)
    assert trip is not None and int(trip.group(1)) >= 2000 * ONE_WAY, said.line
    # No other cause was said before it: the crawl was never anything else.
    assert history[0].cause == "store", history
