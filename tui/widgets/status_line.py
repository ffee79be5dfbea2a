"""One line on top: the crawl's phase, elapsed time, pages fetched, workers, slow motion,
and the site."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual.geometry import Region

from crawlscope.engine.observe.snapshot import Phase, StateCounts
from crawlscope.engine.observe.text import printable

from ..format import NO_FIGURE, clock, count
from .text_lines import Line, OneLine, Piece, plain_of

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
    pages: int | None = None  # fetches finished, done or failed; None: not shown
    warnings: int = 0  # lints raised so far (`w` lists them)
    flight: str = ""  # the last flight saved (its file's name), once one is


class StatusLine(OneLine):
    """One line, redrawn only when its text or colours change (not when a figure it does
    not show moves), from a Strip of plain Segments."""

    DEFAULT_CSS = """
    StatusLine {
        height: 1;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view: StatusView | None = None
        self._states: StateCounts | None = None  # None: not told yet
        self._site = ("", "")  # the site, and the site as drawn
        self._line = self._pieces()

    def show(self, view: StatusView) -> None:
        self._view = view
        self._update()

    def show_states(self, states: StateCounts) -> None:
        """What the live workers are doing, counted as the workers table shows them."""
        self._states = states
        self._update()

    def _update(self) -> None:
        line = self._pieces()
        if line == self._line:
            return
        old, self._line = self._line, line
        # Most frames move only the clock and the pages: only the cells from the first to
        # the last that changed are composited and written to the terminal again.
        start, end = changed_cells(old, line)
        width = self.size.width
        if start >= width:
            self.repaint()  # past the edge, but a word cut there may break sooner now
        else:
            self.repaint(Region(start, 0, (width if end is None else end) - start, 1))

    def render(self) -> Text:
        """The line as text (what is drawn, before it is cut to the width)."""
        text = Text(no_wrap=True, overflow="ellipsis")
        for piece, style in self._line:
            text.append(piece, style)
        return text

    def _pieces(self) -> Line:
        view = self._view
        pieces: list[Piece] = []
        add = pieces.append
        if view is None or view.phase is None:
            add((" STARTING ", PHASE_STYLE[Phase.IDLE]))
        else:
            add((f" {view.phase.value.upper()} ", PHASE_STYLE[view.phase]))
        if view is None:
            return tuple(pieces)
        elapsed = NO_FIGURE if view.elapsed is None else clock(view.elapsed)
        add((f"  {elapsed}", "bold"))
        if view.pages is not None:
            # Beside the clock: the two figures that move every frame of a busy crawl.
            noun = "page" if view.pages == 1 else "pages"
            add((f"   {count(view.pages)} {noun}", "bold"))
        # Modes and errors before the counts, which grow with the states there are and
        # would push them out of a narrow terminal.
        if view.slowmo:
            add((f"   slow motion {view.slowmo:g}s per step", "bold magenta"))
        if view.note:
            add((f"   {view.note}", "bold red"))
        if view.warnings:
            noun = "warning" if view.warnings == 1 else "warnings"
            add((f"   ⚠ {count(view.warnings)} {noun} (w)", "bold yellow"))
        if view.flight:
            add((f"   flight saved: {printable(view.flight, 80)}", "yellow"))
        noun = "worker" if view.live_workers == 1 else "workers"
        add((f"   {view.live_workers} {noun}", "bold"))
        if self._states is None:
            add((f" ({view.busy_workers} busy)", "dim"))
        elif self._states:
            counts = " · ".join(f"{n} {state.value}" for state, n in self._states)
            add((f": {counts}", "dim"))
        if view.delay:
            add((f"   {view.delay}", "bold yellow"))
        add(("   ", ""))
        # Crawled text, escaped and shown literally; the same on every frame, escaped once.
        if self._site[0] != view.site:
            self._site = (view.site, printable(view.site))
        add((self._site[1], "dim underline"))
        return tuple(pieces)


def changed_cells(old: Line, new: Line) -> tuple[int, int | None]:
    """The cells [start, end) where `new` is drawn differently from `old`, text or colour;
    end None: to the end of the line (its length changed, so what follows moved)."""
    a = [(char, style) for text, style in old for char in text]
    b = [(char, style) for text, style in new for char in text]
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    x = cell_len("".join(char for char, _ in b[:start]))
    if len(a) != len(b) or cell_len(plain_of(old)) != cell_len(plain_of(new)):
        return x, None
    stop = len(b)
    while stop > start and a[stop - 1] == b[stop - 1]:
        stop -= 1
    return x, x + cell_len("".join(char for char, _ in b[start:stop]))
