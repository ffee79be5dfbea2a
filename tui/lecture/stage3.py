"""Stage 3 of `crawlscope lecture`: the live TUI, with ← back to stage 2.

asyncio's own loop cannot be stepped, so there is no step to go back to here: ← goes
to the stage before, as it does from the first step of stages 1 and 2. The lecture's
recorder and monitor follow this stage's crawl too (`LectureCrawl.opened`, `services`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import events, on
from textual.binding import Binding, BindingType

from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.contract import CrawlControls, ObservedCrawl

from ..app import CrawlScopeApp
from ..startup import LiveCrawl, Ready, Started
from .services import Service, Services

# Told of stage 3's crawl once it is built, before it starts (a recorder, a monitor's relay).
CrawlOpened = Callable[[Crawler], object]


@dataclass
class LectureCrawl(LiveCrawl):
    """The main TUI's live crawl, told to `opened` as soon as it is built."""

    opened: Sequence[CrawlOpened] = ()

    async def run(self, started: Started, ready: Ready | None = None) -> None:
        def tell(observed: ObservedCrawl, controls: CrawlControls, demo: str | None) -> None:
            assert self.crawler is not None  # set before `started` is told
            for told in self.opened:
                told(self.crawler)
            started(observed, controls, demo)

        await super().run(tell, ready)


class AsyncioStage(CrawlScopeApp):
    """The main TUI as the lecture's last stage. `went_back` after it closes: the user
    pressed ← (the crawl was stopped as q stops it), and the lecture reopens stage 2.
    `services` run as long as the app does (the lecture's monitor)."""

    # Textual reads a relative CSS_PATH from the subclass's own folder, not the app's.
    CSS_PATH = str(Path(__file__).parent.parent / "app.tcss")
    # Priority: the workers table would take ← for itself (a scroll to the left).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "back_a_stage", "Stage 2", key_display="←", priority=True, show=False)
    ]

    went_back = False
    # The intro goes after a few seconds; the status line keeps saying where the class is.
    site_label = "stage 3 · asyncio · "
    # The code beside the workers from the start, as in stages 1 and 2 (where it fits).
    code_beside = True

    def __init__(
        self,
        source: LiveCrawl,
        *,
        greeting: str = "",
        services: Sequence[Service] = (),
    ) -> None:
        super().__init__(source, greeting=greeting)
        self._services = Services(services)
        self.error: str | None = None

    @on(events.Mount)
    async def _serve(self) -> None:
        self.error = await self._services.start()
        if self.error is not None:
            self.exit(1)

    async def on_unmount(self) -> None:
        await self._services.close()

    async def action_back_a_stage(self) -> None:
        self.went_back = True
        await self.action_quit()
