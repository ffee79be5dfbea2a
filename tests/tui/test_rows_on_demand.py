"""At 10,000 workers a frame asks the engine for the rows the screen shows, not for a
view of every worker (issue 32, item 3): the counts come from counters the engine keeps
as workers change state."""

from __future__ import annotations

from tui_support import config, crawler_of, frames, until

from crawlscope.engine.observe.snapshot import count_states
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.workers_table import WorkersTable

WORKERS = 10_000
SLOW = DemoConfig(pages=400, latency=0.2, jitter=0.05)


def rows(table: WorkersTable) -> list[list[str]]:
    """The first two words of each row drawn (the header skipped): id and state."""
    lines = (table.render_line(y).text for y in range(1, table.size.height))
    return [line.split()[:2] for line in lines]


async def test_a_frame_at_10000_workers_builds_only_the_rows_on_screen() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(WORKERS), demo=SLOW))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        # Held, so that the crawl is still on while the frames are looked at.
        crawler.pause_all()
        table = app.query_one(WorkersTable)
        await until(pilot, lambda: table.row_count == WORKERS, "a row for every worker")
        screen = app.panels
        with_rows = 0
        for _ in range(5):
            await frames(pilot, 1)
            snap = screen.snap
            assert snap is not None
            # The views built for this frame: the rows on screen and the highlighted one
            # (none for a frame that leaves the table as it was).
            shown = table.wanted_ids()
            assert len(snap.workers) <= len(shown) < 60
            assert {v.id for v in snap.workers} <= shown
            with_rows += bool(snap.workers)
            # Every row is still there to scroll to, and the counts cover every worker.
            assert snap.worker_ids is not None and len(snap.worker_ids) == WORKERS
            assert sum(n for _, n in snap.state_counts()) == snap.live_workers == WORKERS
        assert with_rows
        # The counts kept as workers change agree with a count of every worker.
        live = [w for w in crawler.workers.values() if w.alive]
        assert screen.source is not None
        now = screen.source.snapshot(())
        assert now.state_counts() == count_states(w.state for w in live)
        # Scrolled to the end, the last row comes with its state: a view of it was asked
        # for (until then the row shows its number alone).
        await pilot.press("end")
        last = crawler.workers[WORKERS - 1]
        await until(
            pilot,
            lambda: [str(WORKERS - 1), last.state.value] in rows(table),
            "the last worker's row with its state",
        )
        crawler.stop()
