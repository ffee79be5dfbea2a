"""The observed-crawl contract: a snapshot is plain data that crosses JSON unchanged, and
a screen with no controls offers no steering."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

from tui_support import until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import Phase, Snapshot
from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.screens.live import LiveScreen
from crawlscope.tui.startup import LiveCrawl


def through_json(snap: Snapshot) -> Snapshot:
    return Snapshot.from_plain(json.loads(json.dumps(snap.to_plain())))


async def test_a_snapshot_round_trips_through_json_at_every_moment_of_a_crawl() -> None:
    async with DemoServer(DemoConfig(pages=30, latency=0.01, jitter=0.02)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=4))
        crawler.pause_all()
        crawler.set_slowmo(0.001)
        crawl = asyncio.create_task(crawler.crawl())
        seen: set[WorkerState] = set()
        while not crawl.done():
            snap = crawler.snapshot()
            assert through_json(snap) == snap
            seen.update(view.state for view in snap.workers)
            if snap.paused_all and snap.workers and seen == {WorkerState.PAUSED}:
                crawler.resume_all()  # every worker was seen paused: now in motion
            await asyncio.sleep(0.002)
        await crawl
    final = crawler.snapshot()
    assert through_json(final) == final
    assert final.phase is Phase.FINISHED
    # Samples at rest and in motion, each with its "suspended at" compared too.
    assert {WorkerState.PAUSED, WorkerState.WAITING} <= seen
    assert len(seen) >= 4


async def test_suspended_at_is_read_from_the_task_when_sampled() -> None:
    async with DemoServer(DemoConfig(pages=5)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=2))
        crawler.pause_all()
        crawl = asyncio.create_task(crawler.crawl())
        while not all(w.state is WorkerState.PAUSED for w in crawler.workers.values()) or (
            len(crawler.workers) < 2
        ):
            await asyncio.sleep(0.005)
        views = crawler.snapshot().workers
        # A paused worker waits on its go Event, and the snapshot says so, as plain text.
        assert all(view.suspended_at.startswith("Event.wait ") for view in views), views
        # Asked for one row, a snapshot builds that row alone, and still names them all.
        only_first = crawler.snapshot(where_for={views[0].id})
        assert [v.id for v in only_first.workers] == [views[0].id]
        assert only_first.workers[0].suspended_at
        assert only_first.worker_ids == tuple(v.id for v in views)
        crawler.stop()
        await crawl


async def test_a_screen_without_controls_offers_no_steering() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=lambda roots: CrawlConfig(roots=tuple(roots))))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.panels
        assert isinstance(screen, LiveScreen)
        await until(pilot, lambda: screen.action_applies("add_worker"), "steering offered")
        # The same crawl, watched only: the keys that steer are greyed, not hidden.
        assert screen.source is not None
        screen.observe_live(screen.source, None, "watch only")
        for action in ("pause_all", "add_worker", "remove_worker", "cancel_worker", "slowmo"):
            assert screen.check_action(action, ()) is None, action
            assert not screen.action_applies(action)
        assert screen.action_applies("help")


async def test_a_snapshot_without_rows_has_every_count_of_the_full_one() -> None:
    async with DemoServer(DemoConfig(pages=30, latency=0.01, jitter=0.02)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=4))
        crawl = asyncio.create_task(crawler.crawl())
        moments = 0
        while not crawl.done():
            # Taken in one step of the loop: nothing moves between the two.
            full, glance = crawler.snapshot(()), crawler.snapshot((), rows=False)
            assert glance.workers == ()
            # Only the clocks moved.
            assert glance.elapsed >= full.elapsed
            assert replace(glance, workers=full.workers, t=full.t, elapsed=full.elapsed) == full
            moments += 1
            await asyncio.sleep(0.002)
        await crawl
    assert moments > 1
