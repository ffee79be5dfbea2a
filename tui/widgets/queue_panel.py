"""The queue: its size, join()'s unfinished-task counter and why join() still waits,
where every seen URL is, pages/s, and the last minute as sparklines."""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Label, Sparkline

from crawlscope.engine.observe.snapshot import Accounting, Phase

from ..format import count
from .held import Repaints
from .text_lines import Line, OneLine, base_style, wrapped


@dataclass(frozen=True, slots=True)
class QueueView:
    """What the panel shows, gathered by the app from one snapshot."""

    phase: Phase
    accounting: Accounting
    unfinished: int
    live_workers: int
    paused_workers: int  # live workers held by a pause (all, or their own)
    rate: float | None  # pages/s; None when it cannot be shown
    rate_is_average: bool  # the crawl is over: the rate is over the whole crawl


def why_join_waits(view: QueueView) -> str:
    """One short line, in the chapter's terms, on what join() is waiting for."""
    a = view.accounting
    if view.phase is Phase.IDLE:
        return "crawl() has not started yet"
    if view.phase is Phase.FINISHED:
        return "join() returned: every get() had its task_done()"
    if view.phase in (Phase.STOPPING, Phase.STOPPED):
        return f"stop() came first; {count(a.queued + a.held)} URLs were left"
    if view.unfinished == 0:
        return "join() returns: the counter is 0"
    if view.live_workers == 0:
        return f"join() waits: {count(a.queued)} queued, no worker to get() them (a adds one)"
    if view.phase is Phase.PAUSED:
        held = f", {count(a.held)} held" if a.held else ""
        return f"join() waits: paused, {count(a.queued)} queued{held}"
    if a.held and a.queued:
        return f"join() waits: {count(a.held)} in flight, {count(a.queued)} queued"
    if a.held:
        return f"join() waits: {count(a.held)} in flight, none queued"
    if view.paused_workers >= view.live_workers:
        return f"join() waits: {count(a.queued)} queued, every worker paused"
    return f"join() waits: {count(a.queued)} queued, not taken yet"


class QueueFigures(Repaints):
    """The panel's figures, a few lines of text: only the rows whose text changed are
    redrawn, each from a Strip kept until its line changes."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._lines: tuple[Line, ...] = ()
        # Each line's rows (a line longer than the width wraps), for the look below.
        self._rows_by_line: dict[Line, list[Strip]] = {}
        self._rows: list[Strip] | None = None  # all rows in order; None: to be gathered
        # What each row shows: its line and which of its rows it is.
        self._row_keys: list[tuple[Line, int]] = []
        self._look: tuple[Style, int] = (Style(), 0)

    def show_lines(self, lines: tuple[Line, ...]) -> None:
        if lines == self._lines:
            return
        self._lines = lines
        self._rows = None
        self._rows_by_line = {
            line: self._rows_by_line[line] for line in lines if line in self._rows_by_line
        }
        keys = [(line, k) for line in lines for k in range(len(self._wrap(line)))]
        width = self.size.width
        for y in range(max(len(keys), len(self._row_keys))):
            if y >= len(keys) or y >= len(self._row_keys) or keys[y] != self._row_keys[y]:
                self.repaint(Region(0, y, width, 1))
        self._row_keys = keys

    def _wrap(self, line: Line) -> list[Strip]:
        rows = self._rows_by_line.get(line)
        if rows is None:
            base, width = self._look
            # Broken between phrases: "join() waits: 10 in flight," then "277 queued".
            rows = self._rows_by_line[line] = wrapped(line, width, base, phrases=True)
        return rows

    def render_lines(self, crop: Region) -> list[Strip]:
        look = (base_style(self), self.size.width)
        if look != self._look:
            self._look = look
            self._rows_by_line.clear()
            self._rows = None
            # A new width wraps the lines anew: the rows drawn now are the ones the next
            # show_lines must compare with. Kept from the old width, a line that moved up
            # a row onto where the same line had wrapped would be taken as drawn already
            # (after 140x40 to 80x24: "counts it" left where "join() waits" belonged).
            self._row_keys = [(ln, k) for ln in self._lines for k in range(len(self._wrap(ln)))]
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        if self._rows is None:
            self._rows = [row for line in self._lines for row in self._wrap(line)]
        if y < len(self._rows):
            return self._rows[y]
        base, width = self._look
        return Strip.blank(width, base)


class RateLabel(OneLine):
    """The pages/s figure beside its sparkline, set to the right: it moves nearly every
    frame, so its one line is drawn from a Strip of plain Segments."""

    DEFAULT_CSS = """
    RateLabel {
        height: 1;
    }
    """
    RIGHT = True

    def __init__(self, text: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._line = ((text, ""),)

    def update(self, text: str) -> None:
        line = ((text, ""),)
        if line != self._line:
            self._line = line
            self.repaint()


class HistoryLine(Sparkline, Repaints):
    """A sparkline of the last minute, drawn by the frame that gives it new samples (see
    held.py): through Textual's reactive it was a screen update of its own, once a second,
    and made that frame's own drawing wait for it."""

    def show(self, values: list[float]) -> None:
        self.set_reactive(Sparkline.data, values)
        self.repaint()


class QueuePanel(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._figures = QueueFigures(id="queue-figures")
        self._rate_label = RateLabel("pages/s", id="rate-label", classes="spark-label")
        self._queue_spark = HistoryLine([], id="queue-spark")
        self._rate_spark = HistoryLine([], id="rate-spark")

    def compose(self) -> ComposeResult:
        yield self._figures
        with Horizontal(classes="spark-row"):
            yield Label("queue", classes="spark-label")
            yield self._queue_spark
        with Horizontal(classes="spark-row"):
            yield self._rate_label
            yield self._rate_spark

    def show(self, view: QueueView) -> None:
        self._figures.show_lines(figures(view, wide=self.size.width >= 34))
        if view.rate is None:
            rate = "pages/s"
        elif view.rate_is_average:
            rate = f"{view.rate:.0f}/s avg"
        else:
            rate = f"{view.rate:.1f}/s" if view.rate < 1000 else f"{view.rate:.0f}/s"
        self._rate_label.update(rate)

    def show_history(self, queue_sizes: list[float], throughputs: list[float]) -> None:
        self._queue_spark.show(queue_sizes)
        self._rate_spark.show(throughputs)


def figures(view: QueueView, wide: bool) -> tuple[Line, ...]:
    """The panel's lines of figures; `wide` when the panel has room for the longer words."""
    a = view.accounting
    if a.balanced:
        balance = ("  ✓ all accounted for" if wide else "  ✓ balanced", "green")
    else:
        balance = ("  ✗ MISMATCH", "bold red")
    return (
        (
            ("queued     ", "dim"),
            (f"{count(a.queued):<6}", "bold"),
            (" held ", "dim"),
            (count(a.held), "bold"),
        ),
        (
            ("unfinished ", "dim"),
            (f"{count(view.unfinished):<6}", "bold"),
            (" ← join() counts it" if wide else " ← join()", "dim"),
        ),
        ((why_join_waits(view), "italic"),),
        (
            ("done ", "dim"),
            (count(a.done), "green"),
            ("  failed ", "dim"),
            (count(a.failed), "red" if a.failed else ""),
        ),
        (
            ("filtered ", "dim"),
            (count(a.filtered), ""),
            ("  unfetched ", "dim"),
            (count(a.unfetched), ""),
        ),
        (("seen ", "dim"), (count(a.seen), ""), balance),
    )
