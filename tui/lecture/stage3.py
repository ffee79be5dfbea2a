"""Stage 3 of `crawlscope lecture`: the live TUI, with ← back to stage 2.

asyncio's own loop cannot be stepped, so there is no step to go back to here: ← goes
to the stage before, as it does from the first step of stages 1 and 2."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from textual.binding import Binding, BindingType

from ..app import CrawlScopeApp


class AsyncioStage(CrawlScopeApp):
    """The main TUI as the lecture's last stage. `went_back` after it closes: the user
    pressed ← (the crawl was stopped as q stops it), and the lecture reopens stage 2."""

    # Textual reads a relative CSS_PATH from the subclass's own folder, not the app's.
    CSS_PATH = str(Path(__file__).parent.parent / "app.tcss")
    # Priority: the workers table would take ← for itself (a scroll to the left).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "back_a_stage", "Stage 2", key_display="←", priority=True, show=False)
    ]

    went_back = False

    async def action_back_a_stage(self) -> None:
        self.went_back = True
        await self.action_quit()
