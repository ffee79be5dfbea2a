"""Live controls on a running crawl: pause, resume, cancel, add, remove, stop."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import Phase, count_states
from crawlscope.engine.observe.workers import BUSY, WorkerState
from crawlscope.engine.report import write_report
from crawlscope.engine.sites.demo import DemoServer
from helpers import assert_accounted, expected, outcomes, until


def start(server: DemoServer, **options: object) -> tuple[Crawler, asyncio.Task[None]]:
    crawler = Crawler(CrawlConfig(roots=(server.url,), **options))  # type: ignore[arg-type]
    return crawler, asyncio.create_task(crawler.crawl())


def busy(crawler: Crawler) -> list[int]:
    return [w.id for w in crawler.workers.values() if w.state in BUSY]


@pytest.mark.slow
async def test_cancelling_a_worker_mid_fetch_loses_nothing(slow_demo: DemoServer) -> None:
    crawler, crawl = start(slow_demo, max_tasks=4)
    await until(lambda: len(crawler.ledger.done) >= 3 and bool(busy(crawler)))
    victim = busy(crawler)[0]
    held = crawler.workers[victim].url
    assert held is not None
    assert crawler.cancel_worker(victim)
    await until(lambda: not crawler.workers[victim].alive)
    assert crawler.workers[victim].state is WorkerState.CANCELLED
    assert crawler.workers[victim].url is None
    assert held not in crawler.ledger.done  # it was cut off, so it must be back in the queue ...
    assert_accounted(crawler)
    await crawl
    assert held in crawler.ledger.done  # ... and a surviving worker fetched it later
    assert outcomes(crawler) == expected(slow_demo.config)
    assert_accounted(crawler)


@pytest.mark.slow
async def test_pause_all_stops_new_fetches_and_resume_all_goes_on(slow_demo: DemoServer) -> None:
    crawler, crawl = start(slow_demo, max_tasks=5)
    await until(lambda: len(crawler.ledger.done) >= 5)
    crawler.pause_all()
    assert crawler.phase is Phase.PAUSED
    # Fetches in flight finish; then every worker sits paused.
    await until(lambda: all(w.state is WorkerState.PAUSED for w in crawler.workers.values()))
    requests = sum(slow_demo.requests.values())
    done = len(crawler.ledger.done)
    await asyncio.sleep(0.3)  # several latencies: any fetch would have landed by now
    assert sum(slow_demo.requests.values()) == requests
    assert len(crawler.ledger.done) == done
    assert_accounted(crawler)
    crawler.resume_all()
    assert crawler.phase is Phase.RUNNING
    await crawl
    assert outcomes(crawler) == expected(slow_demo.config)


@pytest.mark.slow
async def test_pausing_one_worker_leaves_the_others_running(slow_demo: DemoServer) -> None:
    crawler, crawl = start(slow_demo, max_tasks=3)
    assert not crawler.pause(0)  # no workers before the crawl starts
    await until(lambda: 0 in crawler.workers)
    assert crawler.pause(0)
    await until(lambda: crawler.workers[0].state is WorkerState.PAUSED)
    pages = crawler.workers[0].pages
    await until(lambda: len(crawler.ledger.done) >= 15)
    assert crawler.workers[0].pages == pages
    assert crawler.workers[0].state is WorkerState.PAUSED
    crawler.resume(0)
    await until(lambda: crawler.workers[0].state is not WorkerState.PAUSED)
    await crawl
    assert outcomes(crawler) == expected(slow_demo.config)


@pytest.mark.slow
async def test_add_and_remove_workers(slow_demo: DemoServer) -> None:
    crawler, crawl = start(slow_demo, max_tasks=2)
    await until(lambda: len(crawler.ledger.done) >= 2)
    added = [crawler.add_worker() for _ in range(4)]
    assert [w.id for w in added] == [2, 3, 4, 5]
    await until(lambda: all(w.pages > 0 for w in added))
    removed = crawler.remove_worker()
    assert removed is not None and removed.retiring
    await until(lambda: not removed.alive)
    assert removed.state is WorkerState.STOPPED
    assert sum(1 for w in crawler.workers.values() if w.alive) == 5
    assert crawler.remove_worker(worker_id=removed.id) is None  # already gone
    await crawl
    assert outcomes(crawler) == expected(slow_demo.config)
    assert_accounted(crawler)


async def test_stop_ends_the_crawl_and_still_gives_a_report(slow_demo: DemoServer) -> None:
    crawler, crawl = start(slow_demo, max_tasks=3)
    await until(lambda: len(crawler.ledger.done) >= 5)
    crawler.stop()
    await asyncio.wait_for(crawl, 10)
    assert crawler.phase is Phase.STOPPED
    assert not any(w.alive for w in crawler.workers.values())
    assert all(w.state is WorkerState.STOPPED for w in crawler.workers.values())
    accounting = crawler.accounting()
    assert accounting.queued > 0  # work was left, and it is counted, not lost
    assert accounting.held == 0
    assert_accounted(crawler)
    out = io.StringIO()
    write_report(crawler, out)
    assert f"Todo: {accounting.queued}" in out.getvalue()
    assert "(all accounted for)" in out.getvalue()


@pytest.mark.slow
async def test_accounting_holds_at_every_sampled_moment(slow_demo: DemoServer) -> None:
    crawler, crawl = start(slow_demo, max_tasks=6)
    samples = 0
    while not crawl.done():
        assert_accounted(crawler)
        assert crawler.unfinished == crawler.q.qsize() + crawler.accounting().held
        samples += 1
        await asyncio.sleep(0.003)
    await crawl
    assert samples > 20
    assert_accounted(crawler)


@pytest.mark.slow
async def test_snapshot_shows_each_worker(slow_demo: DemoServer) -> None:
    crawler, crawl = start(slow_demo, max_tasks=4)
    await until(lambda: bool(busy(crawler)))
    snap = crawler.snapshot()
    assert [v.id for v in snap.workers] == [0, 1, 2, 3]
    assert snap.live_workers == 4
    assert snap.phase is Phase.RUNNING
    holding = [v for v in snap.workers if v.url is not None]
    assert holding and all(v.state in BUSY | {WorkerState.PAUSED} for v in holding)
    assert all(0 <= v.since <= snap.elapsed for v in snap.workers)
    assert snap.accounting.balanced
    await crawl
    final = crawler.snapshot()
    assert final.phase is Phase.FINISHED
    assert final.unfinished == 0 and final.live_workers == 0


async def test_a_surprise_in_one_fetch_is_recorded_and_the_worker_goes_on(
    demo: DemoServer,
) -> None:
    crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=2))
    original = crawler.ledger.admit
    target = demo.url + "page/3"
    referrers: list[str | None] = []

    def admit(url: str, max_redirect: int, depth: int, referrer: str | None) -> bool:
        # A bug of our own, hit while handling the links of the page that first finds page/3.
        if url == target and not referrers:
            referrers.append(referrer)
            raise RuntimeError("boom")
        return original(url, max_redirect, depth, referrer)

    crawler.ledger.admit = admit  # type: ignore[method-assign]
    await crawler.crawl()
    (referrer,) = referrers
    assert referrer is not None
    assert crawler.ledger.failed[referrer].exception == "RuntimeError: boom"
    assert crawler.phase is Phase.FINISHED
    assert target in crawler.ledger.done  # found again through another page
    assert len(crawler.ledger.done) > 10
    assert_accounted(crawler)


async def test_cancelling_crawl_itself_ends_stopped_with_nothing_lost(
    slow_demo: DemoServer,
) -> None:
    crawler, crawl = start(slow_demo, max_tasks=3)
    await until(lambda: len(crawler.ledger.done) >= 3)
    crawl.cancel()
    with pytest.raises(asyncio.CancelledError):
        await crawl
    assert crawler.phase is Phase.STOPPED
    assert not any(w.alive for w in crawler.workers.values())
    assert crawler.accounting().queued > 0
    assert_accounted(crawler)


def fresh_views(crawler: Crawler) -> list[tuple[object, ...]]:
    """Every worker as a view built from its fields now: what a snapshot's kept views
    must equal, whatever changed and however it changed."""
    t0 = crawler.t0 or 0.0
    return [
        (w.id, w.state, w.url, w.since - t0, w.pages, w.paused, w.retiring, w.alive)
        for w in crawler.workers.values()
    ]


def kept_views(crawler: Crawler) -> list[tuple[object, ...]]:
    snap = crawler.snapshot(where_for=set(crawler.workers))
    views = [
        (v.id, v.state, v.url, v.since, v.pages, v.paused, v.retiring, v.alive)
        for v in snap.workers
    ]
    assert snap.live_workers == sum(1 for w in crawler.workers.values() if w.alive)
    assert snap.accounting.held == sum(1 for w in crawler.workers.values() if w.url)
    # The counts kept as workers change agree with a count of every worker now.
    live = [w for w in crawler.workers.values() if w.alive]
    assert snap.state_counts() == count_states(w.state for w in live)
    assert snap.retiring == sum(1 for w in live if w.retiring)
    return views


@pytest.mark.slow
async def test_a_snapshot_keeps_no_stale_view_through_every_control(
    slow_demo: DemoServer,
) -> None:
    # A snapshot builds views again only for the workers that changed; a change that
    # forgot to say so would show a stale row. Checked at every step of a crawl steered
    # through each control, and after every loop pass in between.
    crawler, crawl = start(slow_demo, max_tasks=4)
    checks = 0

    async def check_until(condition: Callable[[], bool]) -> None:
        nonlocal checks
        while not condition():
            assert kept_views(crawler) == fresh_views(crawler)
            checks += 1
            await asyncio.sleep(0)
        assert kept_views(crawler) == fresh_views(crawler)

    await check_until(lambda: len(crawler.ledger.done) >= 3 and len(busy(crawler)) >= 2)
    one, other = busy(crawler)[:2]
    assert crawler.pause(one)
    await check_until(lambda: crawler.workers[one].state is WorkerState.PAUSED)
    assert crawler.resume(one)
    assert crawler.cancel_worker(other)
    await check_until(lambda: not crawler.workers[other].alive)
    added = crawler.add_worker()
    assert crawler.remove_worker(added.id) is added
    await check_until(lambda: not added.alive)
    crawler.pause_all()
    await check_until(
        lambda: all(not w.alive or w.state is WorkerState.PAUSED for w in crawler.workers.values())
    )
    crawler.resume_all()
    await check_until(crawl.done)
    await crawl
    assert checks > 100
