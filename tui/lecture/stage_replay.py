"""A recorded lecture played back on the lecture screen, with the crawl replay's transport:
p plays and pauses, . and , (or → and ←) step one recorded step, ] and [ change the
speed, pgdn and pgup jump 10%, home and end go to the start and the end."""

from __future__ import annotations

import time
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen

from crawlscope.engine.lecture.observe import RecordedStages

from ..keys import TRANSPORT, bindings
from ..widgets.replay_bar import ReplayBar, ReplayView
from .intros import INTROS
from .stage_panels import StagePanels, Words, over_word

FRAMES_PER_SECOND = 15.0
SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


class StageReplayScreen(StagePanels):
    BINDINGS: ClassVar[list[BindingType]] = [
        *bindings(TRANSPORT),
        Binding("n", "step_event(1)", "Step", show=False),
    ]

    def __init__(
        self, recording: RecordedStages, *, paused: bool = False, reproducible: bool = False
    ) -> None:
        super().__init__(recording.at(0).engine, intros=INTROS, reproducible=reproducible)
        self.recording = recording
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
        if self.position >= self.recording.duration:
            self.playing = False  # the end: stay on the last step, paused
            await self._show_current()
            return
        self.position = min(self.position + elapsed * self.speed, self.recording.duration)
        index = self.recording.index_at(self.position)
        if index != self.index:
            self.index = index
            await self._show_current()

    async def _show_current(self) -> None:
        await self.show_stage(self.recording.at(self.index))
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

    # ---- the transport ----------------------------------------------------------------

    async def action_toggle_play(self) -> None:
        if not self.playing and self.index >= self.count - 1:
            await self._go(0)  # play again from the start, as a media player does
        self.playing = not self.playing
        self._played_at = time.monotonic()
        await self._show_current()

    async def action_step_event(self, direction: int = 1) -> None:
        self.playing = False
        await self._go(self.index + direction)

    async def action_speed(self, direction: int = 1) -> None:
        index = min(range(len(SPEEDS)), key=lambda i: abs(SPEEDS[i] - self.speed))
        self.speed = SPEEDS[min(max(index + direction, 0), len(SPEEDS) - 1)]
        await self._show_current()

    async def action_jump(self, share: float) -> None:
        """Move by `share` of the recording's steps (pgup/pgdn: 10%)."""
        await self._go(self.index + round(share * self.count))

    async def action_jump_to(self, share: float) -> None:
        await self._go(0 if share <= 0 else self.count - 1)


class LectureReplayApp(App[int]):
    """`crawlscope replay FILE` for a lecture's recording: nothing runs but the screen."""

    TITLE = "crawlscope lecture replay"
    CSS_PATH = "lecture.tcss"
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
