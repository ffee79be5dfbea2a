"""One process of a cluster: a crawler whose frontier is in Redis, and that publishes
its state and takes controls there (observe.py)."""

from __future__ import annotations

import dataclasses

import redis.asyncio as aioredis

from ..config import CrawlConfig
from ..crawler import Crawler
from .observe import Publisher
from .problems import shown_url
from .redis_frontier import DEFAULT_LEASE, DEFAULT_PATIENCE, RedisFrontier


def redis_crawler(
    config: CrawlConfig,
    redis_url: str,
    crawl_id: str,
    lease: float = DEFAULT_LEASE,
    patience: float = DEFAULT_PATIENCE,
) -> Crawler:
    """A Crawler whose queue is crawl `crawl_id` in the Redis at `redis_url`
    (redis://HOST:PORT/DB): it starts that crawl, or joins it. ValueError if the URL
    is not a Redis URL."""
    client = aioredis.Redis.from_url(
        redis_url, socket_connect_timeout=2, socket_timeout=10, health_check_interval=5
    )
    crawler = Crawler(config)
    # --max-pages is the whole crawl's, counted in Redis (scripts.ADD): these books must
    # not hold back a URL for this process's own count of it as well.
    crawler.ledger.config = dataclasses.replace(config, max_pages=0)
    robots = crawler.robots

    def crawl_delay_of(origin: str) -> float | None:
        return None if robots.known(origin) is None else robots.crawl_delay(origin)

    frontier = RedisFrontier(
        client, crawl_id, crawler.ledger, lease=lease, per_host=config.per_host,
        delay=config.host_delay, crawl_delay_of=crawl_delay_of, patience=patience,
        shown_url=shown_url(redis_url), max_pages=config.max_pages,
    )  # fmt: skip
    # A Redis the crawl cannot go on with is a fault like a full disk: the crawl stops,
    # and its last lines say why.
    frontier.on_give_up.append(crawler.ledger.report_fault)
    publisher = Publisher(crawler, client, crawl_id)
    frontier.on_start.append(publisher.start)
    frontier.on_close.append(publisher.stop)
    frontier.on_ring.append(publisher.keep_past)
    crawler.q = frontier
    return crawler
