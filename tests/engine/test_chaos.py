"""Nothing is lost under chaos: hundreds of random live controls during one crawl."""

from __future__ import annotations

import asyncio
import random

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import assert_accounted, outcomes, path


async def chaos(crawler: Crawler, rng: random.Random, operations: int) -> int:
    """Pause, resume, cancel, add and remove workers at random; returns operations done."""
    done = 0
    while done < operations and crawler.phase.value in ("running", "paused"):
        live = [w.id for w in crawler.workers.values() if w.alive]
        op = rng.choice(["pause", "resume", "cancel", "add", "remove", "pause_all", "resume_all"])
        if op == "pause" and live:
            crawler.pause(rng.choice(live))
        elif op == "resume" and live:
            crawler.resume(rng.choice(live))
        elif op == "cancel" and len(live) > 1:
            crawler.cancel_worker(rng.choice(live))
        elif op == "remove" and len(live) > 1:
            crawler.remove_worker(rng.choice(live))
        elif op == "add" or not live:
            crawler.add_worker()
        elif op == "pause_all":
            crawler.pause_all()
        elif op == "resume_all":
            crawler.resume_all()
        done += 1
        assert_accounted(crawler)
        await asyncio.sleep(rng.uniform(0, 0.004))
    return done


@pytest.mark.slow
async def test_random_controls_lose_no_url() -> None:
    config = DemoConfig(pages=300, latency=0.02, jitter=0.02, seed=7)
    async with DemoServer(config) as server:
        calm = Crawler(CrawlConfig(roots=(server.url,), max_tasks=8, backoff=0.01))
        await calm.crawl()
    async with DemoServer(config) as server:
        stormy = Crawler(CrawlConfig(roots=(server.url,), max_tasks=8, backoff=0.01))
        crawl = asyncio.create_task(stormy.crawl())
        while not stormy.workers:
            await asyncio.sleep(0.001)
        count = await chaos(stormy, random.Random(20261121), operations=400)
        # Let the crawl finish: every worker free to run, and at least two of them.
        stormy.resume_all()
        for w in list(stormy.workers.values()):
            if w.alive:
                stormy.resume(w.id)
        for _ in range(2):
            stormy.add_worker()
        await asyncio.wait_for(crawl, 60)
    assert count == 400
    cancelled = [w for w in stormy.workers.values() if w.state.value == "cancelled"]
    assert cancelled, "the storm should have cancelled some workers mid-crawl"
    assert outcomes(stormy) == outcomes(calm)
    # Two servers, two ports: compare paths.
    assert {path(u) for u in stormy.ledger.seen_urls} == {path(u) for u in calm.ledger.seen_urls}
    assert_accounted(stormy)
