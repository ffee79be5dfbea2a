"""The workers table: its rows are exactly the workers it is shown, the cursor stays on
its worker, and what it keeps follows the screen, not the worker count; the frame timer
counts the frames a busy loop made it skip."""

from __future__ import annotations

import asyncio
import time

from textual.app import App, ComposeResult
from textual.geometry import Region
from tui_support import config, crawler_of, frames, until

from crawlscope.engine.observe.workers import WorkerState, WorkerView
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.workers_table import WorkersTable


class TableOnly(App[None]):
    def compose(self) -> ComposeResult:
        yield WorkersTable()


def views(ids: range | list[int], state: WorkerState = WorkerState.BODY) -> list[WorkerView]:
    return [WorkerView(i, state, f"http://h/{i}", 0.5, i, False, False, True) for i in ids]


def drawn_ids(table: WorkersTable) -> list[int]:
    """The worker ids on the table's rows, as drawn (the header line skipped)."""
    lines = table.render_lines(Region(0, 0, table.size.width, table.size.height))
    return [int(s.text.split()[0]) for s in lines[1:] if s.text.strip()]


async def test_rows_are_exactly_the_workers_shown() -> None:
    app = TableOnly()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(WorkersTable)
        table.show(views(range(10)))
        await pilot.pause()
        assert drawn_ids(table) == list(range(10))
        # A replay sought back to when three workers existed: the other rows go.
        table.show(views(range(3)))
        await pilot.pause()
        assert table.row_count == 3
        assert drawn_ids(table) == [0, 1, 2]
        # Out of order, with a gap (worker 1 retired and gone): id order, no gap row.
        table.show(views([4, 0, 2]))
        await pilot.pause()
        assert drawn_ids(table) == [0, 2, 4]


async def test_the_cursor_stays_on_its_worker_when_rows_come_and_go() -> None:
    app = TableOnly()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(WorkersTable)
        table.focus()
        table.show(views(range(6)))
        await pilot.press("down", "down", "down")
        assert table.selected_worker == 3
        table.show(views([1, 3, 5]))
        assert table.selected_worker == 3 and table.cursor_row == 1
        table.show(views([0, 1]))  # its worker gone: the cursor stays on a row
        assert table.selected_worker in (0, 1)
        table.show([])
        assert table.selected_worker is None and table.row_count == 0


async def test_the_keys_move_the_cursor_and_scroll_the_table() -> None:
    app = TableOnly()
    async with app.run_test(size=(100, 12)) as pilot:
        table = app.query_one(WorkersTable)
        table.focus()
        table.show(views(range(100)))
        await pilot.pause()
        await pilot.press("end")
        assert table.selected_worker == 99
        assert 99 in table.visible_ids() and 0 not in table.visible_ids()
        assert drawn_ids(table)[-1] == 99
        await pilot.press("home")
        assert table.selected_worker == 0 and 0 in table.visible_ids()
        await pilot.press("pagedown")
        assert table.selected_worker == len(table.visible_ids())
        await pilot.press("up")
        assert table.selected_worker == len(table.visible_ids()) - 1


async def test_what_the_table_keeps_follows_the_screen_not_the_workers() -> None:
    app = TableOnly()
    async with app.run_test(size=(100, 20)) as pilot:
        table = app.query_one(WorkersTable)
        table.show(views(range(10_000)))
        await pilot.pause()
        assert table.row_count == 10_000
        assert drawn_ids(table)[0] == 0
        # Rows are drawn from the snapshot's views; strips are kept for rows on screen only.
        assert len(table._strips) <= table.size.height
        # Ids wider than the column's three digits are shown whole.
        await pilot.press("end")
        await pilot.pause()
        assert drawn_ids(table)[-1] == 9999
        # Scrolled through: the strips of rows no longer on screen are let go.
        table.show(views(range(10_000)))
        assert len(table._strips) <= 2 * table.size.height


async def test_a_busy_loop_counts_the_frames_it_made_the_screen_skip() -> None:
    demo = DemoConfig(pages=200, latency=0.2)
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=demo), fps=15)
    async with app.run_test(size=(120, 40)) as pilot:
        await crawler_of(pilot)
        await frames(pilot, 2)
        panels = app.panels
        skipped = panels.frames_skipped
        # Hold the loop for six frames' time, as a crawl's burst of callbacks would.
        asyncio.get_running_loop().call_soon(time.sleep, 6 / 15)
        drawn = app.frames
        await until(pilot, lambda: app.frames >= drawn + 2, "frames again")
        # The frame slots that passed while the loop was held are counted.
        assert panels.frames_skipped - skipped >= 4
