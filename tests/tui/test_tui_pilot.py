"""The keys, pressed through Textual's Pilot, act on the live engine."""

from __future__ import annotations

import asyncio
import gc
import io

from tui_support import config, crawler_of, frames, live_crawler, screen_text, until

from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.heap import YOUNG_COLLECTION
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.help_screen import HelpScreen
from crawlscope.tui.widgets.workers_table import WorkersTable
from helpers import assert_accounted, outcomes, run_crawl

# Slow enough that a key lands mid-crawl, small enough that a crawl to the end is quick.
SLOW = DemoConfig(pages=300, latency=0.05, jitter=0.02)


def live(app: CrawlScopeApp) -> list[int]:
    crawler = live_crawler(app)
    assert crawler is not None
    return [w.id for w in crawler.workers.values() if w.alive]


async def test_p_pauses_and_resumes_the_whole_crawl() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(5), demo=SLOW))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 3, "a few pages")
        await pilot.press("p")
        assert crawler.paused_all and crawler.phase is Phase.PAUSED
        await until(
            pilot,
            lambda: all(w.state is WorkerState.PAUSED for w in crawler.workers.values() if w.alive),
            "every worker paused (after the fetch in hand)",
        )
        done = len(crawler.ledger.done)
        await frames(pilot, 5)
        assert len(crawler.ledger.done) == done
        assert "PAUSED" in screen_text(app)
        assert app.screen.active_bindings["p"].binding.action == "resume_all"

        await pilot.press("p")
        assert not crawler.paused_all and crawler.phase is Phase.RUNNING
        await until(pilot, lambda: len(crawler.ledger.done) > done, "crawling again")
        await frames(pilot, 1)
        assert "RUNNING" in screen_text(app)


async def test_space_pauses_and_resumes_the_selected_worker() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(4), demo=SLOW))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: app.query_one(WorkersTable).row_count == 4, "four rows")
        await pilot.press("down")
        assert app.query_one(WorkersTable).selected_worker == 1
        await pilot.press("space")
        worker = crawler.workers[1]
        assert worker.paused
        await until(pilot, lambda: worker.state is WorkerState.PAUSED, "worker 1 paused")
        pages, done = worker.pages, len(crawler.ledger.done)
        await until(pilot, lambda: len(crawler.ledger.done) >= done + 5, "the others crawl on")
        assert worker.pages == pages and worker.state is WorkerState.PAUSED
        assert app.screen.active_bindings["space"].binding.action == "resume_worker"

        await pilot.press("space")
        assert not worker.paused
        await until(pilot, lambda: worker.state is not WorkerState.PAUSED, "worker 1 resumed")


async def test_cancel_puts_the_url_back_and_loses_nothing() -> None:
    demo = DemoConfig(pages=40, latency=0.15, jitter=0.05)
    app = CrawlScopeApp(LiveCrawl(make_config=config(4), demo=demo))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: app.query_one(WorkersTable).row_count == 4, "four rows")
        await pilot.press("down", "down")
        worker = crawler.workers[2]
        await until(pilot, lambda: worker.url is not None, "worker 2 holds a URL")
        held = worker.url
        await pilot.press("c")
        await until(pilot, lambda: worker.state is WorkerState.CANCELLED, "worker 2 cancelled")
        assert not worker.alive and worker.url is None
        assert crawler.accounting().balanced
        queued = {url for url, _ in list(crawler.q._queue)}  # type: ignore[attr-defined]
        elsewhere = {w.url for w in crawler.workers.values()} | set(crawler.ledger.done)
        assert held in queued | elsewhere, "the cancelled worker's URL vanished"
        # The cancelled worker stays, greyed: its row says what happened to it. (Drawn by
        # the next frame that redraws the table, which need not be the next frame.)
        await until(
            pilot,
            lambda: (
                "cancelled" in screen_text(app)
                and app.panels.check_action("cancel_worker", ()) is None
            ),
            "the cancelled worker's row",
        )

        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
        assert_accounted(crawler)
        assert held in crawler.ledger.done

    async with DemoServer(demo) as server:
        undisturbed = await run_crawl(server.url, max_tasks=4)
    assert outcomes(crawler) == outcomes(undisturbed)


async def test_a_and_plus_add_workers_and_minus_removes_one() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(3), demo=SLOW))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(live(app)) == 3, "three workers")
        await pilot.press("a")
        assert len(live(app)) == 4
        await pilot.press("plus")
        assert len(live(app)) == 5
        await frames(pilot, 2)
        assert app.query_one(WorkersTable).row_count == 5

        await pilot.press("minus")
        retiring = [w for w in crawler.workers.values() if w.retiring]
        assert len(retiring) == 1
        await until(pilot, lambda: len(live(app)) == 4, "one worker left")
        assert retiring[0].state is WorkerState.STOPPED
        assert crawler.accounting().balanced


async def test_s_steps_slow_motion_and_shift_s_steps_back() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=SLOW))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await pilot.press("s")
        assert crawler.slowmo == 0.25
        await pilot.press("s")
        assert crawler.slowmo == 0.5
        await frames(pilot, 1)
        assert "slow motion 0.5s" in screen_text(app)
        await pilot.press("S", "S")
        assert crawler.slowmo == 0.0


async def test_q_stops_the_crawl_and_the_report_follows() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(4), demo=SLOW))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 3, "a few pages")
        await pilot.press("q")
        for _ in range(600):  # the app exits on its own once the crawl has stopped
            if not app.is_running:
                break
            await asyncio.sleep(0.05)
    assert app.return_code == 0
    assert crawler.phase is Phase.STOPPED
    assert not any(w.alive for w in crawler.workers.values())
    assert_accounted(crawler)
    out = io.StringIO()
    assert app.write_report(out)
    report = out.getvalue()
    assert report.startswith("*** Report ***")
    assert "(all accounted for)" in report


async def test_the_app_settles_the_collector_while_it_runs_and_gives_it_back() -> None:
    """As a headless crawl does (heap.py): the screen built, its heap is frozen and young
    collections spaced out; quitting puts the collector back as it was."""
    before, thresholds = gc.get_freeze_count(), gc.get_threshold()
    app = CrawlScopeApp(LiveCrawl(make_config=config(3), demo=SLOW))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 3, "a few pages")
        assert gc.get_freeze_count() > before
        assert gc.get_threshold() == (YOUNG_COLLECTION, *thresholds[1:])
    assert gc.get_freeze_count() == before
    assert gc.get_threshold() == thresholds


async def test_controls_disappear_when_the_crawl_is_over() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(3), demo=DemoConfig(pages=15)))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
        await frames(pilot, 2)
        keys = set(app.screen.active_bindings)
        assert {"q", "question_mark"} <= keys
        assert not keys & {"p", "space", "c", "a", "minus", "s"}
        workers = len(crawler.workers)
        await pilot.press("a", "p", "c")
        assert len(crawler.workers) == workers and not crawler.paused_all
        # The final state stays on screen until q.
        await frames(pilot, 3)
        assert app.is_running and "FINISHED" in screen_text(app)


async def test_question_mark_explains_the_states() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=SLOW, paused=True))
    async with app.run_test(size=(120, 40)) as pilot:
        await crawler_of(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.pause()
        text = screen_text(app)
        for state in WorkerState:
            assert f"{state.value}:" in text, f"the help does not explain {state.value}"
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_the_command_palette_offers_the_same_actions() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=SLOW, paused=True))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await pilot.press("ctrl+p")
        await pilot.press(*"add a worker")
        await until(pilot, lambda: "Add a worker" in screen_text(app), "the command is offered")
        await pilot.press("enter")
        await until(pilot, lambda: len(crawler.workers) == 3, "a worker added")
