"""One row per worker task: its state, the URL it holds, and where its coroutine is suspended."""

from __future__ import annotations

import re
from collections.abc import Sequence

from rich.text import Text
from textual import events
from textual.widgets import DataTable

from crawlscope.engine.workers import BUSY, WorkerState, WorkerView

from ..format import NO_FIGURE, crawled, duration, short_url, state_style

# (key, label, width); "where" and "url" share the width left over.
_FIXED = (("id", "#", 3), ("state", "state", 10), ("in", "for", 6), ("pages", "pages", 5))
_FLEXIBLE = (("where", "suspended at"), ("url", "url"))
_KEYS = tuple(key for key, *_ in (*_FIXED, *_FLEXIBLE))
_MIN_WHERE, _MAX_WHERE, _URL_FIRST = 16, 36, 18
# The line number at the end of "Queue.get queues.py:158".
_LINE_NUMBER = re.compile(r"(\.py):\d+$")

# One row as plain values, cheap to compare: id, state, state style, in state, pages,
# where, url. Texts are only built for the cells that changed.
Values = tuple[str, str, str, str, str, str, str]
_SLOTS = {"id": (0,), "state": (1, 2), "in": (3,), "pages": (4,), "where": (5,), "url": (6,)}


class WorkersTable(DataTable[Text]):
    """Rows are keyed by worker id and only ever added, so the cursor never jumps.

    Each frame only the rows on screen are looked at, and only cells whose text changed
    are written: the cost follows the table's height, not the worker count.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=False, show_cursor=True)
        self.origin = ""
        # Reproducible screenshots: no wall-clock figures and no source line numbers.
        self.frozen = False
        self._order: list[int] = []  # worker ids in row order
        self._shown: dict[int, Values] = {}  # what each row displays now
        self._where_width = 28
        self._url_width = 40

    def on_mount(self) -> None:
        for key, label, width in _FIXED:
            self.add_column(Text(label), key=key, width=width)
        for key, label in _FLEXIBLE:
            # Auto-width, but every cell is padded to the same width (see _pad), so the
            # column is exactly as wide as chosen in _fit and never re-measured per cell.
            self.add_column(Text(label), key=key)

    @property
    def selected_worker(self) -> int | None:
        if not self._order or not 0 <= self.cursor_row < len(self._order):
            return None
        return self._order[self.cursor_row]

    def visible_ids(self) -> set[int]:
        """The workers whose rows are on screen: the only ones worth a walk of the task."""
        top = int(self.scroll_y)
        return set(self._order[top : top + max(self.size.height, 1)])

    def show(self, workers: Sequence[WorkerView]) -> None:
        known = self._shown
        views = {view.id: view for view in workers}
        for view in workers:
            if view.id not in known:
                self._order.append(view.id)
                values = self._values(view)
                known[view.id] = values
                self.add_row(*self._cells(values), key=str(view.id))
        top = int(self.scroll_y)
        for worker_id in self._order[top : top + max(self.size.height, 1)]:
            shown = views.get(worker_id)
            if shown is None:
                continue
            values = self._values(shown)
            old = known[worker_id]
            if values == old:
                continue
            known[worker_id] = values
            cells = self._cells(values)
            changed = _changed_columns(old, values)
            for key, cell in zip(_KEYS, cells, strict=True):
                if key in changed:
                    self.update_cell(str(worker_id), key, cell)

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
            NO_FIGURE if self.frozen else duration(view.in_state),
            str(view.pages),
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

    def _cells(self, values: Values) -> tuple[Text, ...]:
        worker_id, state, style, in_state, pages, where, url = values
        return (
            Text(worker_id, justify="right"),
            Text(state, style=style),
            Text(in_state, justify="right"),
            Text(pages, justify="right"),
            _pad(Text(where, style="dim"), self._where_width),
            _pad(crawled(url, self._url_width), self._url_width),
        )

    def on_resize(self, _event: events.Resize) -> None:
        self._fit()

    def _fit(self) -> None:
        """Share the width left by the fixed columns between "where" and "url"."""
        pad = 2 * self.cell_padding
        fixed = sum(width + pad for _, _, width in _FIXED) + 2 * pad
        # Room for the scrollbar is kept even while there is none, so that its coming
        # never pushes the table wider than the widget.
        spare = self.size.width - self.styles.scrollbar_size_vertical - fixed
        # The URL gets a first share; "where" takes what is left, up to its most useful.
        where = max(_MIN_WHERE, min(_MAX_WHERE, spare - _URL_FIRST))
        url = max(_URL_FIRST, spare - where)
        if (where, url) == (self._where_width, self._url_width):
            return
        self._where_width, self._url_width = where, url
        # Rewriting every row is O(workers), but only on a resize.
        for worker_id, values in self._shown.items():
            cells = self._cells(values)
            self.update_cell(str(worker_id), "where", cells[4], update_width=True)
            self.update_cell(str(worker_id), "url", cells[5], update_width=True)
        if not self._shown:
            self.refresh()


def _pad(text: Text, width: int) -> Text:
    text.truncate(width, overflow="ellipsis", pad=True)
    return text


def _changed_columns(old: Values, new: Values) -> set[str]:
    return {key for key, slots in _SLOTS.items() if any(old[i] != new[i] for i in slots)}
