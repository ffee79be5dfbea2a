"""A traceback, shown over the stage screen: stack ripping (stage 1) or its cure (stage 2)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class TracebackScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,t,q", "dismiss", "Close", show=True),
    ]

    def __init__(self, title: str, explanation: str, traceback: str) -> None:
        super().__init__()
        self.title_text = title
        self.explanation = explanation
        self.traceback = traceback

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="traceback-body") as body:
            body.border_title = self.title_text
            yield Static(Text(self.explanation), id="traceback-explanation")
            # Literal text: a traceback holds URLs and source lines, never markup.
            yield Static(Text(self.traceback), id="traceback-text")


RIPPED = (
    "An exception raised in the parser, called from a callback. The traceback starts at "
    "the event loop: the code that began this fetch (start, dispatch, begin, fetch) is "
    "not in it, because those frames returned long before the socket became readable. "
    "That is the stack ripping the chapter describes."
)
WHOLE = (
    "The same exception with coroutines: the traceback runs from the worker through "
    "fetch down to the parser, because a suspended generator keeps its frame, so the "
    "stack survives every wait."
)


def traceback_screen(engine: str, text: str) -> TracebackScreen:
    """The traceback `t` shows on stage `engine`, with what it teaches."""
    if engine == "callbacks":
        return TracebackScreen("stage 1: stack ripping", RIPPED, text)
    return TracebackScreen("stage 2: a whole stack", WHOLE, text)
