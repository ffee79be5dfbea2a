"""A frame's paint, done here and now: the panels screen holds its widgets' refreshes while
it draws a frame (widgets/held.py) and paints them at once, through Textual's compositor, or
for the status line and the workers table alone, straight to the terminal.

Why not leave it to Textual: its refreshes go through messages, three turns of the loop
later, turns the frame budget never sees; and its compositor works for the whole screen (a
map of every line's cuts, a walk of every widget's region) where a rows frame or a pulse
changes a few lines of two widgets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from ..textual_private import (
    changes_pending,
    composite,
    layout_pending,
    repaint_pending,
    scroll_pending,
    visible_widgets,
    write_runs,
)
from ..widgets.held import Held, Repaints
from ..widgets.text_lines import content_lines

CompositorMap = dict[Widget, tuple[Region, Region]]


def region_alone(
    visible: dict[Widget, tuple[Region, Region]], widget: Widget, screen: Screen[Any]
) -> Region | None:
    """Where `widget` draws its lines on screen (inside its border and scrollbars), if it
    is there whole with nothing drawn over it: only its containers, and the screen, are
    behind it. Else None. `visible`: the compositor's map."""
    place = visible.get(widget)
    if place is None or not place[1].contains_region(place[0]):
        return None  # not shown, or cut by its container
    lines = place[0].shrink(widget.styles.gutter).shrink(widget.scrollbar_gutter)
    behind = set(widget.ancestors)
    for other, (other_region, clip) in visible.items():
        if other is widget or other in behind:
            continue
        if other_region.intersection(clip).overlaps(lines):
            return None
    return lines


def runs_of(rows: Iterable[int]) -> list[tuple[int, int]]:
    """Each run of consecutive `rows`, as (first, how many), in order."""
    runs: list[tuple[int, int]] = []
    for row in sorted(set(rows)):
        if runs and runs[-1][0] + runs[-1][1] == row:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((row, 1))
    return runs


def paint_rows(widget: Repaints, rows: Iterable[int]) -> bool:
    """Write `rows` of `widget`'s content straight to the terminal, as a panels frame
    writes its workers table (DirectPaint): for a widget that fills most of its screen
    and changes most lines a frame (the timeline), the compositor's work for the whole
    screen is most of the frame's cost. False, and nothing written, when Textual must
    draw them: another screen on top, a layout or a repaint of its own on its way, or
    something drawn over the widget."""
    screen = widget.screen
    if (
        screen.app.is_inline
        or not screen.is_current
        or changes_pending(screen)
        or layout_pending(widget)
        or repaint_pending(widget)
        or scroll_pending(widget)
    ):
        return False
    at = region_alone(visible_widgets(screen), widget, screen)
    if at is None:
        return False
    runs: list[tuple[list[Iterable[Strip]], Region]] = []
    for first, count in runs_of(y for y in rows if 0 <= y < at.height):
        lines: list[Iterable[Strip]] = [
            [strip] for strip in content_lines(widget, first, count, at.width)
        ]
        runs.append((lines, Region(at.x, at.y + first, at.width, count)))
    write_runs(screen, runs)
    return True


class DirectPaint:
    """Paints what a frame held, for one screen. `alone`: the widgets that may be written
    straight to the terminal when nothing is drawn over them; `layout`: the container whose
    pending layout would move what is drawn; `drawn`: told the seconds a direct write took."""

    def __init__(
        self,
        screen: Screen[None],
        layout: Widget,
        alone: tuple[Widget, ...],
        drawn: Callable[[float], None],
    ) -> None:
        self.screen = screen
        self.layout = layout
        self.alone = alone
        self.drawn = drawn
        # Where each of `alone` draws, worked out again only when the compositor's map is
        # a new one (it is made anew on every layout).
        self._map: CompositorMap | None = None
        self._places: dict[Widget, Region | None] = {}

    def paint(self, held: Held) -> None:
        """Composite and write what `held` holds, as the screen's update timer would; or,
        when a layout is on its way (it would move what is drawn), another screen is on
        top, or Textual has other changes to draw, leave all of it to Textual."""
        if (
            not self.screen.is_current
            or changes_pending(self.screen)
            or layout_pending(self.layout)
            or any(layout_pending(w) or scroll_pending(w) for w in held.regions)
        ):
            for widget, regions in held.regions.items():
                widget.release(regions)
            return
        if self._paint_alone(held):
            return
        for widget, regions in held.regions.items():
            widget.mark(regions)
        # A widget off screen (a panel the terminal has no room for) has nothing to draw;
        # passed to the compositor, it would have it rebuild its whole map.
        visible = visible_widgets(self.screen)
        composite(self.screen, {w for w in held.regions if w in visible})

    def _paint_alone(self, held: Held) -> bool:
        """Write the changed lines of the status line and the workers table (a pulse's, a
        rows frame's) straight to the terminal when nothing is drawn over them: what the
        compositor would write, without its work for the whole screen (a map of every
        line's cuts, a walk of every widget's region, each changed line cut and joined
        again: most of a rows frame's cost, and half a pulse's). False if the compositor
        must draw them."""
        if self.screen.app.is_inline or not held.regions.keys() <= set(self.alone):
            return False
        if any(repaint_pending(widget) for widget in held.regions):
            # Textual is to draw it anyway (a scroll: the lines move, the scrollbar too),
            # all of it, at once with the rest: no use writing some lines before.
            return False
        visible = visible_widgets(self.screen)
        if visible is not self._map:
            self._map = visible
            self._places = {w: region_alone(visible, w, self.screen) for w in self.alone}
        if any(self._places[widget] is None for widget in held.regions):
            return False
        started = time.perf_counter()
        runs: list[tuple[list[Iterable[Strip]], Region]] = []
        for widget, regions in held.regions.items():
            at = self._places[widget]
            assert at is not None  # checked above
            # The widget's changed lines, as rows of its content (where its regions are).
            rows: Iterable[int] = range(at.height)
            if regions is not None:
                rows = (y for r in regions for y in r.line_range if 0 <= y < at.height)
            for first, count in runs_of(rows):
                lines: list[Iterable[Strip]] = [
                    [strip] for strip in content_lines(widget, first, count, at.width)
                ]
                runs.append((lines, Region(at.x, at.y + first, at.width, count)))
        write_runs(self.screen, runs)
        self.drawn(time.perf_counter() - started)
        return True
