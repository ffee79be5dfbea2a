"""Stage 1: what the selector loop watches, the timers it keeps, and its ready queue."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from crawlscope.engine.lecture.snapshot import LoopInsides
from crawlscope.engine.observe.text import printable


class LoopPanel(Static):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: LoopInsides | None = None
        self.frozen = False  # hide fd numbers and timer figures (they vary between runs)

    def show(self, view: LoopInsides) -> None:
        if view == self._shown:
            return
        self._shown = view
        self.update(self._render_view(view, self.frozen))

    @staticmethod
    def _render_view(view: LoopInsides, frozen: bool) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append("selector.register(): sockets and their callbacks\n", "bold")
        for watched in view.registered:
            fd_text = "fd  —" if frozen else f"fd {watched.fd:2}"
            text.append(f"  {fd_text}  {watched.events:5}  ", "cyan")
            text.append(printable(watched.callback, 80) + "\n")
        if not view.registered:
            text.append("  nothing: no fetch is waiting on a socket\n", "dim")
        text.append("\ntimers (call_later)\n", "bold")
        for timer in view.timers:
            when = "in —" if frozen else f"in {max(timer.due, 0):.2f}s"
            text.append(f"  {when:9}  ", "magenta")
            text.append(printable(timer.callback, 80) + "\n")
        if not view.timers:
            text.append("  none\n", "dim")
        text.append("\nready to run next\n", "bold")
        for callback in view.ready:
            text.append("  " + printable(callback, 80) + "\n")
        if not view.ready:
            text.append("  nothing: the next step waits in select()\n", "dim")
        text.append("\nfetch slots (max_tasks)\n", "bold")
        for slot in view.slots:
            text.append(f"  slot {slot.id}  ", "bold")
            text.append(f"{slot.state:11}", "cyan")
            if slot.url:
                text.append(printable(slot.url, 60))
            text.append("\n")
        return text
