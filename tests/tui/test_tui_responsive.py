"""With 100 workers crawling and thousands of URLs queued, a key is acted on at once."""

from __future__ import annotations

from collections.abc import Callable

from textual import events
from tui_support import TIMEOUT, config, crawler_of, until

from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.waiting import wait_until
from crawlscope.tui.widgets.status_line import StatusLine
from crawlscope.tui.widgets.workers_table import WorkersTable

# Frame slots (1/15 s apart, on the frame timer's grid) allowed to pass between a key press
# and its effect on screen, whether a frame was drawn in each or skipped: a key handler
# that held the loop would make the frames it held back skipped slots, which a count of
# frames drawn does not see. The app shows the effect in the very handler of the key; the
# slack is for a loop already behind on a loaded machine (1 or 2 slots pass when idle; a
# handler that held the loop 2 s made 31). The app's frame grid counts; the test reads no
# clock.
MAX_SLOTS = 10


def slots(app: CrawlScopeApp) -> int:
    """Frame slots that have passed: drawn, or skipped because the loop was held."""
    return app.frames + app.panels.frames_skipped


async def slots_until_shown(
    app: CrawlScopeApp, key: str, shown: Callable[[], bool], what: str
) -> int:
    """Send `key` as a terminal would and count the frame slots until `shown()` holds.

    Pilot.press is not used: it waits for the whole process to go idle after each key,
    which a crawl with 100 workers never does, so it would count its own waiting.
    """
    start = slots(app)
    app.post_message(events.Key(key, key if len(key) == 1 else None))
    await wait_until(shown, what, timeout=TIMEOUT, poll=0.005)
    # Slots a held loop missed are counted by the frame timer when it runs next: it may
    # not have run since the effect was seen.
    seen = slots(app)
    await wait_until(lambda: slots(app) > seen, "the next frame slot", timeout=TIMEOUT)
    return slots(app) - start


def status(app: CrawlScopeApp) -> str:
    return app.query_one(StatusLine).render().plain


async def test_keys_act_within_a_few_frame_slots_while_100_workers_crawl() -> None:
    demo = DemoConfig(pages=20_000, latency=0.01, jitter=0.01)
    app = CrawlScopeApp(LiveCrawl(make_config=config(100), demo=demo))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(
            pilot,
            lambda: len(crawler.ledger.done) >= 300 and crawler.q.qsize() >= 1000,
            "a busy crawl with a long queue",
        )
        assert sum(1 for w in crawler.workers.values() if w.alive) == 100

        spent = await slots_until_shown(app, "p", lambda: "PAUSED" in status(app), "paused")
        assert crawler.paused_all
        assert spent <= MAX_SLOTS, f"pause took {spent} frame slots"

        spent = await slots_until_shown(app, "p", lambda: "RUNNING" in status(app), "resumed")
        assert crawler.phase is Phase.RUNNING
        assert spent <= MAX_SLOTS, f"resume took {spent} frame slots"

        table = app.query_one(WorkersTable)
        spent = await slots_until_shown(app, "a", lambda: table.row_count == 101, "a row")
        assert len(crawler.workers) == 101
        assert spent <= MAX_SLOTS, f"adding a worker took {spent} frame slots"
        # Only what is on screen is looked at each frame: the table is far shorter than
        # 101 rows, so most rows were never refreshed after being added.
        assert table.size.height < 40
