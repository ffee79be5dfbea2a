"""The cluster view's timing: each process's warnings, holds and loop lag published
through a real redis-server and read back as one view, worker ids renumbered."""

from __future__ import annotations

import redis.asyncio as aioredis
from redis_support import RedisServer, redis_server

from crawlscope.engine.cluster.observe import ID_STRIDE, ClusterCrawl, Publisher
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.lints.lint import Lint, LintKind

__all__ = ["redis_server"]  # a fixture, used by name


async def test_the_cluster_view_merges_every_processs_warnings(redis_server: RedisServer) -> None:
    client = aioredis.from_url(redis_server.url)
    try:
        for number in range(2):
            crawler = Crawler(CrawlConfig(roots=("http://127.0.0.1:9/",), max_tasks=1))
            for i in range(3):
                crawler.health.tell(
                    Lint(LintKind.STUCK, float(i), f"process {number} lint {i}", worker=i)
                )
            publisher = Publisher(crawler, client, "t")
            publisher.name = f"host:{number}"
            await publisher.publish()
        cluster = ClusterCrawl(client, "t")
        await cluster.refresh()
        snap = cluster.snapshot()
    finally:
        await client.aclose()
    assert snap.warning_count == 6
    texts = {lint.text: lint.worker for lint in snap.warnings}
    numbers = {name: cluster._numbers[name] for name in ("host:0", "host:1")}
    for name, number in numbers.items():
        for i in range(3):
            assert texts[f"process {name[-1]} lint {i}"] == number * ID_STRIDE + i
    assert [lint.t for lint in snap.warnings] == sorted(lint.t for lint in snap.warnings)
