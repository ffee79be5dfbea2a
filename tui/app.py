"""The live TUI. The app starts what it is given (a crawl, or a recording) and hands a
screen the two things the engine's observe protocols name: what to draw and, for a live
crawl, how to steer it. The screens own their panels; the engine never calls the UI.

A live crawl runs as an async Textual worker on the app's own event loop, so the screen
and the crawler share one loop, as the chapter's single-threaded design intends.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, ClassVar, TextIO

from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from crawlscope.engine.observe.contract import CrawlControls, ObservedCrawl
from crawlscope.engine.observe.snapshot import OVER
from crawlscope.engine.observe.text import mask_userinfo, printable

from .commands import CrawlCommands
from .heap import settle_heap
from .screens.live import LiveScreen
from .screens.panels import FRAMES_PER_SECOND, PanelsScreen
from .screens.replay import ReplayScreen
from .startup import LiveCrawl, Recording

if TYPE_CHECKING:
    # A crawl watched elsewhere: imported when one is (the remote client and Redis's
    # are a third of this module's import, and a live crawl's start waits on it).
    from .attach import Attached, WatchView
    from .cluster_view import ClusterAttached


class CrawlScopeApp(App[int]):
    """Open `source`: a live crawl (the demo site when it has no roots) or a recording."""

    TITLE = "crawlscope"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {CrawlCommands}
    # Textual declares this `ClassVar[...] | None`, which mypy takes for an instance variable.
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (100, "-wide")]  # type: ignore[misc]
    # Before the site on the status line: what this crawl is, where an app is one part of
    # something larger (the lecture's stage 3).
    site_label = ""
    code_beside = False  # the code pane shown from the start where it fits (code_view.py)

    def __init__(
        self,
        source: LiveCrawl | Recording | Attached | ClusterAttached | None = None,
        *,
        reproducible: bool = False,
        fps: float = FRAMES_PER_SECOND,
        greeting: str = "",
    ) -> None:
        """`reproducible` draws the same screen for the same crawl state from run to run
        (no wall-clock figures, no demo site port, no source line numbers); `greeting`
        is shown once on opening (the lecture's word on stage 3)."""
        super().__init__()
        self.source = source if source is not None else LiveCrawl()
        self.reproducible = reproducible
        self.fps = fps
        self.greeting = greeting
        self.crawl_error: str | None = None
        self._observed: ObservedCrawl | None = None
        self._controls: CrawlControls | None = None
        self._crawl_worker: Worker[None] | None = None
        self._quitting = False
        # The collector set for the crawl by this app (heap.py): undone on unmount.
        self._unsettle_heap: Callable[[], None] | None = None

    def get_default_screen(self) -> Screen[None]:
        if isinstance(self.source, Recording):
            r = self.source
            return ReplayScreen(
                r.replay, r.name, paused=r.paused, fps=self.fps, reproducible=self.reproducible
            )
        if self.source is None or (
            isinstance(self.source, LiveCrawl) and not self.source.monitored
        ):
            return LiveScreen(fps=self.fps, reproducible=self.reproducible)
        from .attach import Attached, WatchedScreen, attached_view
        from .cluster_view import ClusterAttached, ClusterScreen

        if isinstance(self.source, Attached):
            remote = self.source.remote
            return WatchedScreen(
                lambda: attached_view(remote), fps=self.fps, reproducible=self.reproducible
            )
        if isinstance(self.source, ClusterAttached):
            return ClusterScreen(self.source, fps=self.fps, reproducible=self.reproducible)
        return WatchedScreen(self._monitor_view, fps=self.fps, reproducible=self.reproducible)

    def _monitor_view(self) -> WatchView:
        """The lecturer's line: where the crawl is served, and who watches it."""
        from .attach import WatchView

        live = self.source
        monitor = live.monitor if isinstance(live, LiveCrawl) else None
        if monitor is None:
            return WatchView("monitor", "starting", "", False, ())
        return WatchView("monitor", monitor.view_url, "", False, tuple(monitor.viewers))

    @property
    def panels(self) -> PanelsScreen:
        """The screen with the panels (the help screen may be on top of it)."""
        screen = self.screen_stack[0]
        assert isinstance(screen, PanelsScreen)
        return screen

    @property
    def frames(self) -> int:
        return self.panels.frames

    @property
    def frame_costs(self) -> deque[float]:
        return self.panels.frame_costs

    def on_mount(self) -> None:
        # The crawl starts once the screen is drawn: its first layout (50-100 ms of
        # mounting and laying out every panel) then runs on an idle loop, not on the
        # crawl's first second, and the crawl's first moments are on screen.
        self.call_after_refresh(self._start)
        if self.greeting:
            self.notify(self.greeting, title="stage 3", timeout=20)

    def _start(self) -> None:
        if not self.is_running:
            return
        if isinstance(self.source, LiveCrawl):
            self._crawl_worker = self.run_worker(
                self._run_crawl(self.source), name="crawl", group="crawl", exit_on_error=False
            )
        elif self.source is not None and not isinstance(self.source, Recording):
            self.run_worker(
                self._run_attached(self.source), name="attach", group="crawl", exit_on_error=False
            )
        # Once the screen is built, its objects (the DOM, styles) live as long as the app,
        # as the modules do: frozen, see heap.py. Not once closing: on_unmount would have
        # nothing left to undo it.
        if self._unsettle_heap is None and self.is_running:
            self._unsettle_heap = settle_heap()

    async def on_unmount(self) -> None:
        # Closing without q (an error, a test's end): Textual has cancelled the crawl's
        # worker; wait for its cleanup (workers, session, demo site) on this loop.
        if self._unsettle_heap is not None:
            self._unsettle_heap()  # back to the collector as it was (heap.py)
            self._unsettle_heap = None
        if self._controls is not None and not self._over():
            self._controls.stop()
        if self._crawl_worker is not None:
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await self._crawl_worker.wait()

    async def _run_crawl(self, live: LiveCrawl) -> None:
        screen = self.panels
        assert isinstance(screen, LiveScreen)
        if live.roots:
            screen.site = " ".join(mask_userinfo(root) for root in live.roots)

        def started(observed: ObservedCrawl, controls: CrawlControls, demo: str | None) -> None:
            self._observed, self._controls = observed, controls
            site = screen.site
            if demo is not None:
                site = "demo site" if self.reproducible else f"demo site {demo}"
            screen.observe_live(observed, controls, self.site_label + site)
            screen.watch_flight(live.flight)

        async def ready() -> None:
            # The screen takes its running shape before the crawl's clock starts.
            if self._observed is not None:
                await screen.settle(self._observed.config.max_tasks)

        try:
            await live.run(started, ready)
            for root, why in live.unreachable:
                # Whole, where the status line may have to cut it; literal, not markup.
                self.notify(
                    printable(f"{root}: {why}"),
                    title="cannot reach the site",
                    severity="error",
                    timeout=30,
                    markup=False,
                )
            if live.unreachable:
                root, why = live.unreachable[0]
                screen.note = printable(f"cannot reach {root}: {why}", 300)
        except Exception as exc:
            # The screen stays up with the message; the exit status says it failed.
            self.crawl_error = printable(f"{type(exc).__name__}: {exc}", 200)
            screen.note = self.crawl_error
            self.notify(
                self.crawl_error,
                title="the crawl failed",
                severity="error",
                timeout=30,
                markup=False,
            )
        finally:
            # The end on screen now, not at the next frame slot (up to a frame later).
            screen.redraw()
            screen.refresh_bindings()

    async def _run_attached(self, attached: Attached | ClusterAttached) -> None:
        """Watch a crawl in another process. Its controls go to the screen only: quitting
        this viewer must not stop that crawl, as the app's own stop on the way out would."""
        screen = self.panels
        assert isinstance(screen, LiveScreen)

        def started(observed: ObservedCrawl, controls: CrawlControls | None, site: str) -> None:
            screen.observe_live(observed, controls, site)

        await attached.run(started)

    def _over(self) -> bool:
        return self._observed is not None and self._observed.snapshot(()).phase in OVER

    def get_system_commands(self, screen: Screen[object]) -> Iterable[SystemCommand]:
        # The palette's own "Quit" would leave at once; ours stops the crawl gracefully
        # and is offered by the screen's key table.
        return (c for c in super().get_system_commands(screen) if c.title != "Quit")

    async def action_quit(self) -> None:
        """Stop the crawl gracefully (its workers cancelled, its session closed), then exit."""
        if self._quitting:
            return
        self._quitting = True
        if not isinstance(self.source, LiveCrawl):
            self.exit(0)  # nothing runs behind a replay: nothing to stop
            return
        screen = self.panels
        if isinstance(screen, LiveScreen):
            screen.stopping = True
        if not screen.note:
            screen.note = "quitting…"
        screen.refresh_bindings()
        if self._controls is not None and not self._over():
            self._controls.stop()
        elif self._controls is None and self._crawl_worker is not None:
            self._crawl_worker.cancel()  # still starting the demo site: nothing to report
        # Waiting happens in a worker, so the screen keeps drawing "quitting…" meanwhile.
        self.run_worker(self._exit_when_stopped(), name="quit", group="quit")

    async def _exit_when_stopped(self) -> None:
        if self._crawl_worker is not None:
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await self._crawl_worker.wait()
        self.exit(1 if self.crawl_error or self.unreachable else 0)

    @property
    def unreachable(self) -> list[tuple[str, str]]:
        """(root, why) for each root, when a live crawl reached none of them."""
        return self.source.unreachable if isinstance(self.source, LiveCrawl) else []

    def write_report(self, out: TextIO) -> bool:
        """After the app closes: the crawl's report (if one started); True if printed."""
        return isinstance(self.source, LiveCrawl) and self.source.write_report(out)
