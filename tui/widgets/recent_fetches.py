"""The latest fetches, newest first: status, size, time, URL."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

from rich.style import Style
from rich.text import Text
from textual import events
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip

from crawlscope.engine.observe.text import printable
from crawlscope.engine.records import FetchRecord

from ..format import NO_FIGURE, duration, short_url, size
from .held import Repaints
from .text_lines import Line, Piece, base_style, strip_of

_STATUS_STYLE = {2: "green", 3: "cyan", 4: "yellow"}
# Plain: drawn through Rich's Text.render, its "dim italic" never showed.
_NONE_YET: Line = (("no fetch yet", ""),)


def status_piece(record: FetchRecord) -> Piece:
    if record.status is None:
        return ("ERR", "bold red")
    return (str(record.status), _STATUS_STYLE.get(record.status // 100, "red"))


class RecentFetches(Repaints):
    """Draws only as many records as fit; the engine's bounded deque holds the rest.

    Line by line (Textual's line API): each record's line is built once, as a Strip of
    plain Segments, and kept while the record is on screen. New records shift every line
    down, so a redraw composes the kept strips and builds only the new records' lines.
    """

    class Picked(Message):
        """A fetch clicked on: its screen opens the fetch's waterfall."""

        def __init__(self, record: FetchRecord) -> None:
            super().__init__()
            self.record = record

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.origin = ""
        self.frozen = False
        self._records: list[FetchRecord] = []
        self._newest: FetchRecord | None = None
        # id(record) -> (record, line); the record is kept so an id is never reused.
        self._lines: dict[int, tuple[FetchRecord, Strip]] = {}
        # What every kept line depends on besides its record: when it moves, all go.
        self._look: tuple[Style, int, str, bool] = (Style(), 0, "", False)

    def show(self, recent: Iterable[FetchRecord], newest: FetchRecord | None) -> None:
        """`recent` newest first; nothing is done unless a new record came in."""
        if newest is self._newest:
            return
        self._newest = newest
        before = self._records
        self._records = list(islice(recent, max(self.size.height, 1)))
        shown = {id(record) for record in self._records}
        self._lines = {key: line for key, line in self._lines.items() if key in shown}
        changed = [
            y
            for y in range(max(len(before), len(self._records), 1))
            if y >= len(before) or y >= len(self._records) or before[y] is not self._records[y]
        ]
        if changed:
            top = changed[0]
            self.repaint(Region(0, top, self.size.width, changed[-1] - top + 1))

    def record_at(self, y: int) -> FetchRecord | None:
        """The fetch drawn on line `y`, if one is."""
        return self._records[y] if 0 <= y < len(self._records) else None

    def on_click(self, event: events.Click) -> None:
        at = event.get_content_offset(self)
        record = None if at is None else self.record_at(at.y)
        if record is not None:
            self.post_message(self.Picked(record))

    def on_resize(self) -> None:
        # Taller than before: the records taken last time do not fill it.
        self._newest = None

    def render_lines(self, crop: Region) -> list[Strip]:
        look = (base_style(self), self.size.width, self.origin, self.frozen)
        if look != self._look:
            self._look = look
            self._lines.clear()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        base, width, _, _ = self._look
        if y >= len(self._records):
            if y == 0:
                return self._strip(_NONE_YET)
            return Strip.blank(width, base)
        record = self._records[y]
        cached = self._lines.get(id(record))
        if cached is not None and cached[0] is record:
            return cached[1]
        strip = self._strip(self._line(record, timed=width >= 36))
        self._lines[id(record)] = (record, strip)
        return strip

    def _strip(self, line: Line) -> Strip:
        base, width, _, _ = self._look
        strip = strip_of(line, base)
        if strip.cell_length > width:
            # Rare (a long URL or error): Rich cuts it, ending in an ellipsis.
            text = Text()
            for piece, style in line:
                text.append(piece, style)
            text.truncate(width, overflow="ellipsis")
            segments = [s for s in text.render(self.app.console) if s.text != "\n"]
            strip = Strip(segments).apply_style(base)
        return strip.adjust_cell_length(width, base)

    def _line(self, record: FetchRecord, timed: bool) -> Line:
        line: list[Piece] = [status_piece(record), (f" {size(record.size):>6} ", "dim")]
        if timed:  # narrower, the URL matters more than the time
            spent = NO_FIGURE if self.frozen else duration(record.t_end - record.t_start)
            line.append((f"{spent:>5} ", "dim"))
        # Crawled text, escaped and shown literally.
        line.append((printable(short_url(record.url, self.origin)), ""))
        if record.next_url:
            target = short_url(record.next_url, self.origin)
            line += [(" → ", "dim"), (printable(target), "")]
        elif record.exception:
            line += [(" ", ""), (printable(record.exception), "red")]
        return tuple(line)
