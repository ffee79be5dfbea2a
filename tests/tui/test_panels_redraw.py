"""The queue panel, the recent fetches and the status line redraw only the lines whose text
changed (issue 12, speed): a frame that moves nothing they show costs them nothing."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich.segment import Segment
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widget import Widget

from crawlscope.engine.observe.snapshot import Accounting, Phase
from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.records import FetchRecord
from crawlscope.tui.widgets.queue_panel import QueuePanel, QueueView
from crawlscope.tui.widgets.recent_fetches import RecentFetches
from crawlscope.tui.widgets.status_line import StatusLine, StatusView, changed_cells
from crawlscope.tui.widgets.text_lines import base_style

# One refresh call: the regions asked for, or None for the whole widget.
Refreshes = list[Region | None]


class Panels(App[None]):
    CSS = """
    QueuePanel { width: 36; height: 10; }
    #queue-figures { height: 7; }
    .spark-row { height: 1; }
    .spark-label { width: 11; padding-right: 1; text-align: right; }
    RecentFetches { height: 8; }
    """

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        yield QueuePanel(id="queue")
        yield RecentFetches(id="recent")


@contextmanager
def refreshes(widget: Widget) -> Iterator[Refreshes]:
    """The refreshes `widget` asks for while the block runs."""
    asked: Refreshes = []
    original = widget.refresh

    def counting(*regions: Region, **kwargs: bool) -> Widget:
        asked.extend(regions or [None])
        return original(*regions, **kwargs)

    widget.refresh = counting  # type: ignore[method-assign]
    try:
        yield asked
    finally:
        del widget.refresh


def drawn(widget: Widget) -> list[str]:
    width, height = widget.size
    return [strip.text.rstrip() for strip in widget.render_lines(Region(0, 0, width, height))]


def accounting(done: int = 10, queued: int = 5, held: int = 2) -> Accounting:
    seen = done + queued + held
    return Accounting(seen=seen, queued=queued, held=held, done=done, failed=0, filtered=0,
                      unfetched=0)  # fmt: skip


def queue_view(a: Accounting) -> QueueView:
    return QueueView(Phase.RUNNING, a, a.queued + a.held, 4, 0, 12.5, False)


def record(url: str) -> FetchRecord:
    now = time.time()
    return FetchRecord(
        url=url, status=200, next_url=None, exception=None, size=1234, content_type=None,
        encoding=None, num_urls=0, num_new_urls=0, tries=1, depth=0, referrer=None, worker=0,
        t_start=now, t_end=now + 0.25,
    )  # fmt: skip


async def test_the_queue_figures_redraw_only_the_line_that_changed() -> None:
    app = Panels()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(QueuePanel)
        figures = app.query_one("#queue-figures")
        panel.show(queue_view(accounting()))
        await pilot.pause()
        lines = drawn(figures)
        assert lines[0] == "queued     5      held 2"
        assert lines[3] == "done 10  failed 0"
        with refreshes(figures) as asked:
            panel.show(queue_view(accounting()))
        assert asked == []
        with refreshes(figures) as asked:
            panel.show(queue_view(accounting(done=11)))  # "done" and "seen" move
        assert asked == [Region(0, 3, 36, 1), Region(0, 5, 36, 1)]
        await pilot.pause()
        assert drawn(figures)[3] == "done 11  failed 0"
        assert drawn(figures)[5] == "seen 18  ✓ all accounted for"


async def test_the_rate_redraws_only_when_its_text_changes() -> None:
    app = Panels()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(QueuePanel)
        rate = app.query_one("#rate-label")
        panel.show(queue_view(accounting()))
        await pilot.pause()
        assert drawn(rate) == ["    12.5/s"]  # set to the right, as the Label was
        with refreshes(rate) as asked:
            panel.show(queue_view(accounting(done=11)))
        assert asked == []


async def test_a_long_why_line_wraps_between_phrases_and_pushes_the_rest_down() -> None:
    app = Panels()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(QueuePanel)
        figures = app.query_one("#queue-figures")
        view = queue_view(accounting(queued=1234))
        panel.show(QueueView(view.phase, view.accounting, view.unfinished, 0, 0, None, False))
        await pilot.pause()
        # Broken after the comma, each phrase whole ("no" is not left behind), then the
        # next line.
        assert drawn(figures)[2:5] == [
            "join() waits: 1,234 queued,",
            "no worker to get() them (a adds one)",
            "done 10  failed 0",
        ]


async def test_the_status_line_redraws_only_when_its_text_changes() -> None:
    app = Panels()
    async with app.run_test(size=(100, 30)) as pilot:
        status = app.query_one(StatusLine)
        view = StatusView(Phase.RUNNING, 1.0, 4, 3, 0.0, site="http://demo/")
        status.show(view)
        status.show_states(((WorkerState.BODY, 3), (WorkerState.WAITING, 1)))
        await pilot.pause()
        assert (
            drawn(status)[0] == " RUNNING   0:01.0   4 workers: 3 body · 1 waiting   http://demo/"
        )
        with refreshes(status) as asked:
            status.show(view)
            # The busy count is not shown once the states are known.
            status.show(StatusView(Phase.RUNNING, 1.0, 4, 2, 0.0, site="http://demo/"))
        assert asked == []
        with refreshes(status) as asked:
            status.show(StatusView(Phase.RUNNING, 1.1, 4, 2, 0.0, site="http://demo/"))
        # The clock's last digit alone is composited and written again.
        assert asked == [Region(16, 0, 1, 1)]
        await pilot.pause()
        assert drawn(status)[0].startswith(" RUNNING   0:01.1   4 workers")
        with refreshes(status) as asked:
            status.show(StatusView(Phase.RUNNING, 1.1, 4, 2, 0.0, "http://demo/", pages=999))
        # Longer: everything after the clock moved, to the end of the line.
        assert asked == [Region(20, 0, 80, 1)]
        await pilot.pause()
        assert drawn(status)[0].startswith(" RUNNING   0:01.1   999 pages   4 workers")
        with refreshes(status) as asked:
            status.show(StatusView(Phase.PAUSED, 1.1, 4, 2, 0.0, "http://demo/", pages=999))
        assert asked == [Region(0, 0, 100, 1)]  # the phase's word and colours


def test_changed_cells_counts_cells_and_colours() -> None:
    assert changed_cells(((" 0:01.0", "bold"),), ((" 0:01.1", "bold"),)) == (6, 7)
    assert changed_cells((("ab", ""), ("c", "red")), (("ab", ""), ("c", "blue"))) == (2, 3)
    # A wide character before the change takes two cells.
    assert changed_cells((("漢 1", ""),), (("漢 2", ""),)) == (3, 4)
    # A wide character in place of a narrow one: what follows moved.
    assert changed_cells((("a b", ""),), (("漢 b", ""),)) == (0, None)


async def test_recent_fetches_redraw_only_the_rows_that_moved() -> None:
    app = Panels()
    async with app.run_test(size=(100, 30)) as pilot:
        recent = app.query_one(RecentFetches)
        first, second, third = record("http://h/1"), record("http://h/2"), record("http://h/3")
        recent.show([second, first], second)
        await pilot.pause()
        assert drawn(recent)[:3] == [
            "200   1.2k 0.25s http://h/2",
            "200   1.2k 0.25s http://h/1",
            "",
        ]
        with refreshes(recent) as asked:
            recent.show([second, first], second)
        assert asked == []
        built: list[str] = []
        line = recent._line
        recent._line = lambda r, timed: built.append(r.url) or line(r, timed)  # type: ignore[method-assign]
        with refreshes(recent) as asked:
            recent.show([third, second, first], third)
        # Three rows hold records now, the rows below stay blank.
        assert asked == [Region(0, 0, 100, 3)]
        await pilot.pause()
        assert drawn(recent)[:3] == [
            "200   1.2k 0.25s http://h/3",
            "200   1.2k 0.25s http://h/2",
            "200   1.2k 0.25s http://h/1",
        ]
        assert built == ["http://h/3"]  # the other rows were drawn from their kept strips


async def test_a_theme_change_recolours_the_lines_drawn_from_kept_styles() -> None:
    # The panels draw on base_style, which Textual keeps until a widget's own styles
    # change; their background here is the screen's, which a theme changes.
    app = Panels()
    async with app.run_test(size=(100, 30)) as pilot:
        widgets = [
            app.query_one(StatusLine),
            app.query_one(QueuePanel),
            app.query_one(RecentFetches),
        ]
        app.query_one(StatusLine).show(StatusView(Phase.RUNNING, 1.0, 4, 2, 0.0, "site"))
        await pilot.pause()
        before = [base_style(w) for w in widgets]
        assert before == [w.rich_style for w in widgets]
        app.theme = "textual-light" if app.theme != "textual-light" else "textual-dark"
        await pilot.pause()
        after = [base_style(w) for w in widgets]
        assert after == [w.rich_style for w in widgets]
        assert all(a.bgcolor != b.bgcolor for a, b in zip(after, before, strict=True))
        # Past the text, the line is its background.
        *_, end = app.query_one(StatusLine).render_line(0)
        assert not end.text.strip() and end.style is not None
        assert end.style.bgcolor == after[0].bgcolor


def through_styles_cache(widget: Widget, crop: Region) -> list[list[Segment]]:
    """`widget`'s lines as Textual's StylesCache draws them (Widget.render_lines)."""
    widget._styles_cache.clear()
    return [list(strip) for strip in widget._styles_cache.render_widget(widget, crop)]


async def test_a_bare_line_draws_what_the_styles_cache_would() -> None:
    app = Panels()
    async with app.run_test(size=(100, 30)) as pilot:
        status = app.query_one(StatusLine)
        # ANSI colours (the phase's word): the app's filter turns them into the theme's.
        status.show(StatusView(Phase.RUNNING, 1.0, 4, 2, 0.0, "http://demo/", pages=12))
        await pilot.pause()
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await pilot.pause()
            for crop in (Region(0, 0, 100, 1), Region(16, 0, 9, 1), Region(90, 0, 10, 1)):
                fast = [list(strip) for strip in status.render_lines(crop)]
                assert fast == through_styles_cache(status, crop), (theme, crop)
        # Padding is the StylesCache's to draw: the line steps aside for it.
        status.styles.padding = (0, 2)
        await pilot.pause()
        whole = Region(0, 0, 100, 1)
        padded = [list(strip) for strip in status.render_lines(whole)]
        assert padded == through_styles_cache(status, whole)
        assert "".join(s.text for s in padded[0]).startswith("   RUNNING ")
