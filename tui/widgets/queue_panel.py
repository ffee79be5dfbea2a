"""The queue: its size, join()'s unfinished-task counter and why join() still waits,
where every seen URL is, pages/s, and the last minute as sparklines."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Label, Sparkline, Static

from crawlscope.engine.snapshot import Accounting, Phase

from ..format import count


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


class QueuePanel(Vertical):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown = Text()
        self._rate = ""
        self._figures = Static(id="queue-figures")
        self._rate_label = Label("pages/s", id="rate-label", classes="spark-label")
        self._queue_spark = Sparkline([], id="queue-spark")
        self._rate_spark = Sparkline([], id="rate-spark")

    def compose(self) -> ComposeResult:
        yield self._figures
        with Horizontal(classes="spark-row"):
            yield Label("queue", classes="spark-label")
            yield self._queue_spark
        with Horizontal(classes="spark-row"):
            yield self._rate_label
            yield self._rate_spark

    def show(self, view: QueueView) -> None:
        a = view.accounting
        wide = self.size.width >= 34
        text = Text()
        text.append("queued     ", "dim").append(f"{count(a.queued):<6}", "bold")
        text.append(" held ", "dim").append(count(a.held), "bold")
        text.append("\nunfinished ", "dim").append(f"{count(view.unfinished):<6}", "bold")
        text.append(" ← join() counts it" if wide else " ← join()", "dim")
        text.append("\n").append(why_join_waits(view), "italic")
        text.append("\ndone ", "dim").append(count(a.done), "green")
        text.append("  failed ", "dim").append(count(a.failed), "red" if a.failed else "")
        text.append("\nfiltered ", "dim").append(count(a.filtered))
        text.append("  unfetched ", "dim").append(count(a.unfetched))
        text.append("\nseen ", "dim").append(count(a.seen))
        if a.balanced:
            text.append("  ✓ all accounted for" if wide else "  ✓ balanced", "green")
        else:
            text.append("  ✗ MISMATCH", "bold red")
        if text != self._shown:  # an update re-lays the panel out; skip it when nothing moved
            self._shown = text
            # Its height is fixed in the TCSS, so no layout pass is needed: a frame's
            # worth of layout for the whole screen costs more than the rest of the frame.
            self._figures.update(text, layout=False)
        if view.rate is None:
            rate = "pages/s"
        elif view.rate_is_average:
            rate = f"{view.rate:.0f}/s avg"
        else:
            rate = f"{view.rate:.1f}/s" if view.rate < 1000 else f"{view.rate:.0f}/s"
        if rate != self._rate:
            self._rate = rate
            self._rate_label.update(rate, layout=False)

    def show_history(self, queue_sizes: list[float], throughputs: list[float]) -> None:
        self._queue_spark.data = queue_sizes
        self._rate_spark.data = throughputs
