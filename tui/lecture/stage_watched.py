"""A lecture watched from another process (`crawlscope attach ws://HOST:PORT/lecture`): the
lecture screen drawn from the stage snapshots a lecture's monitor sends, read-only, with
the watch line of a crawl's viewer (how it is connected, and who else watches). While the
lecturer is in stage 3, the crawl's own watched screen is over it, drawing the crawl's
frames; it goes when the stages' frames come again."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.lecture.snapshot import Engine, StageSnapshot
from crawlscope.engine.lecture.source import source_note
from crawlscope.engine.remote.lecture_client import RemoteLecture

from ..attach import WatchBar, WatchedScreen, WatchView
from .intros import INTROS
from .stage_panels import APP_CSS, StagePanels, Words, over_word

FRAMES_PER_SECOND = 15.0


class StageWatchedScreen(StagePanels):
    """Shows the snapshot `latest()` gives (none yet: None), and `who_watches()` below."""

    def __init__(
        self,
        latest: Callable[[], StageSnapshot | None],
        who_watches: Callable[[], WatchView],
        *,
        reproducible: bool = False,
        sources: Callable[[], Mapping[str, str]] = dict,
    ) -> None:
        """`sources`: the lecturer's stage modules' hashes, as its hello said them."""
        super().__init__(Engine.CALLBACKS, intros=INTROS, reproducible=reproducible)
        self.latest = latest
        self.who_watches = who_watches
        self.sources = sources
        self.draws = 0  # snapshots drawn

    def compose_bar(self) -> ComposeResult:
        yield WatchBar(id="watch-bar")

    def on_mount(self) -> None:
        self.set_interval(1 / FRAMES_PER_SECOND, self._tick)

    async def _tick(self) -> None:
        snap = self.latest()
        self.source_note = source_note(self.sources(), "the lecturer runs")
        if snap is not None and snap != self.shown:
            await self.show_stage(snap)
            self.draws += 1
        self.query_one(WatchBar).show(self.who_watches())

    def status_words(self) -> tuple[str, str, Words]:
        shown = self.shown
        if shown is None:
            return "CONNECTING", "bold black on grey70", []
        ended = over_word(shown)
        if ended is not None:
            return ended[0], ended[1], []
        return "WATCHING", "bold black on cyan", []


class LectureWatchApp(App[int]):
    """Connect to a lecture's monitor at `url` and show what it sends; q closes this view."""

    TITLE = "crawlscope lecture (attached)"
    # Stage 3 is drawn by the crawl's watched screen, with the main TUI's styles.
    CSS_PATH: ClassVar[list[str | PurePath]] = ["lecture.tcss", APP_CSS]
    # Textual declares this `ClassVar[...] | None`, which mypy takes for an instance variable.
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (100, "-wide")]  # type: ignore[misc]
    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "quit", "Quit")]

    def __init__(self, url: str, *, reproducible: bool = False) -> None:
        super().__init__()
        self.remote = RemoteLecture(url)
        self.reproducible = reproducible
        self._connection: asyncio.Task[None] | None = None
        self.crawl_screen: WatchedScreen | None = None  # stage 3's, while it is shown
        self._crawl_config: CrawlConfig | None = None  # the crawl it draws

    def get_default_screen(self) -> Screen[None]:
        remote = self.remote
        return StageWatchedScreen(
            lambda: remote.stage, self._watch_view, reproducible=self.reproducible,
            sources=lambda: remote.sources,
        )  # fmt: skip

    def _watch_view(self) -> WatchView:
        remote = self.remote
        return WatchView(
            "attached", remote.link.value, remote.why, True, remote.viewers, remote.bad
        )

    def on_mount(self) -> None:
        self._connection = asyncio.create_task(self.remote.run(), name="attach-lecture")
        self.set_interval(1 / FRAMES_PER_SECOND, self._follow_stage_3)

    def _follow_stage_3(self) -> None:
        """The crawl's screen over the stages' while the lecturer is in stage 3."""
        remote, shown = self.remote, self.crawl_screen
        if remote.crawl_shown and shown is None:
            shown = WatchedScreen(self._watch_view, reproducible=self.reproducible)
            self._observe(shown)
            self.crawl_screen = shown
            self.push_screen(shown)
        elif remote.crawl_shown and shown is not None and self._crawl_config is not remote.config:
            # Another stage 3 came with no stage between (this viewer was away meanwhile).
            self._observe(shown)
        elif not remote.crawl_shown and shown is not None and self.screen is shown:
            self.crawl_screen = None
            self.pop_screen()

    def _observe(self, screen: WatchedScreen) -> None:
        self._crawl_config = config = self.remote.config
        screen.observe_live(self.remote, None, " ".join(config.roots))

    async def on_unmount(self) -> None:
        if self._connection is not None:
            self._connection.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._connection

    @property
    def watched(self) -> StageWatchedScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, StageWatchedScreen)
        return screen
