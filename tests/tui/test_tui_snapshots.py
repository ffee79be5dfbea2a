"""Snapshots of the whole screen on deterministic demo crawls (pytest-textual-snapshot).

Deterministic because one worker crawls in queue order, the app is told to leave out
wall-clock figures and the demo site's port (`reproducible=True`), and the crawl is
pinned in a known state before the screenshot: paused after a set number of fetches,
or finished. Regenerate with `pytest tests/tui/test_tui_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot
from tui_support import config, crawler_of, frames, until

from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.records import FetchRecord
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl

DEMO = DemoConfig(pages=24, links_per_page=4, seed=3)
PAUSE_AFTER = 14  # records: the root, the chapter's redirect cases, some pages
# Frames to let the screen settle: the redirect tree catches up at most every 0.5 s,
# and 10 frames at 15 a second cannot take less than that.
SETTLE = 10


def one_worker_demo() -> CrawlScopeApp:
    return CrawlScopeApp(
        LiveCrawl(make_config=config(1), demo=DEMO, paused=True), reproducible=True
    )


async def paused_mid_crawl(pilot: Pilot[int]) -> None:
    """Resume the paused start, then pause again right after the PAUSE_AFTER-th record."""
    crawler = await crawler_of(pilot)

    def pause_at_count(_record: FetchRecord) -> None:
        if len(crawler.ledger.done) + len(crawler.ledger.failed) == PAUSE_AFTER:
            crawler.pause_all()

    crawler.ledger.record_listeners.append(pause_at_count)
    await pilot.press("p")
    worker = crawler.workers[0]
    await until(
        pilot,
        lambda: crawler.paused_all and worker.state is WorkerState.PAUSED,
        "paused after the set number of fetches",
    )
    await frames(pilot, SETTLE)


async def finished(pilot: Pilot[int]) -> None:
    crawler = await crawler_of(pilot)
    await pilot.press("p")
    await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
    await frames(pilot, SETTLE)


Compare = Callable[..., bool]


def test_overview_paused_mid_crawl(snap_compare: Compare) -> None:
    assert snap_compare(one_worker_demo(), terminal_size=(120, 40), run_before=paused_mid_crawl)


def test_overview_paused_mid_crawl_at_80x24(snap_compare: Compare) -> None:
    assert snap_compare(one_worker_demo(), terminal_size=(80, 24), run_before=paused_mid_crawl)


def test_overview_finished(snap_compare: Compare) -> None:
    assert snap_compare(one_worker_demo(), terminal_size=(120, 40), run_before=finished)


def test_overview_before_the_first_fetch(snap_compare: Compare) -> None:
    async def started_paused(pilot: Pilot[int]) -> None:
        crawler = await crawler_of(pilot)
        await until(
            pilot, lambda: crawler.workers[0].state is WorkerState.PAUSED, "worker 0 paused"
        )
        await frames(pilot, SETTLE)

    assert snap_compare(one_worker_demo(), terminal_size=(120, 40), run_before=started_paused)
