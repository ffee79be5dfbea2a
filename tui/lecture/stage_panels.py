"""The lecture screen's panels, drawn from a stage snapshot and nothing else.

One screen shape serves a stage crawling here (stage_screen.py), a recorded lecture
(stage_replay.py) and a lecture watched from another process (stage_watched.py): each
hands `show()` a `StageSnapshot` (engine/lecture/snapshot.py) and the word for what it is
doing. A recording or a viewer may move from stage 1 to stage 2; the panels then are
composed again for the other stage.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Container, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from crawlscope.engine.lecture.snapshot import Engine, StageSnapshot

from ..widgets.keys_footer import KeysFooter
from .widgets.loop_panel import LoopPanel
from .widgets.queue_insides import QueueInsides
from .widgets.step_narration import StepNarration
from .widgets.task_chains import TaskChains

STAGE_TITLES = {
    Engine.CALLBACKS: "stage 1 · callbacks on a selector loop",
    Engine.GENERATORS: "stage 2 · generator coroutines, a Future and a Task",
}
# The same, for a narrow terminal.
SHORT_TITLES = {Engine.CALLBACKS: "stage 1 · callbacks", Engine.GENERATORS: "stage 2 · generators"}
# Narrower than this (columns), the status line and the footer are made compact.
NARROW = 100
# The main TUI's styles, for a lecture app that shows stage 3 on the crawl's screens.
APP_CSS = Path(__file__).parent.parent / "app.tcss"
Words = list[tuple[str, str]]  # (text, style) pieces of the status line


class StagePanels(Screen[None]):
    """The status line, a stage's intro, its loop or tasks, its queue, the narration."""

    def __init__(
        self,
        engine: str,
        *,
        intro: str = "",
        intros: Mapping[str, str] | None = None,
        reproducible: bool = False,
    ) -> None:
        """`intros`: each stage's paragraph, for a screen that moves between stages (else
        `intro` alone). `reproducible` leaves out the figures that differ from run to
        run (fds, timer figures, line offsets), for snapshots."""
        super().__init__()
        self.engine = Engine(engine)  # ValueError for an engine with no stage screen
        self.intros = intros
        self.intro = intro if intros is None else intros.get(self.engine, "")
        self.reproducible = reproducible
        self.shown: StageSnapshot | None = None  # the snapshot on screen now

    def compose(self) -> ComposeResult:
        yield Static(id="stage-status")
        if self.intro:
            yield Static(Text(self.intro), id="stage-intro")
        with Container(id="stage-panels"):
            if self.engine is Engine.GENERATORS:
                chains = TaskChains(id="stage-main")
                chains.border_title = "tasks: each generator's yield-from chain (figure 5.3)"
                chains.frozen = self.reproducible
                main: TaskChains | LoopPanel = chains
            else:
                main = LoopPanel(id="stage-main")
                main.border_title = "the event loop: registered callbacks and timers"
                main.frozen = self.reproducible
            yield main
            with Vertical(id="stage-side"):
                queue = QueueInsides(id="stage-queue")
                queue.border_title = (
                    "the queue's insides"
                    if self.engine is Engine.GENERATORS
                    else ("the URLs to do (stage 1 has no Queue)")
                )
                yield queue
                told = StepNarration(id="stage-narration")
                told.border_title = "what just happened"
                yield told
        yield from self.compose_bar()
        yield KeysFooter()

    def compose_bar(self) -> ComposeResult:
        """A line above the footer, for a screen that has one (a replay's transport)."""
        yield from ()

    async def show_stage(self, snap: StageSnapshot) -> None:
        """Show `snap`, first composing the panels again if it is of another stage."""
        if snap.engine is not self.engine:
            self.engine = snap.engine
            if self.intros is not None:
                self.intro = self.intros.get(self.engine, "")
            self.shown = None
            await self.recompose()
        self.show(snap)

    def show(self, snap: StageSnapshot, note: str | None = None) -> None:
        """Draw `snap`; `note` (None: what the snapshot itself says) heads the story."""
        self.shown = snap
        main = self.query_one("#stage-main")
        if isinstance(main, TaskChains):
            main.show(snap.tasks)
        elif isinstance(main, LoopPanel):
            main.show(snap.loop)
        self.query_one(QueueInsides).show(snap.queue)
        told = self.query_one(StepNarration)
        told.show(snap.steps, snap.recent, ending(snap) if note is None else note)
        self.query_one("#stage-status", Static).update(self.status_line())
        self.refresh_bindings()

    def status_words(self) -> tuple[str, str, Words]:
        """The one state word, its style, and what follows the step count."""
        return "", "", []

    def status_line(self) -> Text:
        """One state word, then what a lecturer reads off it, most needed first: on a
        narrow terminal the line is cut from the right."""
        narrow = self.size.width < NARROW
        gap = "  " if narrow else "   "
        word, style, after = self.status_words()
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f" {word} ", style)
        snap = self.shown
        line.append(f"{gap}step {snap.steps if snap else 0}", "bold")
        for text, piece_style in after:
            line.append(text, piece_style)
        line.append(gap + (SHORT_TITLES if narrow else STAGE_TITLES)[self.engine], "bold")
        if snap is not None:
            a = snap.accounting
            line.append(f"{gap}{a.done} done  {a.failed} failed  {a.queued} queued", "dim")
        return line

    def on_resize(self) -> None:
        # Every key must fit in the footer at 80 columns: the palette's key goes first.
        footer = self.query_one(Footer)
        narrow = self.size.width < NARROW
        footer.compact = narrow
        footer.show_command_palette = not narrow
        if self.is_mounted and self.query("#stage-status"):
            self.query_one("#stage-status", Static).update(self.status_line())


def ending(snap: StageSnapshot) -> str:
    """What the story says of how the crawl ended, if it has."""
    if snap.error:
        return f"The crawl failed: {snap.error}"
    if snap.over:
        return "The crawl is over: every URL is done, failed or filtered."
    return ""


def over_word(snap: StageSnapshot) -> tuple[str, str] | None:
    """The state word of a stage that has ended, or None while it runs."""
    if snap.error is not None:
        return "FAILED", "bold white on red"
    if snap.over:
        return snap.phase.value.upper(), "bold white on blue"
    return None
