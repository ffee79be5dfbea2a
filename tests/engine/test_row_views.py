"""A snapshot builds a worker's view again only when the worker stepped or changed: a
worker suspended at the same await is shown from its last view, and one that moved on is
walked again (real crawl of a real demo site in its own process)."""

from __future__ import annotations

import asyncio

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.workers import WorkerState
from helpers import demo_site_process


@pytest.mark.slow
async def test_a_view_is_built_again_only_when_its_worker_moved() -> None:
    with demo_site_process("--pages", "40", "--latency", "0.4") as url:
        crawler = Crawler(CrawlConfig(roots=(url,), max_tasks=3, per_host=0))
        crawl = asyncio.create_task(crawler.crawl())
        try:
            # A worker waiting for its answer: suspended in the body or the headers read.
            while True:
                waiting = [
                    w for w in crawler.workers.values()
                    if w.state is WorkerState.HEADERS and sum(w.timing.step.counts)
                ]  # fmt: skip
                if waiting:
                    break
                await asyncio.sleep(0.01)
            worker = waiting[0]
            steps = sum(worker.timing.step.counts)
            first = crawler.snapshot({worker.id}).workers[0]
            again = crawler.snapshot({worker.id}).workers[0]  # no await: it cannot step
            assert again is first
            while sum(worker.timing.step.counts) == steps:
                await asyncio.sleep(0.01)
            moved = crawler.snapshot({worker.id}).workers[0]
            assert moved is not first
            # What it shows is what a fresh walk of its chain says now.
            fresh = crawler._view_of(worker, str(_where_now(worker)))
            assert moved.suspended_at == fresh.suspended_at and moved.state == fresh.state
        finally:
            crawler.stop()
            await crawl


def _where_now(worker: object) -> object:
    from crawlscope.engine.observe.introspect import suspension_point

    return suspension_point(worker.task)  # type: ignore[attr-defined]
