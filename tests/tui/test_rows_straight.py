"""A rows frame writes the workers table's changed lines straight to the terminal, as the
status line's are written, and leaves them to the compositor whenever anything could make
that wrong: something over the table, another screen on top, a scroll or a layout to come.
What it writes is exactly what the compositor draws there."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
from rich.cells import cell_len
from rich.console import RenderableType
from test_frame_budget import LONG_SITE, cells, composited, displayed
from textual._compositor import CompositorUpdate, LayoutUpdate
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip
from tui_support import config, crawler_of, until

from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.screens.direct_paint import region_alone
from crawlscope.tui.screens.panels import PanelsScreen
from crawlscope.tui.startup import LiveCrawl

# At 80x24 the table shows 8 of these rows; at 120x40, all of them.
WORKERS = 12


@contextlib.asynccontextmanager
async def rows_by_hand(
    size: tuple[int, int], notifications: bool = False
) -> AsyncIterator[tuple[Pilot[None], PanelsScreen]]:
    """A crawl of WORKERS on screen, every row shown, whose frame timer is stopped once
    the table has its rows: the frames that follow are the test's own."""
    app = CrawlScopeApp(LiveCrawl(make_config=config(WORKERS), demo=LONG_SITE))
    async with app.run_test(size=size, notifications=notifications) as pilot:
        await crawler_of(pilot)
        panels = app.panels
        await until(pilot, lambda: panels._table.row_count == WORKERS, "every worker's row")
        await until(pilot, lambda: not panels._layout_required, "the table's layout")
        await pilot.pause()
        assert panels._frame_handle is not None
        panels._frame_handle.cancel()
        await pilot.pause()  # whatever the last frame left to Textual, drawn
        yield pilot, panels


def runs_in(update: RenderableType) -> list[LayoutUpdate]:
    """The runs of lines a direct write holds (one run, or several in one update)."""
    if isinstance(update, LayoutUpdate):
        return [update]
    return list(getattr(update, "runs", []))


def table_lines(panels: PanelsScreen) -> Region:
    """Where the table's rows are on screen (below its border and header)."""
    table = panels._table
    content = table.scrollable_content_region
    return Region(content.x, content.y + 1, content.width, content.height - 1)


async def direct_rows(
    pilot: Pilot[None], panels: PanelsScreen, updates: list[object]
) -> list[LayoutUpdate]:
    """Rows frames, drawn by hand until one writes some of the table's rows; its runs."""
    rows = table_lines(panels)

    def wrote_rows() -> bool:
        updates.clear()
        panels._draw("rows")
        return len(updates) == 1 and any(
            run.region.overlaps(rows)
            for run in runs_in(updates[0])  # type: ignore[arg-type]
        )

    await until(pilot, wrote_rows, "a rows frame that changes some rows")
    return runs_in(updates[0])  # type: ignore[arg-type]


def assert_written_as_composited(panels: PanelsScreen, runs: list[LayoutUpdate]) -> None:
    """Each line `runs` wrote is, cell for cell, what the compositor draws there from
    scratch; some of them are the table's rows, each its worker's."""
    # The whole screen as the compositor draws it from scratch: no line kept from before,
    # the table's included.
    for widget in panels._repainting:
        widget._styles_cache.clear()
    screen = panels._compositor.render_strips()
    rows = table_lines(panels)
    table = panels._table
    written_rows = 0
    for run in runs:
        x, width = run.region.x, run.region.width
        assert len(run.strips) == run.region.height
        for y, line in enumerate(run.strips, run.region.y):
            drawn = Strip.join(list(line))
            # As long as the region it is written over, counted from its text, not from
            # the length the strip says it has.
            assert drawn.cell_length == cell_len(drawn.text) == width
            assert cells(drawn) == cells(screen[y].crop(x, x + width)), f"line {y}"
            if rows.contains(x, y):
                written_rows += 1
                # Each row written is its worker's: the line starts with its id.
                worker = table._order[table._top + y - rows.y]
                assert drawn.text.split()[0] == str(worker), (y, drawn.text)
    assert written_rows >= 1


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_a_rows_frame_writes_the_changed_rows_as_the_compositor_draws_them(
    monkeypatch: pytest.MonkeyPatch, size: tuple[int, int]
) -> None:
    async with rows_by_hand(size) as (pilot, panels):
        renders = composited(monkeypatch, panels)
        updates = displayed(monkeypatch, pilot.app)
        runs = await direct_rows(pilot, panels, updates)
        assert renders == []  # written straight, not through the compositor
        assert_written_as_composited(panels, runs)


async def test_the_rows_of_a_table_without_focus_are_written_in_its_colours(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Focused, the table is tinted and its cursor row bright; the redirect chains take the
    # focus, and the rows written straight must follow.
    async with rows_by_hand((120, 40)) as (pilot, panels):
        panels._tree.focus()
        await until(pilot, lambda: not panels._table.has_focus, "the focus moved")
        await pilot.pause()
        updates = displayed(monkeypatch, pilot.app)
        runs = await direct_rows(pilot, panels, updates)
        assert_written_as_composited(panels, runs)


async def test_rows_under_a_notification_are_drawn_by_the_compositor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with rows_by_hand((80, 24), notifications=True) as (pilot, panels):
        table = panels._table
        assert region_alone(panels._compositor.visible_widgets, table, panels) is not None
        # Toasts stack up from the bottom right, four lines each: five reach the table.
        for n in range(5):
            pilot.app.notify(f"notification {n}", timeout=60)
        await until(
            pilot,
            lambda: region_alone(panels._compositor.visible_widgets, table, panels) is None,
            "a toast over the table",
        )
        await pilot.pause()
        updates = displayed(monkeypatch, pilot.app)

        def drawn() -> bool:
            updates.clear()
            panels._draw("rows")
            return bool(updates)

        await until(pilot, drawn, "a rows frame that changes something")
        [update] = updates
        assert isinstance(update, CompositorUpdate) and not runs_in(update)  # type: ignore[arg-type]


async def test_rows_under_another_screen_are_left_to_textual(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with rows_by_hand((80, 24)) as (pilot, panels):
        await pilot.press("question_mark")
        await until(pilot, lambda: pilot.app.screen is not panels, "the help screen")
        await pilot.pause()
        updates = displayed(monkeypatch, pilot.app)
        for _ in range(3):
            panels._draw("rows")
            assert updates == []
        # Once the help screen is gone, the compositor draws the table as it now is.
        await pilot.press("escape")
        await until(pilot, lambda: pilot.app.screen is panels, "the panels again")
        await until(pilot, lambda: len(updates) >= 1, "the panels drawn")


async def test_rows_with_a_scroll_to_come_are_left_to_textual(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with rows_by_hand((80, 24)) as (pilot, panels):
        table = panels._table
        assert table.row_count > table._page
        updates = displayed(monkeypatch, pilot.app)
        # A scroll moves every line of the table, and its scrollbar: Textual draws it.
        table.scroll_to(y=2, animate=False, immediate=True)
        panels.note = "scrolled"  # a change of the status line at least
        panels._draw("rows")
        [update] = updates
        assert isinstance(update, CompositorUpdate) and not runs_in(update)  # type: ignore[arg-type]
