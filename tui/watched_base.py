"""What every watched screen shares: the live screen of a crawl reached from outside
(a monitor's URL, a cluster in Redis; or the crawl's own screen while it serves a
monitor), with a bar above the footer that says how it is reached and who watches, and a
greyed read-only key that says why the steering keys are off when they are.

Each screen (attach.py's WatchedScreen, cluster_view.py's ClusterScreen) gives only its
bar, what the bar says at each redraw, and whether its view is read-only.
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.widget import Widget

from .keys import COMMON, PAST, STEERING, Key, bindings
from .screens.live import LiveScreen
from .screens.panels import FRAMES_PER_SECOND

# Shown greyed in the footer of a view without the token: why the steering keys are off.
READ_ONLY = Key("exclamation_mark", "read_only", "read-only", display="!")


class WatchedBase(LiveScreen):
    """The live screen with `bar` above the footer; `show_bar()` runs before each redraw."""

    KEYS: ClassVar[tuple[Key, ...]] = (*STEERING, READ_ONLY, PAST[0], *COMMON)
    BINDINGS: ClassVar[list[BindingType]] = bindings(STEERING, (READ_ONLY, PAST[0]), COMMON)

    def __init__(
        self, bar: Widget, *, fps: float = FRAMES_PER_SECOND, reproducible: bool = False
    ) -> None:
        super().__init__(fps=fps, reproducible=reproducible)
        self.bar = bar

    def show_bar(self) -> None:
        """Tell the bar what it says now; a screen whose bar changes says how."""

    def read_only(self) -> bool:
        """Whether the steering keys are off: here, when nothing can steer; a screen that
        knows better (a monitor's view before its first frame) says so."""
        return self.controls is None

    def compose_bar(self) -> ComposeResult:
        yield self.bar

    def redraw(self, table: bool = True, pulse: bool = False, rows: bool = False) -> None:
        if not self._widgets_found:
            return
        self.show_bar()
        super().redraw(table, pulse, rows)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "read_only":
            return None if self.read_only() else False
        return super().check_action(action, parameters)

    def action_read_only(self) -> None:
        """Greyed out: it only says why the steering keys are."""
