"""`enter` on a worker's row: that worker in full, over the panels. Its whole await
chain (every frame from its coroutine down to the future it waits on), its step and
scheduling-delay histograms, its time in each state and its last fetches; beside them,
where the screen is wide enough, the source around the chosen frame (↑ ↓ choose it).

Everything crawled or sent by a peer is drawn as Text, escaped, never as markup.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from crawlscope.engine.observe.code import Cursor, own_module, own_position, read_module
from crawlscope.engine.observe.contract import ObservedCrawl
from crawlscope.engine.observe.text import printable
from crawlscope.engine.observe.worker_detail import WorkerDetail, bucket_edges
from crawlscope.engine.observe.workers import WorkerView
from crawlscope.engine.records import FetchRecord

from ..format import WAITS, duration, short_url, state_style
from .source_pane import SourcePane
from .timing_text import millis

REFRESH_EVERY = 0.5  # seconds
LAST_FETCHES = 8
BAR = 30  # cells of the longest histogram bar
CODE_FITS = 120  # narrower than this, the code stays under each frame, one line each


def detail_text(
    worker_id: int,
    view: WorkerView | None,
    detail: WorkerDetail | None,
    fetches: Sequence[FetchRecord],
    clock: float,
    origin: str = "",
    chosen: int | None = None,
) -> Text:
    """The whole view as one Text; `detail` None for a source that keeps no more than
    the row's figures (a recording, a monitor)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    if view is None:
        out.append(f"worker {worker_id} is gone\n", "bold")
        return out
    out.append(f"worker {view.id}", "bold")
    out.append("  ")
    out.append(view.state.value, state_style(view.state))
    out.append(f" for {duration(view.time_in_state(clock))} · {view.pages} pages")
    if view.url:
        out.append(" · ")
        out.append(printable(short_url(view.url, origin), 200))
    out.append("\n\n")
    _chain(out, view, detail, chosen)
    _steps(out, view, detail)
    if detail is not None:
        _states(out, detail)
    _fetches(out, view.id, fetches, origin)
    return out


def _heading(out: Text, title: str) -> None:
    out.append(f"{title}\n", "bold underline")


def _chain(out: Text, view: WorkerView, detail: WorkerDetail | None, chosen: int | None) -> None:
    _heading(out, "await chain")
    if detail is None:
        where = printable(view.suspended_at) if view.suspended_at else view.state.value
        out.append(f"  {where}\n", "dim")
        # A position from elsewhere ("Crawler._work crawler.py:286"): the line from the
        # code shipped here, for crawlscope's own modules (nothing is read on request).
        found = _POSITION.search(view.suspended_at or "")
        if found:
            _code_line(out, "    ", own_module(found.group(1)), int(found.group(2)))
        out.append("  (the whole chain is read from the task: a live crawl only)\n\n", "dim")
        return
    if detail.task_state != "suspended":
        out.append(f"  {detail.task_state}\n", "dim")
    positions = detail.positions if len(detail.positions) == len(detail.chain) else ()
    for depth, frame in enumerate(detail.chain):
        lead = "  " + "  " * depth + ("↳ " if depth else "")
        out.append(f"{lead}{printable(frame)}\n", "reverse" if depth == chosen else "")
        if positions:
            _code_line(out, " " * (len(lead) + 2), *positions[depth][1:])
    if detail.awaits:
        lead = "  " + "  " * len(detail.chain) + f"{WAITS} "
        out.append(f"{lead}{printable(detail.awaits)}\n", "dim")
    out.append("\n")


_POSITION = re.compile(r" ([\w.]+\.py):(\d{1,6})$")


def _code_line(out: Text, lead: str, module: str, line: int) -> None:
    """The line of source a frame stands on, coloured as Python, under the frame: its
    module read from crawlscope's, aiohttp's or asyncio's own files (engine/observe/code.py)."""
    source = read_module(module) if module else None
    text = source.line(line) if source is not None else None
    if text is None:
        return
    out.append(f"{lead}{line:>5} │ ", "dim")
    out.append_text(Syntax(text.strip(), "python", theme="monokai").highlight(text.strip()))
    out.rstrip()
    out.append("\n")


def _steps(out: Text, view: WorkerView, detail: WorkerDetail | None) -> None:
    _heading(out, "steps on the loop")
    out.append(
        f"  step p50 {millis(view.step_p50)}  p99 {millis(view.step_p99)}"
        f"  max {millis(view.step_max)}   scheduling delay p99 {millis(view.delay_p99)}\n"
    )
    if detail is None:
        out.append("\n")
        return
    for title, counts, most in (
        ("step (one resume of its coroutine)", detail.step_counts, detail.step_max),
        ("scheduling delay (poll to step)", detail.delay_counts, detail.delay_max),
    ):
        out.append(f"  {title}, max {millis(most)}\n", "dim")
        _histogram(out, counts)
    out.append("\n")


def _histogram(out: Text, counts: Sequence[int]) -> None:
    used = [i for i, n in enumerate(counts) if n]
    if not used:
        out.append("    none yet\n", "dim")
        return
    edges = bucket_edges()
    most = max(counts)
    for i in range(used[0], used[-1] + 1):
        n = counts[i]
        bar = "█" * (max(1, round(BAR * n / most)) if n else 0)
        out.append(f"    ≤{millis(edges[i]):>6} ")
        out.append(f"{bar:<{BAR}}", "cyan")
        out.append(f" {n}\n")


def _states(out: Text, detail: WorkerDetail) -> None:
    _heading(out, "time in each state")
    for st in detail.states:
        out.append(f"  {st.state:<11}{duration(st.seconds):>7}  ({st.times} stays)\n")
    out.append("\n")


def _fetches(out: Text, worker_id: int, fetches: Sequence[FetchRecord], origin: str) -> None:
    _heading(out, "last fetches")
    mine = [r for r in fetches if r.worker == worker_id][-LAST_FETCHES:]
    if not mine:
        out.append("  none yet\n", "dim")
    for r in reversed(mine):
        status = str(r.status) if r.status is not None else (r.filtered or "failed")
        took = duration(max(r.t_end - r.t_start, 0.0))
        out.append(f"  {printable(status, 12):>6} {took:>6}  ")
        out.append(printable(short_url(r.url, origin), 200) + "\n")


Position = tuple[str, str, int]  # function, module path, line


def frame_positions(view: WorkerView | None, detail: WorkerDetail | None) -> list[Position]:
    """The positions the pane can show: every frame of the chain (a live crawl), else the
    worker's own position as its row carries it (a monitor's, the engine's module only)."""
    if detail is not None and len(detail.positions) == len(detail.chain):
        return list(detail.positions)
    found = own_position(view.own_at) if view is not None else None
    return [found] if found is not None and found[1].startswith("engine/") else []


def own_frame(positions: list[Position]) -> int | None:
    """The innermost frame of the engine's own code: where the pane opens."""
    own = [i for i, p in enumerate(positions) if p[1].startswith("engine/")]
    return own[-1] if own else (len(positions) - 1 if positions else None)


class WorkerDetailScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q", "dismiss", "Close", show=True),
        # Priority: the scrolled text would take the arrows for itself.
        Binding("up", "frame(-1)", "Outer frame", key_display="↑", priority=True),
        Binding("down", "frame(1)", "Inner frame", key_display="↓", priority=True),
    ]

    def __init__(self, source: ObservedCrawl, worker_id: int, origin: str = "") -> None:
        super().__init__()
        self.source = source
        self.worker_id = worker_id
        self.origin = origin
        self.chosen: int | None = None  # the frame the pane shows (its depth)
        self.picked = False  # chosen with ↑ ↓ (else the engine's innermost frame)
        self.positions: list[Position] = []

    def compose(self) -> ComposeResult:
        with Horizontal(id="detail-body") as body:
            body.border_title = f"worker {self.worker_id}"
            with VerticalScroll(id="detail-scroll"):
                yield Static(id="detail-text")
            yield SourcePane(id="detail-code")

    def on_mount(self) -> None:
        self.redraw()
        self.set_interval(REFRESH_EVERY, self.redraw)

    def text(self) -> Text:
        snap = self.source.snapshot({self.worker_id})
        view = next((v for v in snap.workers if v.id == self.worker_id), None)
        read = getattr(self.source, "worker_detail", None)
        detail = read(self.worker_id) if callable(read) else None
        fetches = self.source.recent_fetches()
        positions = frame_positions(view, detail)
        if positions != self.positions:
            # The worker moved on: the depth ↑ ↓ chose stays while the chain has it.
            picked = self.picked and self.chosen is not None and self.chosen < len(positions)
            self.positions = positions
            self.chosen = self.chosen if picked else own_frame(positions)
        chosen = self.chosen if detail is not None else None
        return detail_text(self.worker_id, view, detail, list(fetches), snap.elapsed,
                           self.origin, chosen)  # fmt: skip

    def redraw(self) -> None:
        self.query_one("#detail-text", Static).update(self.text())
        self.show_code()

    def show_code(self) -> None:
        """The source around the chosen frame, a cursor on every frame of the chain that
        stands in the same module (the chosen one named, the others in brackets)."""
        pane = self.query_one(SourcePane)
        pane.display = self.size.width >= CODE_FITS
        if not pane.display:
            return
        name = f"w{self.worker_id}"
        if self.chosen is None or not self.positions:
            pane.border_title = "code"
            pane.show(None, [], {}, None, "no position: the worker's task is not suspended")
            return
        function, module, line = self.positions[self.chosen]
        source = read_module(module)
        cursors = [
            Cursor(name, m, n, f, 0 if i == self.chosen else 1)
            for i, (f, m, n) in enumerate(self.positions)
            if m == module
        ]
        note = "" if source is not None and source.line(line) is not None else (
            f"{module}:{line} is not a line of the code this version has")  # fmt: skip
        pane.border_title = f"{module} · {function}"
        pane.show(source, cursors, {name: "cyan"}, name, note)

    def action_frame(self, step: int) -> None:
        if self.positions and self.chosen is not None:
            self.chosen = min(max(self.chosen + step, 0), len(self.positions) - 1)
            self.picked = True
            self.redraw()
