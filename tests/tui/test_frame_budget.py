"""The frame budget sees what a frame really costs: the sampling and widget updates, and
Textual's drawing of what they changed, which is most of it."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator
from typing import cast

import pytest
from rich.console import RenderableType
from textual._compositor import CompositorUpdate, LayoutUpdate
from textual._styles_cache import StylesCache
from textual.geometry import Region
from textual.pilot import Pilot
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from tui_support import config, crawler_of, frames, until

from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.frame_budget import ALLOWANCE_MAX
from crawlscope.tui.screens.direct_paint import region_alone
from crawlscope.tui.screens.panels import PanelsScreen
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.status_line import StatusLine


async def test_the_screens_time_counts_its_drawing_as_well_as_its_ticks() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(3), demo=DemoConfig(pages=30)))
    async with app.run_test(size=(120, 40)) as pilot:
        await crawler_of(pilot)
        await frames(pilot, 5)
        panels = app.panels
        ticks = sum(panels.frame_costs)
        assert ticks > 0
        # Drawing 120x40 cells takes time of its own beyond the ticks that asked for it.
        assert panels.ui_seconds > ticks


# A short crawl, slowed down enough to be on screen for a few hand-drawn frames.
SHORT_SITE = DemoConfig(pages=60, latency=0.02)


@contextlib.asynccontextmanager
async def frames_by_hand(
    site: DemoConfig = SHORT_SITE,
) -> AsyncIterator[tuple[Pilot[None], PanelsScreen]]:
    """A crawl on screen whose frame timer is stopped: the frames that follow are the
    test's own, drawn by hand."""
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=site))
    async with app.run_test(size=(120, 40)) as pilot:
        await crawler_of(pilot)
        panels = app.panels
        # Two frames, and no more: not frames(), whose last pause waits for an idle
        # process, up to a second, and the crawl must still be running.
        target = panels.frames + 2
        await until(pilot, lambda: panels.frames >= target, "two frames")
        assert panels._frame_handle is not None
        panels._frame_handle.cancel()
        yield pilot, panels


async def pulse_until_the_status_line_moves(pilot: Pilot[None], panels: PanelsScreen) -> None:
    status = panels._status
    first = status.render().plain
    await until(
        pilot,
        lambda: panels.redraw(table=False, pulse=True) or status.render().plain != first,
        "the status line to move",
    )


async def test_a_pulse_draws_the_status_line_alone() -> None:
    # A crawl that outlasts the pulses: a crawl ending meanwhile makes a pulse a whole
    # frame, table and all, as it should (a loaded machine let the short one end).
    async with frames_by_hand(DemoConfig(pages=2000, latency=0.05)) as (pilot, panels):
        drawn: list[str] = []
        pulsing = False
        redraw = panels.redraw

        def noted_in_a_pulse(*args: object, **options: bool) -> None:
            # Only what the pulses draw: a warning on a loaded machine saves the flight,
            # and the screen then redraws in full, as it should.
            nonlocal pulsing
            pulsing = options.get("pulse", False)
            try:
                redraw(*args, **options)  # type: ignore[arg-type]
            finally:
                pulsing = False

        panels.redraw = noted_in_a_pulse  # type: ignore[method-assign]
        for name in ("_table", "_queue", "_recent"):
            widget = getattr(panels, name)
            widget.show = lambda *_a, name=name, **_kw: drawn.append(name) if pulsing else None
        await pulse_until_the_status_line_moves(pilot, panels)
        assert drawn == []
        assert re.search(r" \d+ pages? ", panels._status.render().plain)


async def test_a_light_frame_leaves_the_chains_to_the_next_table_frame() -> None:
    # The frames between table frames draw some panels only; a reader of the screen
    # (tests/tui_support.py's frames) waits for a whole one, which the next table frame is.
    async with frames_by_hand(DemoConfig(pages=2000, latency=0.05)) as (_pilot, panels):
        drawn: list[str] = []
        panels._tree.show_from = lambda *_args, **_kw: drawn.append("chains")  # type: ignore[method-assign]
        panels._chains_version, panels._chains_at = None, float("-inf")  # the chains due
        whole = panels.whole_frame
        assert whole < panels.frames
        panels.redraw(table=False)
        assert drawn == [] and panels.whole_frame == whole
        panels.redraw(table=True)
        assert drawn == ["chains"] and panels.whole_frame == panels.frames


async def test_a_pulse_puts_no_widget_through_the_styles_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Textual renders again every widget whose clip holds a changed cell: the screen, the
    # panels' grid and the footer as well as the status line. Blank, the first three cost
    # no styling; the status line draws its kept strip (see OneLine.render_lines).
    styled: list[str] = []
    render_widget = StylesCache.render_widget

    def counting(cache: StylesCache, widget: Widget, crop: Region) -> list[Strip]:
        styled.append(type(widget).__name__)
        return render_widget(cache, widget, crop)

    drawn: list[Region] = []
    render_lines = StatusLine.render_lines

    def drawing(line: StatusLine, crop: Region) -> list[Strip]:
        drawn.append(crop)
        return render_lines(line, crop)

    # A crawl that outlasts the test: its end would draw everything.
    async with frames_by_hand(DemoConfig(pages=2000, latency=0.05)) as (pilot, panels):
        await pilot.pause()  # the last frame drawn
        monkeypatch.setattr(StylesCache, "render_widget", counting)
        monkeypatch.setattr(StatusLine, "render_lines", drawing)
        await pulse_until_the_status_line_moves(pilot, panels)
        await until(pilot, lambda: drawn, "the pulse to be drawn")
        assert styled == []


async def test_a_table_frame_costs_its_tick_and_the_drawing_that_follows_it() -> None:
    # No frame slot comes to take the cost: the drawing alone must bring it in.
    async with frames_by_hand() as (pilot, panels):
        budget = panels.budget
        budget.table_cost = 0.0
        panels.note = "a change to draw"
        panels._tick("table")
        tick = panels.frame_costs[-1]
        await until(pilot, lambda: budget.table_cost > tick, "the table frame's drawing")
        assert budget.table_cost < panels.ui_seconds


async def test_a_crawl_starts_with_a_full_allowance_whatever_building_the_screen_cost() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=DemoConfig(pages=30)))
    async with app.run_test(size=(120, 40)) as pilot:
        await crawler_of(pilot)
        panels = app.panels
        source = panels.source
        assert source is not None
        # As if the screen's mounting and first layout had just been paid for.
        panels.budget.allowance = -0.02
        panels.observe(source, panels.site)
        # What the frame observe() draws is charged at the next slot; nothing from before.
        assert panels.budget.allowance == ALLOWANCE_MAX
        assert panels.budget.frame_kind(0.0, panels.frames) is not None


def saturate(panels: PanelsScreen, kind: str = "pulse") -> None:
    """Make the next frame slot late (the loop is saturated) and of `kind`: a pulse (the
    table was just drawn, the allowance is full) or a table frame (the table is overdue)."""
    now = asyncio.get_running_loop().time()
    panels._frame_due = now - 1.0
    panels.budget.table_at = now if kind == "pulse" else float("-inf")
    panels.budget.allowance = ALLOWANCE_MAX


def displayed(
    monkeypatch: pytest.MonkeyPatch, app: CrawlScopeApp, *, as_text: bool = False
) -> list[object]:
    """What the app hands its terminal from now on: each update, or (`as_text`) what each
    compositor update writes."""
    updates: list[object] = []
    display = app._display

    def recording(screen: Screen[object], update: RenderableType | None) -> None:
        if not as_text:
            updates.append(update)
        elif isinstance(update, CompositorUpdate):
            updates.append(update.render_segments(app.console))
        display(screen, update)

    monkeypatch.setattr(app, "_display", recording)
    return updates


def composited(monkeypatch: pytest.MonkeyPatch, screen: PanelsScreen) -> list[object]:
    """The compositor's renders of updates from now on (a frame written straight to the
    terminal makes none)."""
    renders: list[object] = []
    render_update = screen._compositor.render_update
    monkeypatch.setattr(
        screen._compositor,
        "render_update",
        lambda **kw: renders.append(kw) or render_update(**kw),
    )
    return renders


def written(monkeypatch: pytest.MonkeyPatch, app: CrawlScopeApp) -> list[str]:
    """What the app writes to the terminal from now on, one string per update."""
    return cast("list[str]", displayed(monkeypatch, app, as_text=True))


def frame_now(panels: PanelsScreen) -> None:
    """The frame slot's callback, run by hand; the slot it schedules is cancelled."""
    panels._frame()
    assert panels._frame_handle is not None
    panels._frame_handle.cancel()
    assert all(widget.held is None for widget in panels._repainting)


# A crawl that outlasts the tests below, slow enough that a frame changes a few rows.
LONG_SITE = DemoConfig(pages=2000, latency=0.05)


async def test_the_panels_widgets_are_all_painted_by_the_frame() -> None:
    async with frames_by_hand(LONG_SITE) as (_pilot, panels):
        painted = {type(widget).__name__ for widget in panels._repainting}
        assert painted == {
            "StatusLine",
            "WorkersTable",
            "QueueFigures",
            "RateLabel",
            "RecentFetches",
            "RedirectTree",
            "HistoryLine",
            "VerdictLine",
        }


@pytest.mark.parametrize("kind", ["pulse", "table"])
async def test_a_frame_is_drawn_within_its_slot(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    # Through Textual's messages a frame took three more turns of the loop, each costly
    # amid a busy crawl: it is composited and written in the slot's own callback.
    async with frames_by_hand(LONG_SITE) as (pilot, panels):
        await pilot.pause()  # the last frame drawn
        updates = written(monkeypatch, pilot.app)
        panels.note = "drawn at once"
        if kind == "table":
            panels._table.frozen = True  # every row's "for" column changes to a dash
        saturate(panels, kind)
        drawn = panels.frames
        frame_now(panels)
        assert panels.frames == drawn + 1
        # Nothing awaited since: no message, no timer had a turn.
        assert len(updates) == 1 and "drawn at once" in updates[0]
        assert not panels._dirty_widgets
        assert not any(w._repaint_required for w in panels._repainting)
        if kind == "table":
            # The rows are in the same update as the status line: the first of them is
            # the screen's fourth line (below the status line, the border and the header).
            assert "\x1b[4;" in updates[0]


def cells(strip: Strip) -> list[tuple[str, object]]:
    """What a terminal shows of `strip`: each cell's character and style."""
    return [(char, segment.style) for segment in strip for char in segment.text]


async def test_a_pulse_writes_the_status_line_alone_as_the_compositor_would(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The compositor's work for a change of one line is for the whole screen (each line's
    # cuts, every widget's region); with nothing over the status line, its cells are
    # written straight away.
    async with frames_by_hand(LONG_SITE) as (pilot, panels):
        await pilot.pause()
        updates = displayed(monkeypatch, pilot.app)
        renders = composited(monkeypatch, panels)
        panels.note = "drawn straight away"
        saturate(panels)
        frame_now(panels)
        assert renders == [] and len(updates) == 1
        update = updates[0]
        assert isinstance(update, LayoutUpdate) and update.region.y == 0
        x, width = update.region.x, update.region.width
        [[drawn]] = update.strips
        expected = panels._compositor.render_strips()[0].crop(x, x + width)
        assert cells(drawn) == cells(expected)
        assert "drawn straight away" in "".join(char for char, _ in cells(drawn))


async def test_a_status_line_under_a_notification_is_drawn_by_the_compositor(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=LONG_SITE))
    async with app.run_test(size=(50, 8), notifications=True) as pilot:
        await crawler_of(pilot)
        await frames(pilot, 2)
        panels = app.panels
        status = panels._status
        assert region_alone(panels._compositor.visible_widgets, status, panels) is not None
        # Toasts stack up from the bottom right: three of them reach the top line.
        for n in range(3):
            app.notify(f"notification {n}", timeout=60)
        await until(
            pilot,
            lambda: region_alone(panels._compositor.visible_widgets, status, panels) is None,
            "a toast over the status line",
        )
        assert panels._frame_handle is not None
        panels._frame_handle.cancel()
        shown = displayed(monkeypatch, app)
        panels.note = "under the toast"
        saturate(panels)
        frame_now(panels)
        assert len(shown) == 1 and isinstance(shown[0], CompositorUpdate)
        assert not isinstance(shown[0], LayoutUpdate)


async def test_the_sparklines_are_drawn_by_the_frame_that_feeds_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with frames_by_hand(LONG_SITE) as (pilot, panels):
        await pilot.pause()
        updates = written(monkeypatch, pilot.app)
        history = panels._history
        monkeypatch.setattr(history, "queue_sizes", lambda: [1.0, 4.0, 9.0])
        monkeypatch.setattr(history, "throughputs", lambda: [9.0, 4.0, 1.0])
        panels._history_shown = False  # a new sample came in
        saturate(panels, "table")
        frame_now(panels)
        spark = panels._queue._queue_spark
        assert spark.data == [1.0, 4.0, 9.0] and not spark._repaint_required
        assert len(updates) == 1 and "█" in updates[0]


async def test_a_frame_with_a_layout_to_come_leaves_the_drawing_to_textual(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # New workers' rows make the workers panel taller: drawn at once, the panels below would
    # be drawn where the layout is about to move them. All of it waits for the layout.
    async with frames_by_hand(LONG_SITE) as (pilot, panels):
        await pilot.pause()
        updates = written(monkeypatch, pilot.app)
        crawler = await crawler_of(pilot)
        for _ in range(3):  # two rows fit the panel's least height; five do not
            crawler.add_worker()
        panels.note = "drawn later"
        saturate(panels, "table")
        frame_now(panels)
        assert updates == []
        await until(pilot, lambda: any("drawn later" in u for u in updates), "the frame drawn")
        assert panels._table.row_count == 5


async def test_a_pulse_under_another_screen_leaves_the_drawing_to_textual(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The screen below the help screen is drawn as Textual draws it: not by the pulse,
    # but through the screen on top once the help screen closes.
    async with frames_by_hand(LONG_SITE) as (pilot, panels):
        await pilot.pause()
        await pilot.press("question_mark")
        await until(pilot, lambda: pilot.app.screen is not panels, "the help screen")
        await pilot.pause()
        updates = written(monkeypatch, pilot.app)
        panels.note = "drawn later"
        saturate(panels)
        frame_now(panels)
        assert updates == []
        await pilot.press("escape")
        await until(pilot, lambda: any("drawn later" in u for u in updates), "the pulse drawn")


async def test_a_failing_frame_is_the_apps_error() -> None:
    async with frames_by_hand(LONG_SITE) as (pilot, panels):
        await pilot.pause()

        def crash(*_args: object, **_kw: object) -> None:
            raise RuntimeError("injected crash")

        panels.redraw = crash  # type: ignore[method-assign]
        saturate(panels)
        frame_now(panels)
        app = pilot.app
        assert isinstance(app._exception, RuntimeError)
        # The app stops as after any error; the test's own exit must not raise it again.
        app._exception = None


async def test_the_end_of_a_crawl_is_drawn_without_waiting_for_a_frame() -> None:
    async with frames_by_hand() as (pilot, panels):
        assert "FINISHED" not in panels._status.render().plain
        # No frame slot comes: only the crawl's end can draw it.
        await until(pilot, lambda: "FINISHED" in panels._status.render().plain, "FINISHED")
