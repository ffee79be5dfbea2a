"""The replay's transport: playing or paused, speed, where we are, and a scrubber."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widget import Widget

from ..format import clock


@dataclass(frozen=True, slots=True)
class ReplayView:
    playing: bool
    speed: float
    position: float  # seconds into the recording
    duration: float
    index: int  # events applied
    events: int  # events in the recording


class ReplayBar(Widget):
    """One line: ▶/❚❚, speed, time and event counters, then a bar filling the rest."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view: ReplayView | None = None

    def show(self, view: ReplayView) -> None:
        if view != self._view:
            self._view = view
            self.refresh()

    def render(self) -> Text:
        view = self._view
        line = Text(no_wrap=True, overflow="ellipsis")
        if view is None:
            return line
        if view.playing:
            line.append(" ▶ PLAY ", "bold black on green")
        else:
            line.append(" ❚❚ PAUSE ", "bold black on yellow")
        line.append(f" {view.speed:g}x ", "bold")
        line.append(f" {clock(view.position)} / {clock(view.duration)} ", "bold")
        line.append(f" event {view.index}/{view.events} ", "dim")
        # The scrubber takes what the figures leave, and always at least a few cells.
        width = max(self.size.width - line.cell_len - 2, 8)
        share = view.position / view.duration if view.duration else 1.0
        filled = round(width * min(max(share, 0.0), 1.0))
        line.append(" ")
        line.append("━" * filled, "bold cyan")
        line.append("─" * (width - filled), "dim")
        return line
