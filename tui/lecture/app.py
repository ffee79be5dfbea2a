"""`crawlscope tui --engine callbacks|generators` and `crawlscope lecture`.

The lecture app shows the chapter's first two stages on stage screens (one per
engine); `crawlscope lecture` walks through them in order, with a paragraph on each,
and ends by handing over to the main TUI, which is stage 3.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.lecture.live import Stage
from crawlscope.engine.lecture.observe import LiveStage
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.sites.demo_config import LECTURE_DEMO as LECTURE_DEMO

from .intros import ASYNCIO_INTRO as ASYNCIO_INTRO
from .intros import INTROS
from .services import Service, Services
from .stage_screen import StageScreen

ConfigMaker = Callable[[Sequence[str]], CrawlConfig]
# Told of each stage as it opens, before it starts (a recorder, a monitor's relay).
StageOpened = Callable[[LiveStage], None]


class LectureApp(App[str]):
    """Show `engines` in turn (→/← move between them). Returns "next" when the user
    moves on from the last stage (the lecture then opens stage 3), else "quit"."""

    TITLE = "crawlscope lecture"
    CSS_PATH = "lecture.tcss"
    # Textual declares this `ClassVar[...] | None`, which mypy takes for an instance variable.
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (100, "-wide")]  # type: ignore[misc]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "stage(1)", "Next stage", key_display="→"),
        Binding("left", "stage(-1)", "Back", key_display="←"),
        Binding("q", "quit_lecture", "Quit"),
    ]

    def __init__(
        self,
        engines: Sequence[str],
        roots: Sequence[str] = (),
        *,
        make_config: ConfigMaker,
        demo: DemoConfig = LECTURE_DEMO,
        stepping: bool = True,
        walk: bool = False,
        reproducible: bool = False,
        start: int = 0,
        resume: int = 0,
        opened: Sequence[StageOpened] = (),
        services: Sequence[Service] = (),
        greeting: str = "",
    ) -> None:
        """`walk`: the lecture (intros, and moving past the last stage ends the app with
        "next"); otherwise one stage, with no way to another. `start`: the index of the
        stage shown first (the lecture comes back to stage 2 from stage 3), run on to step
        `resume` (where the lecturer left it: its crawl closed with the app). `opened` is
        told of each stage as it opens; `services` run as long as the app does; `greeting`
        is said once on opening."""
        super().__init__()
        self.engines = tuple(engines)
        self.roots = tuple(roots)
        self.make_config = make_config
        self.demo = demo
        self.stepping = stepping
        self.walk = walk
        self.reproducible = reproducible
        self.index = start
        self.resume = resume
        self.opened = tuple(opened)
        self.greeting = greeting
        self.error: str | None = None
        self._server: DemoServer | None = None
        self._services = Services(services)  # entered once the app runs, left as it closes
        self.last_stage: StageScreen | None = None  # its crawl is reported after the app

    async def on_mount(self) -> None:
        self.error = await self._services.start()
        if self.error is not None:
            self.exit("quit")
            return
        if not self.roots:
            self._server = DemoServer(self.demo)
            try:
                await self._server.start()
            except OSError as exc:
                self.error = f"cannot start the demo site: {exc}"
                self.exit("quit")
                return
            self.roots = (self._server.url,)
        await self.push_screen(self._stage_screen())
        if self.greeting:
            self.notify(self.greeting, timeout=30, markup=False)

    async def on_unmount(self) -> None:
        await self._services.close()
        if self._server is not None:
            with contextlib.suppress(Exception):
                await self._server.close()

    def _stage_screen(self) -> StageScreen:
        engine = self.engines[self.index]
        stage = Stage(engine, self.make_config(self.roots), reproducible=self.reproducible)
        for told in self.opened:
            told(stage)
        self.last_stage = StageScreen(
            stage,
            stepping=self.stepping,
            intro=INTROS[engine] if self.walk else "",
            reproducible=self.reproducible,
            resume=self.resume,
        )
        self.resume = 0  # for the first stage shown only
        return self.last_stage

    @property
    def stage(self) -> StageScreen | None:
        screen = self.screen
        return screen if isinstance(screen, StageScreen) else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "stage":
            direction = parameters[0] if parameters else 1
            if direction == -1 and self.stage is not None and self.stage.can_step_back:
                return True
            if not self.walk:
                return False  # one stage only: nothing to move to
            if direction == -1 and self.index == 0:
                return None
        return True

    async def action_stage(self, direction: int) -> None:
        """→ the next stage; ← a step back, and from a stage's first step the stage
        before it (Back, as a browser's goes back through a page's history first)."""
        stage = self.stage
        if direction == -1 and stage is not None and stage.can_step_back:
            stage.step_back()
            return
        if not self.walk:
            return
        index = self.index + direction
        if index >= len(self.engines):
            self.exit("next")  # on to stage 3, the main TUI
            return
        if index < 0:
            return
        self.index = index
        await self.switch_screen(self._stage_screen())
        self.refresh_bindings()

    def action_quit_lecture(self) -> None:
        self.exit("quit")
