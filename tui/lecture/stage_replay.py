"""A recorded lecture played back on the lecture screen, with the crawl replay's transport:
p plays and pauses, . and , (or → and ←) step one recorded step, ] and [ change the
speed, pgdn and pgup jump 10%, home and end go to the start and the end.

Stage 3 (each time the lecture was in it) plays on the crawl's replay screen, pushed over
the stages' where it came in the lecture: a step or the play goes on into it from the step
before, and out of it, at its first or last event, to the stages' steps around it, as →
and ← moved the lecturer between stage 2 and stage 3."""

from __future__ import annotations

import time
from pathlib import PurePath
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen

from crawlscope.engine.lecture.observe import RecordedStages
from crawlscope.engine.lecture.source import source_note

from ..keys import TRANSPORT, bindings
from ..screens.replay import ReplayScreen
from ..widgets.replay_bar import ReplayBar, ReplayView
from .intros import INTROS
from .stage_panels import APP_CSS, StagePanels, Words, over_word
from .widgets.traceback_screen import traceback_screen

FRAMES_PER_SECOND = 15.0
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


class StageReplayScreen(StagePanels):
    BINDINGS: ClassVar[list[BindingType]] = [
        *bindings(TRANSPORT),
        Binding("n", "step_event(1)", "Step", show=False),
        Binding("t", "traceback", "Traceback"),
    ]

    def __init__(
        self, recording: RecordedStages, *, paused: bool = False, reproducible: bool = False
    ) -> None:
        super().__init__(recording.at(0).engine, intros=INTROS, reproducible=reproducible)
        self.recording = recording
        self.source_note = source_note(getattr(recording, "sources", {}))
        self.playing = not paused
        self.speed = 1.0
        self.index = 0  # the step shown
        self.position = 0.0  # seconds into the recording
        self._played_at = 0.0

    @property
    def count(self) -> int:
        return len(self.recording.times)

    def compose_bar(self) -> ComposeResult:
        yield ReplayBar(id="replay-bar")

    async def on_mount(self) -> None:
        self._played_at = time.monotonic()
        self.set_interval(1 / FRAMES_PER_SECOND, self._tick)
        await self._show_current()

    async def _tick(self) -> None:
        now = time.monotonic()
        elapsed, self._played_at = now - self._played_at, now
        if not self.playing:
            return
        run = self._run_after(self.index)
        if run is not None and (
            self.position + elapsed * self.speed >= self.recording.runs[run].t
            or self.position >= self.recording.duration
        ):
            self._enter(run, at_end=False, playing=True)
            return
        if self.position >= self.recording.duration:
            self.playing = False  # the end: stay on the last step, paused
            await self._show_current()
            return
        self.position = min(self.position + elapsed * self.speed, self.recording.duration)
        index = self.recording.index_at(self.position)
        if index != self.index:
            self.index = index
            await self._show_current()
        else:
            self._show_bar()  # the clock moves between steps too (a pause before the first)

    async def _show_current(self) -> None:
        await self.show_stage(self.recording.at(self.index))
        self._show_bar()

    def _show_bar(self) -> None:
        self.query_one(ReplayBar).show(
            ReplayView(
                self.playing,
                self.speed,
                self.position,
                self.recording.duration,
                self.index + 1,
                self.count,
            )
        )

    async def _go(self, index: int) -> None:
        """Pause on the `index`-th step (kept within the recording)."""
        self.index = min(max(index, 0), self.count - 1)
        self.position = self.recording.times[self.index]
        self._played_at = time.monotonic()
        await self._show_current()

    def status_words(self) -> tuple[str, str, Words]:
        after: Words = [(f" of {self.count} recorded · {self.recording.name}", "bold")]
        shown = self.shown
        ended = None if shown is None else over_word(shown)
        if ended is not None:
            return ended[0], ended[1], after
        return "REPLAY", "bold black on cyan", after

    def action_traceback(self) -> None:
        """The traceback the lecturer's `t` showed at or before this step, as recorded."""
        shown = getattr(self.recording, "traceback_at", lambda _index: None)(self.index)
        if shown is None:
            self.notify("no traceback was shown by this step of the recording", timeout=3)
            return
        self.app.push_screen(traceback_screen(*shown))

    # ---- the transport ----------------------------------------------------------------

    async def action_toggle_play(self) -> None:
        if not self.playing and self.index >= self.count - 1:
            await self._go(0)  # play again from the start, as a media player does
        self.playing = not self.playing
        self._played_at = time.monotonic()
        await self._show_current()

    async def action_step_event(self, direction: int = 1) -> None:
        self.playing = False
        run = self._run_after(self.index) if direction > 0 else self._run_before(self.index)
        if run is not None:
            self._enter(run, at_end=direction < 0, playing=False)
            return
        await self._go(self.index + direction)

    # ---- stage 3, between the steps -------------------------------------------------------

    def _run_after(self, index: int) -> int | None:
        """The first stage-3 run recorded right after step `index`, if one was."""
        runs = self.recording.runs
        return next((k for k, run in enumerate(runs) if run.after == index + 1), None)

    def _run_before(self, index: int) -> int | None:
        """The last stage-3 run recorded right before step `index`, if one was."""
        runs = self.recording.runs
        return next((k for k in reversed(range(len(runs))) if runs[k].after == index), None)

    def _enter(self, run: int, *, at_end: bool, playing: bool) -> None:
        """Play the `run`-th stage 3 on the crawl's replay screen, over this one."""
        self.playing = False
        self.app.push_screen(
            Stage3ReplayScreen(self, run, at_end=at_end, playing=playing, speed=self.speed,
                               reproducible=self.reproducible)
        )  # fmt: skip

    async def come_back(self, run: int, direction: int, playing: bool, speed: float) -> None:
        """Out of the `run`-th stage 3 (its screen gone): into the run next to it, if one
        was recorded with no step between, else to the step after it or before it."""
        if not self.query("#stage-main"):
            # Called soon after stage 3's screen went: if the app was quitting meanwhile,
            # this screen's panels are gone too, and there is nothing to show.
            return
        runs = self.recording.runs
        after = runs[run].after
        beside = run + direction
        self.speed = speed
        if 0 <= beside < len(runs) and runs[beside].after == after:
            self._enter(beside, at_end=direction < 0, playing=playing)
            return
        await self._go(after if direction > 0 else after - 1)
        if direction > 0 and after >= self.count:
            return  # the lecture ended in stage 3: stay on the last step, paused
        self.playing = playing
        await self._show_current()

    async def action_speed(self, direction: int = 1) -> None:
        index = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - self.speed))
        self.speed = SPEEDS[min(max(index + direction, 0), len(SPEEDS) - 1)]
        await self._show_current()

    async def action_jump(self, share: float) -> None:
        """Move by `share` of the recording's steps (pgup/pgdn: 10%)."""
        await self._go(self.index + round(share * self.count))

    async def action_jump_to(self, share: float) -> None:
        await self._go(0 if share <= 0 else self.count - 1)


class Stage3ReplayScreen(ReplayScreen):
    """One stage 3 of a recorded lecture: the crawl's replay, which steps (or plays) out
    of its ends back to the stages' screen `stages`."""

    def __init__(
        self,
        stages: StageReplayScreen,
        run: int,
        *,
        at_end: bool,
        playing: bool,
        speed: float,
        reproducible: bool = False,
    ) -> None:
        recording = stages.recording
        crawl = recording.runs[run].crawl
        name = f"{recording.name}, stage 3"
        if len(recording.runs) > 1:
            name += f" ({run + 1} of {len(recording.runs)})"
        super().__init__(crawl, name, paused=not playing, reproducible=reproducible)
        self.stages = stages
        self.run_index = run
        self.speed = speed
        self._gone = False
        if at_end:
            crawl.goto(len(crawl.events))

    def advance(self) -> None:
        replay = self.replay
        if self.playing and replay.position >= replay.duration:
            self._leave(1)  # the play goes on, to what the lecture did next
            return
        super().advance()

    def action_step_event(self, direction: int = 1) -> None:
        index = self.replay.index
        if (direction > 0 and index >= len(self.replay.events)) or (direction < 0 and index <= 0):
            self.playing = False
            self._leave(direction)
            return
        super().action_step_event(direction)

    def _leave(self, direction: int) -> None:
        if self._gone:
            return
        self._gone = True
        self.dismiss()
        back = self.stages.come_back
        self.app.call_later(back, self.run_index, direction, self.playing, self.speed)


class LectureReplayApp(App[int]):
    """`crawlscope replay FILE` for a lecture's recording: nothing runs but the screen."""

    TITLE = "crawlscope lecture replay"
    # Stage 3 is drawn by the crawl's replay screen, with the main TUI's styles.
    CSS_PATH: ClassVar[list[str | PurePath]] = ["lecture.tcss", APP_CSS]
    # Textual declares this `ClassVar[...] | None`, which mypy takes for an instance variable.
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (100, "-wide")]  # type: ignore[misc]
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit", "Quit")]

    def __init__(
        self, recording: RecordedStages, *, paused: bool = False, reproducible: bool = False
    ) -> None:
        super().__init__()
        self.recording = recording
        self.paused = paused
        self.reproducible = reproducible

    def get_default_screen(self) -> Screen[None]:
        return StageReplayScreen(self.recording, paused=self.paused, reproducible=self.reproducible)

    @property
    def replay(self) -> StageReplayScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, StageReplayScreen)
        return screen
