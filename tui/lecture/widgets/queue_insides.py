"""The queue's insides: its items, the unfinished counter, waiting getters, join's Future."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from crawlscope.engine.lecture.snapshot import QueueInsides as QueueInsidesView
from crawlscope.engine.observe.text import printable

SHOWN_ITEMS = 4  # with the counters, getters and join: 9 lines, what the panel holds


class QueueInsides(Static):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: QueueInsidesView | None = None

    def show(self, view: QueueInsidesView) -> None:
        if view == self._shown:
            return
        self._shown = view
        self.update(self._render_view(view))

    @staticmethod
    def _render_view(view: QueueInsidesView) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f"items {view.size}", "bold")
        text.append(f"   unfinished {view.unfinished}\n", "bold")
        for url in view.items[:SHOWN_ITEMS]:
            text.append("  " + printable(url, 60) + "\n")
        if view.size > SHOWN_ITEMS:
            text.append(f"  … {view.size - SHOWN_ITEMS} more\n", "dim")
        text.append(f"{view.getters_title} {len(view.getters)}\n", "bold")
        if view.getters:
            text.append("  " + ", ".join(view.getters) + "\n")
        text.append("join ", "bold")
        text.append(printable(view.join, 80))
        return text
