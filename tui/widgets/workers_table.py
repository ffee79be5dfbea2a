"""One row per worker task: its state, the URL it holds, and where its coroutine is suspended.

A line-based widget: each row is one Strip of plain Segments, built from a handful of
strings when the row's values change and drawn only while it is on screen. A frame costs
what the visible rows cost, whatever the worker count (a DataTable re-rendered every
visible cell through Rich on any change, and kept a Rich Text per cell of every row).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import ClassVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip

from crawlscope.engine.observe.text import printable
from crawlscope.engine.observe.workers import BUSY, WorkerState, WorkerView

from ..format import NO_FIGURE, duration, short_url, state_style
from .cursor_lines import CursorLines
from .text_lines import base_style
from .timing_text import step_times

# (label, width, right-aligned); "where" and "url" share the width left over.
_FIXED = (
    ("#", 3, True), ("state", 10, False), ("for", 6, True), ("pages", 5, True),
    ("step p99/max", 12, True),
)  # fmt: skip
_FLEXIBLE = ("suspended at", "url")
_PAD = 1  # blank cells either side of every column
# The blank cells of a row between and around its columns (see WorkersTable._strip).
_ROW_SPACING = 16
# "where" up to the longest the engine says ("HostGate._wait_for_slot politeness.py:236",
# 41): at 140 columns a URL of the demo site is a few cells, and was given 50 of them.
_MIN_WHERE, _MAX_WHERE, _URL_FIRST = 16, 44, 18
# The line number at the end of "Queue.get queues.py:158".
_LINE_NUMBER = re.compile(r"(\.py):\d+$")

# One row as plain values, cheap to compare: id, state, state style, in state, pages,
# step times, where, url. A row's Strip is only rebuilt when these change.
Values = tuple[str, str, str, str, str, str, str, str]


@lru_cache(maxsize=64)
def _style(spec: str) -> Style:
    return Style.parse(spec) if spec else Style()


def _cell(text: str, width: int, right: bool = False) -> str:
    """`text` in exactly `width` cells: cut with an ellipsis when too long."""
    if text.isascii() and text.isprintable():
        # A cell a character: most of what a row shows, measured without rich's tables
        # (a rows frame builds 30 to 40 rows of seven cells).
        if len(text) > width:
            return text[: width - 1] + "…" if width else ""
        return text.rjust(width) if right else text.ljust(width)
    if cell_len(text) > width:
        return set_cell_size(text, max(width - 1, 0)) + "…" if width else ""
    if right:
        return " " * (width - cell_len(text)) + text
    return set_cell_size(text, width)


class WorkersTable(CursorLines):
    """The rows are exactly the workers of the last `show`, in id order; the cursor stays
    on its worker while that worker has a row."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"workers-table--header", "workers-table--cursor"}
    # As a DataTable looked, so the screen a user knows stays the same.
    DEFAULT_CSS = """
    WorkersTable {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        & > .workers-table--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        & > .workers-table--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }
        &:focus {
            background-tint: $foreground 5%;
            & > .workers-table--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }
            & > .workers-table--header {
                background-tint: $foreground 5%;
            }
        }
    }
    """

    class Highlighted(Message):
        """The cursor moved to another worker (or to none)."""

        def __init__(self, worker_id: int | None) -> None:
            super().__init__()
            self.worker_id = worker_id

    class RowsWanted(Message):
        """Rows came on screen (a scroll) that the last `show` brought no views for."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.origin = ""
        # Reproducible screenshots: no wall-clock figures and no source line numbers.
        self.frozen = False
        self._order: Sequence[int] = ()  # worker ids in row order
        self._expected = 0  # rows to make room for until the first come (expect)
        # The last show's views, by worker id: those of the rows on screen, at least.
        self._views: dict[int, WorkerView] = {}
        self._wanted = False  # RowsWanted was posted since the last show
        self._clock = 0.0  # the last show's crawl clock: what the "for" column counts to
        self._cursor = 0
        # Row strips by worker id, with the values they were built from; only rows that
        # have been on screen are here.
        self._strips: dict[int, tuple[Values, Strip]] = {}
        self._id_width = _FIXED[0][1]
        self._where_width = 28
        self._url_width = 40
        # What every cached strip depends on besides its values: when it moves, all go.
        self._look: tuple[object, ...] = ()
        self._width = 0  # the width the strips are built for (size.width costs a walk)
        self._base = Style()
        self._cursor_style = Style()
        self._header_style = Style()

    # ---- what the rest of the app asks ---------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._order)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def selected_worker(self) -> int | None:
        if not 0 <= self._cursor < len(self._order):
            return None
        return self._order[self._cursor]

    def selected_view(self) -> WorkerView | None:
        """The highlighted worker as its row shows it."""
        selected = self.selected_worker
        return None if selected is None else self._views.get(selected)

    def visible_ids(self) -> set[int]:
        """The workers whose rows are on screen: the only ones worth a walk of the task."""
        top = self._top
        return set(self._order[top : top + self._page])

    def wanted_ids(self) -> set[int]:
        """The rows a snapshot must bring: those on screen and the highlighted one."""
        ids = self.visible_ids()
        selected = self.selected_worker
        if selected is not None:
            ids.add(selected)
        return ids

    def show(
        self, workers: Sequence[WorkerView], clock: float = 0.0, ids: Sequence[int] | None = None
    ) -> None:
        """Rows for exactly the workers `ids` names (None: for `workers`), drawn from
        `workers`, at `clock` (the snapshot's `elapsed`, which their `since` counts on);
        redraw the rows on screen whose values changed."""
        self._clock = clock
        if ids is None:
            ids = [view.id for view in workers]
            if ids != sorted(ids):  # linear on sorted ids, which a snapshot's are
                ids = sorted(ids)
        self._views = {view.id: view for view in workers}
        self._wanted = False
        if ids is not self._order and list(ids) != list(self._order):
            self._set_rows(ids)
            return  # _set_rows redrew everything
        self._order = ids
        self._refresh_changed()

    @property
    def rows_to_fit(self) -> int:
        """The rows the table is sized for: those shown, or those expected."""
        return len(self._order) or self._expected

    def expect(self, rows: int) -> None:
        """Size the table for `rows` rows about to come (a crawl's workers, before it
        starts), so that its scrollbar, and the layout that brings it, come now."""
        self._expected = rows
        self.virtual_size = Size(self.size.width, self.rows_to_fit + 1)

    # ---- rows ----------------------------------------------------------------------------

    def _set_rows(self, ids: Sequence[int]) -> None:
        selected = self.selected_worker
        self._order, self._expected = ids, 0
        present = set(ids)
        self._strips = {k: v for k, v in self._strips.items() if k in present}
        if selected is not None and selected in present:
            self._cursor = list(ids).index(selected)
        else:
            self._cursor = min(self._cursor, max(len(ids) - 1, 0))
        id_width = max(_FIXED[0][1], len(str(ids[-1]))) if ids else _FIXED[0][1]
        if id_width != self._id_width:
            self._id_width = id_width
            self._fit(force=True)
        self.virtual_size = Size(self.size.width, len(ids) + 1)
        self._scroll_to_cursor()
        self.refresh()
        if self.selected_worker != selected:
            self.post_message(self.Highlighted(self.selected_worker))

    def _refresh_changed(self) -> None:
        top = self._top
        views = self._views
        width = self.size.width
        if len(self._strips) > 2 * self._page:
            # Rows scrolled past: keep the strips of the rows on screen only.
            on_screen = self.visible_ids()
            self._strips = {k: v for k, v in self._strips.items() if k in on_screen}
        for row in range(top, min(top + self._page, len(self._order))):
            view = views.get(self._order[row])
            if view is None:
                continue
            cached = self._strips.get(view.id)
            if cached is not None and cached[0] == self._values(view):
                continue
            self._strips.pop(view.id, None)  # built again when drawn
            self.repaint(Region(0, row - top + 1, width, 1))

    @property
    def _page(self) -> int:
        """Rows on screen (the header takes a line)."""
        return max(self.size.height - 1, 1)

    def _values(self, view: WorkerView) -> Values:
        state = view.state
        style = state_style(state)
        if view.paused and state in BUSY:
            # Asked to pause: it finishes this fetch first, then shows "paused".
            style += " underline"
        if view.retiring and state is not WorkerState.STOPPED:
            style += " italic"
        return (
            str(view.id),
            state.value,
            style,
            NO_FIGURE if self.frozen else duration(view.time_in_state(self._clock)),
            str(view.pages),
            NO_FIGURE if self.frozen else step_times(view),
            self._where(view),
            short_url(view.url, self.origin) if view.url else "",
        )

    def _where(self, view: WorkerView) -> str:
        if not view.alive or not view.suspended_at:
            return view.state.value  # an ended task, or a source with no tasks to read
        if self.frozen:
            # Line numbers differ between Python releases; a reproducible screen omits them.
            return _LINE_NUMBER.sub(r"\1", view.suspended_at)
        return view.suspended_at

    # ---- drawing -------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        self.update_look()
        return super().render_lines(crop)

    def update_look(self) -> None:
        base = base_style(self)
        cursor = base + self.get_component_rich_style("workers-table--cursor", partial=True)
        header = base + self.get_component_rich_style("workers-table--header", partial=True)
        width = self.size.width
        look = (base, cursor, header, width, self._where_width, self._url_width)
        if look != self._look:
            self._look, self._width = look, width
            self._base, self._cursor_style, self._header_style = base, cursor, header
            self._strips.clear()

    def render_line(self, y: int) -> Strip:
        width = self._width
        if y == 0:
            return self._header()
        row = self._top + y - 1
        if not 0 <= row < len(self._order):
            return Strip.blank(width, self._base)
        view = self._views.get(self._order[row])
        if view is None:
            # Scrolled to a row the last snapshot did not bring: its number now, the rest
            # with the frame the screen draws for it at once.
            if not self._wanted:
                self._wanted = True
                self.post_message(self.RowsWanted())
            blank = (str(self._order[row]), "", "", "", "", "", "", "")
            return self._strip(blank, self._cursor_style if row == self._cursor else self._base)
        if row == self._cursor:
            return self._strip(self._values(view), self._cursor_style)
        values = self._values(view)
        cached = self._strips.get(view.id)
        if cached is not None and cached[0] == values:
            return cached[1]
        strip = self._strip(values, self._base)
        self._strips[view.id] = (values, strip)
        return strip

    def _widths(self) -> tuple[int, ...]:
        return (self._id_width, *(w for _, w, _ in _FIXED[1:]), self._where_width, self._url_width)

    def _header(self) -> Strip:
        style = self._header_style
        labels = (*(label for label, _, _ in _FIXED), *_FLEXIBLE)
        text = "".join(
            f" {_cell(label, w)} " for label, w in zip(labels, self._widths(), strict=True)
        )
        return Strip([Segment(text, style)]).adjust_cell_length(self._width, style)

    def _strip(self, values: Values, base: Style) -> Strip:
        worker_id, state, style, in_state, pages, steps, where, url = values
        widths = self._widths()
        w_id, w_state, w_in, w_pages, w_steps, w_where, w_url = widths
        # Every cell is exactly its width: the row's length is known without measuring,
        # and the rest of the line is filled in its last segment, not by another Strip.
        fill = self._width - sum(widths) - _ROW_SPACING
        # As few segments as styles: each costs again in every filter the app applies.
        segments = [
            Segment(f" {_cell(worker_id, w_id, True)}  ", base),
            Segment(_cell(state, w_state), base + _style(style)),
            Segment(
                f"  {_cell(in_state, w_in, True)}  {_cell(pages, w_pages, True)}"
                f"  {_cell(steps, w_steps, True)}  ",
                base,
            ),
            Segment(_cell(where, w_where), base + _style("dim")),
            # Crawled text, escaped and shown literally, never as markup.
            Segment(f"  {_cell(printable(url), w_url)} " + " " * max(fill, 0), base),
        ]
        if fill < 0:  # narrower than its columns (a moment of a resize)
            return Strip(segments).adjust_cell_length(self._width, base)
        return Strip(segments, self._width)

    # ---- the cursor ------------------------------------------------------------------------

    def _move(self, row: int) -> None:
        if not self._order:
            return
        row = max(0, min(row, len(self._order) - 1))
        if row == self._cursor:
            return
        old, self._cursor = self._cursor, row
        self._scroll_to_cursor()
        top = self._top
        for line in (old, row):
            self.refresh(Region(0, line - top + 1, self.size.width, 1))
        self.post_message(self.Highlighted(self.selected_worker))

    def move_cursor(self, row: int) -> None:
        self._move(row)

    def _line_count(self) -> int:
        return len(self._order)

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is not None and offset.y >= 1:
            self._move(self._top + offset.y - 1)

    # ---- width -----------------------------------------------------------------------------

    def on_resize(self, _event: events.Resize) -> None:
        self._fit()
        self.virtual_size = Size(self.size.width, self.rows_to_fit + 1)

    def _fit(self, force: bool = False) -> None:
        """Share the width left by the fixed columns between "where" and "url"."""
        pad = 2 * _PAD
        fixed = sum(w + pad for w in self._widths()[: len(_FIXED)]) + 2 * pad
        # Room for the scrollbar is kept even while there is none, so that its coming
        # never pushes the table wider than the widget.
        spare = self.size.width - self.styles.scrollbar_size_vertical - fixed
        # The URL gets a first share; "where" takes what is left, up to its most useful.
        where = max(_MIN_WHERE, min(_MAX_WHERE, spare - _URL_FIRST))
        url = max(_URL_FIRST, spare - where)
        if (where, url) == (self._where_width, self._url_width) and not force:
            return
        self._where_width, self._url_width = where, url
        self._strips.clear()
        self.refresh()
