"""A scrolling list of lines with a cursor that the arrow, page, home and end keys move:
what the workers table and the redirect chains share."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.scroll_view import ScrollView

from .held import Repaints


class CursorLines(ScrollView, Repaints, can_focus=True):
    """A subclass keeps `_cursor` (a line index), says how many lines it has and how
    many are on screen, and moves the cursor in `_move` (clamping, redrawing)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "cursor_up", "Up", show=False),
        Binding("down", "cursor_down", "Down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("home", "first", "First", show=False),
        Binding("end", "last", "Last", show=False),
    ]

    _cursor: int

    @property
    def _top(self) -> int:
        """The first line on screen."""
        return int(self.scroll_y)

    @property
    def _page(self) -> int:
        """Lines on screen."""
        return max(self.size.height, 1)

    if TYPE_CHECKING:  # each subclass defines these; declared for the type checker only

        def _line_count(self) -> int: ...

        def _move(self, row: int) -> None: ...

    def _scroll_to_cursor(self) -> None:
        top, page = self._top, self._page
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True)
        elif self._cursor >= top + page:
            self.scroll_to(y=self._cursor - page + 1, animate=False, immediate=True)

    def action_cursor_up(self) -> None:
        self._move(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self._move(self._cursor + 1)

    def action_page_up(self) -> None:
        self._move(self._cursor - self._page)

    def action_page_down(self) -> None:
        self._move(self._cursor + self._page)

    def action_first(self) -> None:
        self._move(0)

    def action_last(self) -> None:
        self._move(self._line_count() - 1)
