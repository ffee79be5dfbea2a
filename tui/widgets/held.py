"""Refreshes a frame holds back, so that the screen composites them in its own callback.

Textual turns a widget's refresh() into three more turns of the event loop: the widget's
message queue notices it, sends its screen an Update, and the screen's update timer
composites. Amid a busy crawl each turn costs about 0.25 ms, because the crawl has pushed
Textual's code and data out of the CPU's caches since the last frame. The panels' own
widgets say what changed through `repaint` instead; while a frame of PanelsScreen holds
them, it collects the regions and paints them all at once (screens/direct_paint.py).
"""

from __future__ import annotations

from textual.geometry import Region
from textual.widget import Widget

from ..textual_private import mark_dirty


class Held:
    """The regions each widget changed during one frame; None: all of the widget."""

    def __init__(self) -> None:
        self.regions: dict[Repaints, list[Region] | None] = {}

    def add(self, widget: Repaints, regions: tuple[Region, ...]) -> None:
        if not regions:
            self.regions[widget] = None
        elif widget not in self.regions:
            self.regions[widget] = list(regions)
        elif (kept := self.regions[widget]) is not None:
            kept.extend(regions)


class Repaints(Widget):
    """A widget whose changes of content (never of size) go through `repaint`."""

    held: Held | None = None  # set by the screen for the length of a frame

    def repaint(self, *regions: Region) -> None:
        """refresh(*regions), or kept for the frame that holds this widget."""
        if self.held is None:
            self.refresh(*regions)
        else:
            self.held.add(self, regions)

    def update_look(self) -> None:
        """Bring up to date what the lines depend on besides their content (colours,
        widths): called before lines are drawn, by Textual or by a frame that draws them
        itself (text_lines.content_lines)."""

    def release(self, regions: list[Region] | None) -> None:
        """Ask Textual to draw what was held, as refresh() would have."""
        if regions is None:
            self.refresh()
        else:
            self.refresh(*regions)

    def mark(self, regions: list[Region] | None) -> None:
        """Mark what was held for the screen's compositor, as refresh() does, without
        waking this widget's message queue."""
        mark_dirty(self, regions)
