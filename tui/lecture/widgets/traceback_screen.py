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
