"""The report's worker count is the crawl's as it ended (issue 28, 16): workers added
with a and removed with - while the TUI ran are counted, not the --max-tasks it began
with. A live TUI crawls the real demo site, driven with the pilot."""

from __future__ import annotations

import io

from tui_support import config, crawler_of, until

from crawlscope.cli.common import summarise
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl


def live(crawler: object) -> int:
    workers = getattr(crawler, "workers", {})
    return sum(1 for w in workers.values() if w.alive and not w.retiring)


async def test_the_report_counts_the_workers_the_crawl_ended_with() -> None:
    # Paused from the start, so the keys come before the end however slow the machine.
    source = LiveCrawl(make_config=config(3), demo=DemoConfig(pages=80), paused=True)
    app = CrawlScopeApp(source)
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: app.panels.action_applies("add_worker"), "a applies")
        await pilot.press("a", "a", "a")
        await until(pilot, lambda: live(crawler) == 6, "six workers")
        await pilot.press("minus")
        await until(pilot, lambda: live(crawler) == 5, "five workers")
        await pilot.press("p")
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl's end", 120)
    out = io.StringIO()
    summarise(crawler, None, out)
    totals = out.getvalue()
    assert "(max_tasks=5, started with 3)" in totals, totals
    # The rate per task is over the workers it ended with, as the count beside it says.
    finished = len(crawler.ledger.done) + len(crawler.ledger.failed)
    assert f"({finished / crawler.elapsed / 5:.3f} urls/sec/task)" in totals


async def test_a_crawl_whose_workers_never_changed_says_max_tasks_alone() -> None:
    source = LiveCrawl(make_config=config(3), demo=DemoConfig(pages=20))
    app = CrawlScopeApp(source)
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl's end", 120)
    out = io.StringIO()
    summarise(crawler, None, out)
    assert "(max_tasks=3) (" in out.getvalue()
