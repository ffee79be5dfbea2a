"""A recorded crawl played back: the panels, a transport bar, and keys that move time."""

from __future__ import annotations

import time
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType

from crawlscope.engine.observe.contract import PlayedBack
from crawlscope.engine.observe.timeline import Feed, ListFeed

from ..frame_budget import FRAMES_PER_SECOND
from ..keys import COMMON, TRANSPORT, Key, bindings
from ..widgets.replay_bar import ReplayBar, ReplayView
from .panels import PanelsScreen

REPLAY_SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)


class ReplayScreen(PanelsScreen):
    KEYS: ClassVar[tuple[Key, ...]] = (*TRANSPORT, *COMMON)
    BINDINGS: ClassVar[list[BindingType]] = bindings(TRANSPORT, COMMON)

    def __init__(
        self,
        replay: PlayedBack,
        name: str,
        *,
        paused: bool = False,
        fps: float = FRAMES_PER_SECOND,
        reproducible: bool = False,
    ) -> None:
        super().__init__(fps=fps, reproducible=reproducible)
        self.replay = replay
        self.playing = not paused
        self.speed = 1.0
        self._played_at = 0.0  # monotonic time of the last frame that moved the replay
        replay.goto(0)
        self.observe(replay, f"replay of {name or ' '.join(replay.config.roots)}")

    def events_feed(self) -> Feed | None:
        events = self.replay.events
        return ListFeed(events) if isinstance(events, list) else None

    def compose_bar(self) -> ComposeResult:
        yield ReplayBar(id="replay-bar")

    def on_mount(self) -> None:
        self._bar = self.query_one(ReplayBar)
        super().on_mount()
        self._played_at = time.monotonic()

    def advance(self) -> None:
        """Move the recording on by the time since the last frame, times the speed."""
        replay = self.replay
        now = time.monotonic()
        elapsed, self._played_at = now - self._played_at, now
        if not self.playing:
            return
        if replay.position >= replay.duration:
            self.playing = False  # the end: stay on the last state, paused
            self.refresh_bindings()
            return
        replay.seek(replay.position + elapsed * self.speed)

    def redraw(self, table: bool = True, pulse: bool = False, rows: bool = False) -> None:
        if not self._widgets_found:
            return
        r = self.replay
        self._bar.show(
            ReplayView(self.playing, self.speed, r.position, r.duration, r.index, len(r.events))
        )
        super().redraw(table, pulse, rows)

    def moved(self) -> None:
        self._played_at = time.monotonic()
        super().moved()

    # ---- the transport ----------------------------------------------------------------

    def action_toggle_play(self) -> None:
        replay = self.replay
        if not self.playing and replay.position >= replay.duration:
            replay.goto(0)  # play again from the start, as a media player does
        self.playing = not self.playing
        self.moved()

    def action_step_event(self, direction: int = 1) -> None:
        """Pause, and move exactly one recorded event forward or back."""
        self.playing = False
        self.replay.goto(self.replay.index + direction)
        self.moved()

    def action_speed(self, direction: int = 1) -> None:
        steps = REPLAY_SPEEDS
        index = min(range(len(steps)), key=lambda i: abs(steps[i] - self.speed))
        self.speed = steps[min(max(index + direction, 0), len(steps) - 1)]
        self.redraw()

    def action_jump(self, share: float) -> None:
        """Move by `share` of the recording's length (pgup/pgdn: 10%)."""
        self.replay.seek(self.replay.position + share * self.replay.duration)
        self.moved()

    def action_jump_to(self, share: float) -> None:
        self.replay.goto(0 if share <= 0 else len(self.replay.events))
        self.moved()
