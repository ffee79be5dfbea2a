"""Turns at the loop for parsing (engine/timing/turns.py): past a slice of a pass, parses wait
for later passes, in the order they came, and nothing is lost on the way."""

from __future__ import annotations

import asyncio
import time

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.timing.turns import Turns
from helpers import assert_accounted, expected, outcomes


async def _take_all(turns: Turns, names: list[str], order: list[str]) -> list[asyncio.Task[None]]:
    async def taker(name: str) -> None:
        await turns.take()
        order.append(name)

    # Created together, their first steps run in one pass of the loop.
    tasks = [asyncio.create_task(taker(name)) for name in names]
    await asyncio.sleep(0)
    return tasks


async def test_one_parse_a_pass_never_waits() -> None:
    turns = Turns(slice_seconds=0.0)
    for _ in range(5):
        await turns.take()
        await asyncio.sleep(0)  # the next pass
    assert turns.waited == 0


async def test_parses_past_the_slice_wait_and_go_in_the_order_they_came() -> None:
    turns = Turns(slice_seconds=0.0)
    order: list[str] = []
    tasks = await _take_all(turns, ["a", "b", "c", "d"], order)
    # a had the pass to itself; the rest wait in line.
    assert order == ["a"]
    assert turns.waited == 3
    await asyncio.gather(*tasks)
    assert order == ["a", "b", "c", "d"]


async def test_a_waiter_that_is_cancelled_gives_up_its_place() -> None:
    turns = Turns(slice_seconds=0.0)
    order: list[str] = []
    tasks = await _take_all(turns, ["a", "b", "c"], order)
    tasks[1].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    assert order == ["a", "c"]
    assert tasks[1].cancelled()


async def test_the_line_moves_faster_when_passes_are_short() -> None:
    # A long slice: the passes below are far shorter on the busiest machine.
    turns = Turns(slice_seconds=0.5)
    order: list[str] = []

    async def long_parse() -> None:
        await turns.take()
        time.sleep(0.55)  # a page that holds the loop longer than a slice

    names = [str(i) for i in range(40)]
    first = asyncio.create_task(long_parse())
    tasks = await _take_all(turns, names, order)
    await first
    assert order == []  # every one came after the slice was spent
    passes = 0
    while len(order) < len(names):
        await asyncio.sleep(0)
        passes += 1
    await asyncio.gather(*tasks)
    assert order == names
    # Passes with nothing else in them are far shorter than a slice: each lets through
    # twice as many as the one before, not one at a time.
    assert passes < len(names) // 2


@pytest.mark.parametrize("workers", [1, 30])
async def test_a_crawl_that_waits_for_every_parse_finds_the_same_pages(
    demo: DemoServer, workers: int
) -> None:
    crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=workers))
    crawler.turns.slice = 0.0
    await crawler.crawl()
    assert crawler.phase is Phase.FINISHED
    assert outcomes(crawler) == expected(demo.config)
    assert_accounted(crawler)
    if workers > 1:
        assert crawler.turns.waited > 0  # the line was used


async def test_a_crawl_stopped_while_parses_wait_ends_cleanly() -> None:
    async with DemoServer(DemoConfig(pages=3000)) as site:
        crawler = Crawler(CrawlConfig(roots=(site.url,), max_tasks=40, per_host=0))
        crawler.turns.slice = 0.0
        crawling = asyncio.create_task(crawler.crawl())
        while crawler.turns.waited < 20 and not crawling.done():
            await asyncio.sleep(0.001)
        assert not crawling.done()
        crawler.stop()
        await asyncio.wait_for(crawling, 30)
        assert crawler.phase is Phase.STOPPED
        assert_accounted(crawler)
