"""`/`: one URL's fate, asked of the crawl's recorded past (engine/trace/why.py): its status
or why it was not fetched, the redirects that led to it, its discovery path and its time.
Live, the flight recorder's kept past answers (the last minutes), and the crawl's books
for what that leaves out (older pages, URLs the rules left alone, queued, in hand); a
replay, its recording."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from crawlscope.engine.trace.why import Books, why

Events = Callable[[], Sequence[dict[str, Any]]]


class FindUrlScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "dismiss", "Close")]
    DEFAULT_CSS = """
    FindUrlScreen { align: center middle; }
    #find-body { width: 90%; max-width: 140; height: 80%; border: thick $accent;
                 background: $surface; }
    #find-answer { height: 1fr; overflow-y: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def __init__(
        self, events: Events, where: str, books: Books | None = None,
        limits: tuple[int, int] = (0, 0),
    ) -> None:  # fmt: skip
        """`events`: the recorded past, read at each question; `where`: what it is;
        `books`: the crawl's own, if it runs in this process; `limits`: its --max-depth
        and --max-pages (0: none), to name them."""
        super().__init__()
        self.limits = limits
        self.events = events
        self.where = where
        self.books = books

    def compose(self) -> ComposeResult:
        with Vertical(id="find-body") as body:
            body.border_title = f"why was a URL (not) fetched? from {self.where}"
            yield Input(placeholder="a URL, as typed or as the crawl writes it; enter",
                        id="find-input")  # fmt: skip
            yield Static(id="find-answer")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        url = event.value.strip()
        if not url:
            return
        answer = why(url, self.events(), *self.limits, books=self.books)
        text = Text("\n".join(answer.lines), no_wrap=True, overflow="ellipsis")
        self.query_one("#find-answer", Static).update(text)
