"""The latest fetches, newest first: status, size, time, URL."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import islice

from rich.text import Text
from textual.strip import Strip
from textual.widget import Widget

from crawlscope.engine.records import FetchRecord

from ..format import NO_FIGURE, crawled, duration, short_url, size


def status_text(record: FetchRecord) -> Text:
    if record.status is None:
        return Text("ERR", "bold red")
    status = record.status
    styles = {2: "green", 3: "cyan", 4: "yellow"}
    return Text(str(status), styles.get(status // 100, "red"))


class RecentFetches(Widget):
    """Draws only as many records as fit; the engine's bounded deque holds the rest.

    Line by line (Textual's line API), each record's line rendered once and kept: on a
    busy crawl every frame brings new records, but only their lines are new work.
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.origin = ""
        self.frozen = False
        self._records: list[FetchRecord] = []
        self._newest: FetchRecord | None = None
        # id(record) -> (record, width, line); the record is kept so an id is never reused.
        self._lines: dict[int, tuple[FetchRecord, int, Strip]] = {}

    def show(self, recent: Iterable[FetchRecord], newest: FetchRecord | None) -> None:
        """`recent` newest first; nothing is done unless a new record came in."""
        if newest is self._newest:
            return
        self._newest = newest
        self._records = list(islice(recent, max(self.size.height, 1)))
        shown = {id(record) for record in self._records}
        self._lines = {key: line for key, line in self._lines.items() if key in shown}
        self.refresh()

    def on_resize(self) -> None:
        # Taller than before: the records taken last time do not fill it.
        self._newest = None

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        style = self.rich_style
        if y >= len(self._records):
            if y == 0:
                return self._strip(Text("no fetch yet", "dim italic"), width)
            return Strip.blank(width, style)
        record = self._records[y]
        cached = self._lines.get(id(record))
        if cached is not None and cached[0] is record and cached[1] == width:
            return cached[2]
        strip = self._strip(self._line(record, timed=width >= 36), width)
        self._lines[id(record)] = (record, width, strip)
        return strip

    def _strip(self, text: Text, width: int) -> Strip:
        text.truncate(width, overflow="ellipsis")
        segments = [s for s in text.render(self.app.console) if s.text != "\n"]
        return Strip(segments).adjust_cell_length(width).apply_style(self.rich_style)

    def _line(self, record: FetchRecord, timed: bool) -> Text:
        line = Text().append_text(status_text(record))
        line.append(f" {size(record.size):>6} ", "dim")
        if timed:  # narrower, the URL matters more than the time
            spent = NO_FIGURE if self.frozen else duration(record.t_end - record.t_start)
            line.append(f"{spent:>5} ", "dim")
        line.append_text(crawled(short_url(record.url, self.origin)))
        if record.next_url:
            target = short_url(record.next_url, self.origin)
            line.append(" → ", "dim").append_text(crawled(target))
        elif record.exception:
            line.append(" ").append_text(crawled(record.exception, style="red"))
        return line
