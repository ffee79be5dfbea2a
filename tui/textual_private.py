"""Every use crawlscope makes of Textual's private API, and nowhere else.

The panels paint their own frames (widgets/held.py, screens/direct_paint.py) and time
Textual's drawing for the frame budget; the footer greys keys out without a rebuild; the
redirect tree moves its scroll range without a layout. Each reaches below what Textual
promises, so each private name is used here alone, behind a function that says what it
is for, and tests/tui/test_textual_private.py checks every one of them against the installed
Textual: a release that renames or reshapes one fails that test, by name, not a frame of
a crawl. pyproject.toml keeps textual to one major release.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from textual._compositor import CompositorUpdate, LayoutUpdate
from textual.app import App
from textual.geometry import Region, Size
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets._footer import FooterKey

__all__ = [
    "FooterKey",
    "TimedScreen",
    "changes_pending",
    "composite",
    "forget_lines",
    "grey_footer_key",
    "layout_pending",
    "mark_dirty",
    "render_again",
    "repaint_pending",
    "report_error",
    "scroll_pending",
    "set_scroll_range",
    "visible_widgets",
    "write_lines",
    "write_runs",
]


def report_error(app: App[object], error: Exception) -> None:
    """Stop `app` on `error` as on one raised in a message handler."""
    app._handle_exception(error)


def changes_pending(screen: Screen[Any]) -> bool:
    """Whether Textual has changes of its own to draw on `screen`, or is batching them."""
    return bool(
        screen.app._batch_count
        or screen._layout_required
        or screen._scroll_required
        or screen._repaint_required
        or screen._recompose_required
        or screen._dirty_widgets
    )


def layout_pending(widget: Widget) -> bool:
    """Whether a layout of `widget` is on its way (it may move what is drawn)."""
    return widget._layout_required


def repaint_pending(widget: Widget) -> bool:
    """Whether `widget` asked Textual itself to draw it again (refresh(), a scroll of its
    own), which Textual has yet to do."""
    return widget._repaint_required


def scroll_pending(widget: Widget) -> bool:
    """Whether a change of `widget`'s scrolling is still to be drawn."""
    return widget._scroll_required


def visible_widgets(screen: Screen[Any]) -> dict[Widget, tuple[Region, Region]]:
    """The compositor's map of `screen`: each widget shown, its region and its clip. The
    same object until the map is built again."""
    return screen._compositor.visible_widgets


def composite(screen: Screen[Any], widgets: set[Widget]) -> None:
    """Composite the changes marked on `widgets` (see mark_dirty) and write them to the
    terminal now, as `screen`'s update timer would."""
    screen._compositor.update_widgets(widgets)
    screen._compositor_refresh()


def mark_dirty(widget: Widget, regions: Iterable[Region] | None) -> None:
    """Mark `regions` of `widget` (None: all of it) for the compositor, as refresh() does,
    without waking the widget's message queue."""
    if regions is None:
        widget._set_dirty()
    else:
        widget._set_dirty(*regions)


def write_lines(screen: Screen[Any], lines: list[Iterable[Strip]], region: Region) -> None:
    """Write `lines` to the terminal over `region` of `screen`, as the compositor writes
    an update, without the compositor."""
    screen.app._display(screen, LayoutUpdate(lines, region))


class _Runs(CompositorUpdate):
    """Runs of lines, each over its own region, written to the terminal as one update."""

    def __init__(self, runs: list[LayoutUpdate]) -> None:
        self.runs = runs

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for run in self.runs:
            yield from run.__rich_console__(console, options)

    def render_segments(self, console: Console) -> str:
        # Each run starts by moving the cursor to its first line: they join as they are.
        return "".join(run.render_segments(console) for run in self.runs)


def write_runs(screen: Screen[Any], runs: list[tuple[list[Iterable[Strip]], Region]]) -> None:
    """Write each run of `lines` over its `region` of `screen`, all in one update (one
    write, one synchronized update of the terminal), without the compositor."""
    if len(runs) == 1:
        write_lines(screen, *runs[0])
    elif runs:
        screen.app._display(screen, _Runs([LayoutUpdate(lines, at) for lines, at in runs]))


def forget_lines(widget: Widget, crop: Region) -> None:
    """Mark the copies Textual's styles cache keeps of `widget`'s lines in `crop` (the
    widget's own coordinates) stale, as refresh() does: drawn again when next asked for."""
    widget._styles_cache.set_dirty(crop)


def render_again(widget: Widget, crop: Region) -> list[Strip]:
    """The lines of `widget` in `crop` (the widget's own coordinates, its border
    included) as the compositor would draw them now: the copies of those lines that
    Textual's styles cache keeps are made anew."""
    forget_lines(widget, crop)
    return widget.render_lines(crop)


def set_scroll_range(widget: Widget, size: Size) -> None:
    """Tell `widget`'s scrollbars its virtual `size` (already set without its watcher)
    without the layout of the whole screen that setting virtual_size asks for."""
    widget._scroll_update(size)


def grey_footer_key(key: FooterKey, enabled: bool) -> None:
    """Whether a click on `key` acts or rings the bell: what FooterKey reads on a click.
    (Its grey is the public -disabled class.)"""
    key._disabled = not enabled


class TimedScreen(Screen[None]):
    """A screen that times Textual's drawing of it: a frame's changes are drawn in these
    two methods of Screen (by screens/direct_paint.py or by Textual's update timer), and
    the frame budget must see what a frame really costs the loop, its compositing and
    writing as well as its tick. A layout pass composites too: counted once."""

    def __init__(self) -> None:
        super().__init__()
        self.layouts = 0  # layouts of the screen so far
        self._drawing = False  # inside a compositor refresh or layout: counted once

    def drawn(self, seconds: float) -> None:
        """Textual drew the screen's changes (a refresh or a layout) in `seconds`."""

    def _compositor_refresh(self) -> None:
        if self._drawing:
            super()._compositor_refresh()
            return
        self._drawing = True
        started = time.perf_counter()
        try:
            super()._compositor_refresh()
        finally:
            self._drawing = False
            self.drawn(time.perf_counter() - started)

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        self.layouts += 1
        if self._drawing:
            super()._refresh_layout(size, scroll)
            return
        self._drawing = True
        started = time.perf_counter()
        try:
            super()._refresh_layout(size, scroll)
        finally:
            self._drawing = False
            self.drawn(time.perf_counter() - started)
