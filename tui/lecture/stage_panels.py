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
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from crawlscope.engine.lecture.snapshot import Engine, StageSnapshot, task_shown
from crawlscope.engine.lecture.source import (
    STAGE_MODULES,
    Cursor,
    Source,
    callback_cursors,
    callback_label,
    shipped,
    task_cursors,
    told_line,
)

from ..widgets.help_screen import HelpScreen
from ..widgets.keys_footer import KeysFooter
from ..widgets.source_pane import SourcePane, task_colour
from .stage_help import STAGE_HELP
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
# Narrower than this, the code pane folds away until `c` shows it.
CODE_FITS = 140
# The main TUI's styles, for a lecture app that shows stage 3 on the crawl's screens.
APP_CSS = Path(__file__).parent.parent / "app.tcss"
Words = list[tuple[str, str]]  # (text, style) pieces of the status line


class StagePanels(Screen[None]):
    """The status line, a stage's intro, its loop or tasks, the code, its queue, the
    narration."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # Not in the footer, which is full at 80 columns: the status line names `c`, the
        # help and the docs the rest.
        Binding("c,v", "code", "Code", show=False),  # v: as on the live crawl's screen
        Binding("down", "select_task(1)", "Next task", show=False),
        Binding("up", "select_task(-1)", "Previous task", show=False),
        Binding("y", "chain", "Chain", show=False),
        Binding("o", "offsets", "Offsets", show=False),
        Binding("question_mark", "help", "Help", show=False),
    ]

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
        self.code: bool | None = None  # the code pane shown (None: if the screen is wide)
        self.chain = False  # a cursor on every frame of a task's chain, not its own only
        self.selected: str | None = None  # the task whose line the code pane centres on
        # What a replay says of the source it was recorded with ("": nothing amiss).
        self.source_note = ""

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
            module, section = STAGE_MODULES[self.engine]
            code = SourcePane(id="stage-code")
            code.border_title = f"{module} · the chapter's {section}"
            yield code
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
        self.show_code(snap)
        told = self.query_one(StepNarration)
        told.show(snap.steps, snap.recent, ending(snap) if note is None else note,
                  self.told_where(snap))  # fmt: skip
        self.query_one("#stage-status", Static).update(self.status_line())
        self.refresh_bindings()

    def cursors(self, snap: StageSnapshot) -> tuple[Source | None, list[Cursor]]:
        """The stage's module, and where each task (stage 2) or callback (stage 1) stands
        in it at `snap`."""
        source = shipped(STAGE_MODULES[snap.engine][0])
        if source is None:
            return None, []
        if snap.engine is Engine.GENERATORS:
            return source, task_cursors(snap.tasks, self.chain)
        registered = [(w.fd, w.callback) for w in snap.loop.registered]
        return source, callback_cursors(source, registered, snap.loop.ready)

    def show_code(self, snap: StageSnapshot) -> None:
        pane = self.query_one(SourcePane)
        pane.display = self.code_shown()
        if not pane.display:
            return
        source, cursors = self.cursors(snap)
        names = list(dict.fromkeys(c.task for c in cursors))
        if self.selected not in names:
            self.selected = names[0] if names else None
        colours = {name: task_colour(i) for i, name in enumerate(names)}
        frame = self.frame_of(snap)
        pane.show(source, cursors, colours, self.selected, self.code_note(source, cursors), frame)

    def told_where(self, snap: StageSnapshot) -> str:
        """The line of the stage's module the last step's story is about, with its code."""
        if not snap.recent:
            return ""
        source, cursors = self.cursors(snap)
        if source is None:
            return ""
        last = snap.recent[-1]
        task = task_shown(last.task) if last.task else None
        at = told_line(source, last.raw, task, cursors)
        code = source.line(at.line) if at is not None else None
        if at is None or code is None:
            return ""
        return f"line {at.line} of {source.name} ({at.function}): {code.strip()}"

    def frame_of(self, snap: StageSnapshot) -> tuple[str, tuple[tuple[str, str], ...]]:
        """What the pane shows under the code of the selected task: its locals (stage 2),
        or the fields of the Fetcher its callback belongs to (stage 1)."""
        name = self.selected
        for task in snap.tasks:
            if task.name == name and task.frame:
                return f"locals of {name} in {task.frame}()", task.locals
        for watched in snap.loop.registered:
            if callback_label(watched.fd) == name and watched.fields:
                owner = watched.callback.split(".", 1)[0]
                return f"fields of {name}'s {owner}, which hold its state", watched.fields
        return "", ()

    def code_note(self, source: Source | None, cursors: list[Cursor]) -> str:
        """What the pane says is amiss: the recording's code is not this version's, or a
        position (from a file or a viewer's frame) names code this version does not ship
        (it is left out, never looked for elsewhere)."""
        notes = [self.source_note] if self.source_note else []
        foreign = [c for c in cursors if source is None or source.line(c.line) is None
                   or c.file != source.name]  # fmt: skip
        if foreign:
            first = foreign[0]
            more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
            notes.append(f"{first.task} stands at {first.file}:{first.line}, not in the code "
                         f"this version ships{more}")  # fmt: skip
        return "; ".join(notes)

    def code_shown(self) -> bool:
        return self.code if self.code is not None else self.size.width >= CODE_FITS

    def action_help(self) -> None:
        self.app.push_screen(HelpScreen(STAGE_HELP))

    def action_code(self) -> None:
        self.code = not self.code_shown()
        self._show_again()

    def action_chain(self) -> None:
        self.chain = not self.chain
        self._show_again()

    def action_offsets(self) -> None:
        main = self.query_one("#stage-main")
        if isinstance(main, TaskChains):
            main.offsets = not main.offsets
            main.show(main.shown, force=True)

    def action_select_task(self, step: int) -> None:
        if self.shown is None:
            return
        _, cursors = self.cursors(self.shown)
        names = list(dict.fromkeys(c.task for c in cursors))
        if names:
            at = names.index(self.selected) if self.selected in names else -1
            self.selected = names[(at + step) % len(names)]
            self._show_again()

    def _show_again(self) -> None:
        if self.shown is not None:
            self.show_code(self.shown)
            self.query_one("#stage-status", Static).update(self.status_line())

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
        if not self.code_shown():  # before the figures: at 80 columns they are what is cut
            line.append(f"{gap}c: code", "bold")
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
            if self.shown is not None:
                self.show_code(self.shown)  # folded away, or back, with the width


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
