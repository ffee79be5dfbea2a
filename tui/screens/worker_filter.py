"""What every panels screen offers to find workers among many: `f`, a filter on the workers
table by state, host or URL text (as typed, case aside), and `o`, the rows in the order of
their time in their state, the longest first. While either is on, a frame reads every
worker's view, not only the rows on screen: what is filtered out must still be looked at."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Static

from crawlscope.engine.observe.snapshot import Snapshot
from crawlscope.engine.observe.workers import WorkerView

from ..widgets.workers_table import WorkersTable

SORTS = ("worker", "time in state")


def matches(view: WorkerView, text: str) -> bool:
    """Whether `view`'s state or URL holds `text` (lower-cased already)."""
    return text in view.state.value or (view.url is not None and text in view.url.lower())


class FilterScreen(ModalScreen[None]):
    """One line to type the filter into: the table follows each key; enter or escape
    closes it, the filter staying as typed (empty: every worker)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close")]
    DEFAULT_CSS = """
    FilterScreen { align: center bottom; }
    #filter-box { width: 80%; max-width: 100; height: auto; border: round $accent;
                  background: $surface; margin-bottom: 2; }
    """

    def __init__(self, panels: WorkerFilter) -> None:
        super().__init__()
        self.panels = panels

    def compose(self) -> ComposeResult:
        from textual.containers import Vertical

        with Vertical(id="filter-box"):
            yield Static("workers whose state, host or URL holds (empty: all):")
            yield Input(self.panels.worker_filter, id="filter-input")

    def on_input_changed(self, event: Input.Changed) -> None:
        self.panels.set_worker_filter(event.value)

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.dismiss()

    def action_close(self) -> None:
        self.dismiss()


class WorkerFilter(Screen[None]):
    worker_filter = ""  # as typed
    worker_sort = SORTS[0]

    def filtering(self) -> bool:
        return bool(self.worker_filter.strip()) or self.worker_sort != SORTS[0]

    def rows_wanted(self, shown: set[int]) -> set[int] | None:
        """The workers a frame's snapshot must bring: every one while filtering."""
        return None if self.filtering() else shown

    def rows_shown(self, snap: Snapshot) -> Sequence[int] | None:
        """The rows the table shows: the snapshot's all, or those the filter keeps, in
        the order asked for."""
        if not self.filtering():
            return snap.worker_ids
        text = self.worker_filter.strip().lower()
        views = [v for v in snap.workers if not text or matches(v, text)]
        if self.worker_sort == "time in state":
            views.sort(key=lambda v: (v.since, v.id))  # entered longest ago first
        return [v.id for v in views]

    def workers_title(self, snap: Snapshot) -> str:
        if not self.filtering():
            return "workers"
        shown = self.rows_shown(snap) or ()
        said = f' holding "{self.worker_filter.strip()}"' if self.worker_filter.strip() else ""
        order = f", by {self.worker_sort}" if self.worker_sort != SORTS[0] else ""
        return f"workers{said}: {len(shown)} of {len(snap.workers)}{order} (f, o)"

    def set_worker_filter(self, text: str) -> None:
        self.worker_filter = text[:200]
        self.refilter()

    def show_rows(self, table: WorkersTable, snap: Snapshot) -> None:
        """The table's rows from `snap`, filtered and ordered; its title says how."""
        table.show(snap.workers, snap.elapsed, self.rows_shown(snap))
        title = self.workers_title(snap)
        if table.border_title != title:
            table.border_title = title

    def redraw(self, table: bool = True, pulse: bool = False, rows: bool = False) -> None:
        """The panels' frame (screens/panels.py)."""

    def refilter(self) -> None:
        self.redraw()

    def action_filter_workers(self) -> None:
        self.app.push_screen(FilterScreen(self))

    def action_sort_workers(self) -> None:
        self.worker_sort = SORTS[(SORTS.index(self.worker_sort) + 1) % len(SORTS)]
        self.refilter()
