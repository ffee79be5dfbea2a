"""A cluster process ends when it is stopped, whatever its Redis client does with the
cancellation of a command under way."""

from __future__ import annotations

import asyncio
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis_support import RedisServer, redis_server

from crawlscope.engine.cluster.node import redis_crawler
from crawlscope.engine.cluster.observe import ClusterCrawl, Publisher
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import until

__all__ = ["redis_server"]  # a fixture, used by name


class CutShort:
    """A pipeline whose first execute is under way until it is cancelled, then says the
    connection went: what redis-py does when a cancellation lands in a command at the
    wrong moment (redis-py issue #2028). Later ones run as sent."""

    def __init__(self, pipe: Any, client: SwallowsOneCancel) -> None:
        self._pipe, self._client = pipe, client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)

    async def execute(self, *args: Any, **kwargs: Any) -> Any:
        if not self._client.cut:
            self._client.stalled.set()
            try:
                await asyncio.Event().wait()  # under way: never answered
            except asyncio.CancelledError:
                self._client.cut.append(1)
                raise RedisConnectionError("Connection closed by server.") from None
        return await self._pipe.execute(*args, **kwargs)


class SwallowsOneCancel:
    def __init__(self, client: Any) -> None:
        self._client = client
        self.cut: list[int] = []  # a 1 once a cancellation was turned into an error
        self.stalled = asyncio.Event()  # the first execute is under way

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def pipeline(self, *args: Any, **kwargs: Any) -> CutShort:
        return CutShort(self._client.pipeline(*args, **kwargs), self)


async def test_a_process_stops_though_its_client_swallows_the_cancellation(
    redis_server: RedisServer,
) -> None:
    async with DemoServer(DemoConfig(pages=400, latency=0.02)) as site:
        crawler = redis_crawler(CrawlConfig(roots=(site.url,), max_tasks=2), redis_server.url, "t")
        (stop_publishing,) = crawler.q.on_close  # type: ignore[attr-defined]
        publisher = stop_publishing.__self__
        assert isinstance(publisher, Publisher)
        client = SwallowsOneCancel(publisher.client)
        publisher.client = client  # type: ignore[assignment]
        crawling = asyncio.create_task(crawler.crawl())
        try:
            await until(lambda: len(crawler.ledger.done) >= 5 and client.stalled.is_set())
            crawler.stop()
            # The publisher's loop got a connection error for its cancellation: it must
            # end all the same, and with it the crawl.
            await asyncio.wait_for(asyncio.shield(crawling), 30)
        finally:
            crawling.cancel()
        assert client.cut == [1]
        assert crawler.phase is Phase.STOPPED
        assert len(crawler.ledger.done) < 400


async def test_a_view_of_the_cluster_stops_though_its_client_swallows_the_cancellation(
    redis_server: RedisServer,
) -> None:
    # The cluster view's reading, ended as the TUI ends it when its screen closes.
    import redis.asyncio as aioredis

    client = SwallowsOneCancel(aioredis.Redis(port=redis_server.port))
    view = ClusterCrawl(client, "t")  # type: ignore[arg-type]
    reading = asyncio.create_task(view.run())
    try:
        await until(client.stalled.is_set)
        view.stop()
        reading.cancel()
        await asyncio.wait_for(asyncio.wait({reading}), 30)
    finally:
        reading.cancel()
        await client.aclose()
    assert client.cut == [1]
