"""The chapter's three stages as engines a command line or a UI can pick by name.

    callbacks   stage 1: a selector loop and a Fetcher's chain of callbacks
    generators  stage 2: generator coroutines driven by a Future and a Task
    asyncio     stage 3: the main engine (async/await, aiohttp)

All three keep their books in the same Ledger, so on the same site they find the same
URLs and write the same report and JSON Lines records. The lecture engines speak plain
http only and ignore the per-host limits; see their modules.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

from ..config import CrawlConfig
from ..crawler import Crawler
from ..ledger import RecordListener
from ..report import Crawl
from .names import ENGINES
from .stage_callbacks import CallbackCrawler, StepHook
from .stage_generators import GeneratorCrawler

__all__ = ["ENGINES", "create", "run_blocking"]


def create(
    name: str, config: CrawlConfig, on_step: StepHook | None = None
) -> CallbackCrawler | GeneratorCrawler | Crawler:
    """The named engine's crawler, not started. `on_step` is told about each callback
    the loop runs (the lecture engines only; asyncio's loop is not ours to step)."""
    if name == "callbacks":
        return CallbackCrawler(config, on_step)
    if name == "generators":
        return GeneratorCrawler(config, on_step)
    if name == "asyncio":
        if on_step is not None:
            raise ValueError("step mode needs a lecture engine (callbacks or generators)")
        return Crawler(config)
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")


def run_blocking(name: str, config: CrawlConfig, listeners: Iterable[RecordListener] = ()) -> Crawl:
    """Run the named engine to the end and return the finished crawl, ready for
    `write_report`. Each listener gets every record as it is kept (JsonlWriter, say)."""
    crawler = create(name, config)
    crawler.ledger.record_listeners.extend(listeners)
    if isinstance(crawler, Crawler):
        asyncio.run(crawler.crawl())
    else:
        crawler.run()
    return crawler
