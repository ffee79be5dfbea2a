"""One line on top: the crawl's phase, elapsed time, workers, slow motion, and the site."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from crawlscope.engine.snapshot import Phase
from crawlscope.engine.workers import WorkerState, WorkerView

from ..format import NO_FIGURE, clock, crawled

PHASE_STYLE: dict[Phase, str] = {
    Phase.IDLE: "bold black on grey70",
    Phase.RUNNING: "bold black on green",
    Phase.PAUSED: "bold black on yellow",
    Phase.STOPPING: "bold white on dark_orange",
    Phase.FINISHED: "bold white on blue",
    Phase.STOPPED: "bold white on red",
}


@dataclass(frozen=True, slots=True)
class StatusView:
    phase: Phase | None  # None: the crawler is not built yet (the demo site is starting)
    elapsed: float | None  # None: hide it (frozen clock)
    live_workers: int
    busy_workers: int  # holding a URL; drawn only until the rows' states are known
    slowmo: float
    site: str
    note: str = ""  # "quitting…", an error
    delay: str = ""  # the Crawl-delay that slows the crawl, if a host asked for one


StateCounts = tuple[tuple[WorkerState, int], ...]


def state_counts(workers: Iterable[WorkerView]) -> StateCounts:
    """The live workers by state, in the words their rows show and in the engine's order
    of states (so the line does not reorder itself as the counts move)."""
    counts = Counter(w.state for w in workers if w.alive)
    return tuple((state, counts[state]) for state in WorkerState if counts[state])


class StatusLine(Widget):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view: StatusView | None = None
        self._states: StateCounts | None = None  # None: not told yet

    def show(self, view: StatusView) -> None:
        if view != self._view:
            self._view = view
            self.refresh()

    def show_states(self, states: StateCounts) -> None:
        """What the live workers are doing, counted as the workers table shows them."""
        if states != self._states:
            self._states = states
            self.refresh()

    def render(self) -> Text:
        view = self._view
        line = Text(no_wrap=True, overflow="ellipsis")
        if view is None or view.phase is None:
            line.append(" STARTING ", PHASE_STYLE[Phase.IDLE])
        else:
            line.append(f" {view.phase.value.upper()} ", PHASE_STYLE[view.phase])
        if view is None:
            return line
        elapsed = NO_FIGURE if view.elapsed is None else clock(view.elapsed)
        line.append(f"  {elapsed}", "bold")
        # Modes and errors before the counts, which grow with the states there are and
        # would push them out of a narrow terminal.
        if view.slowmo:
            line.append(f"   slow motion {view.slowmo:g}s per step", "bold magenta")
        if view.note:
            line.append(f"   {view.note}", "bold red")
        noun = "worker" if view.live_workers == 1 else "workers"
        line.append(f"   {view.live_workers} {noun}", "bold")
        if self._states is None:
            line.append(f" ({view.busy_workers} busy)", "dim")
        elif self._states:
            counts = " · ".join(f"{n} {state.value}" for state, n in self._states)
            line.append(f": {counts}", "dim")
        if view.delay:
            line.append(f"   {view.delay}", "bold yellow")
        line.append("   ")
        line.append_text(crawled(view.site, style="dim underline"))
        return line
