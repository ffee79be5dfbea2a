"""The live TUI: the app wires the engine to the widgets; the widgets show; the engine decides.

The crawl runs as an async Textual worker on the app's own event loop, so the screen and
the crawler share one loop, as the chapter's single-threaded design intends. The screen
samples the crawler on a timer; the engine never calls the UI.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import ClassVar, TextIO

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container
from textual.timer import Timer
from textual.widgets import DataTable, Footer
from textual.worker import Worker, WorkerCancelled, WorkerFailed

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.politeness import crawl_delay_note
from crawlscope.engine.report import unreachable_roots, write_report
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.snapshot import Phase, Snapshot
from crawlscope.engine.text import mask_userinfo, printable
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.engine.workers import Worker as CrawlWorker
from crawlscope.engine.workers import WorkerState

from .commands import CrawlCommands
from .format import origin_of
from .history import History
from .widgets.help_screen import HelpScreen
from .widgets.queue_panel import QueuePanel, QueueView
from .widgets.recent_fetches import RecentFetches
from .widgets.redirect_tree import RedirectTree
from .widgets.replay_bar import ReplayBar, ReplayView
from .widgets.status_line import StatusLine, StatusView
from .widgets.workers_table import WorkersTable

# The demo site when the TUI opens on it: slow enough that a person sees states change,
# big enough that the crawl lasts a while.
DEMO_FOR_THE_EYE = DemoConfig(pages=1000, latency=0.1, jitter=0.2)

SLOWMO_STEPS = (0.0, 0.25, 0.5, 1.0)
FRAMES_PER_SECOND = 15.0
# The workers table is redrawn every this many frames, and no more often than every
# TABLE_INTERVAL seconds. DataTable re-renders every visible cell whenever any cell
# changes, and on a busy crawl something changes every frame (the "for" column at least):
# at 100 workers one redraw costs 10-15 ms, more than the rest of a frame together, and
# it holds the loop the crawl runs on. 5 redraws a second still read as motion; a key's
# effect is drawn at once regardless (the actions redraw everything). The frame count
# matters when the loop is saturated and frames come late anyway; the interval when
# they come on time (a crawl waiting on a slow site), where it keeps the table from
# taking a seventh of the loop.
TABLE_EVERY = 2
TABLE_INTERVAL = 0.2
# The redirect tree is redrawn at most this often (what it draws is capped: redirect_tree.py).
CHAINS_EVERY = 0.5

# Rows the queue, recent and redirect panels need at the least (the queue panel's lines).
BOTTOM_MIN = 11

OVER = frozenset({Phase.STOPPING, Phase.FINISHED, Phase.STOPPED})
# Actions that steer the crawl; they stop applying once it is over.
CRAWL_ACTIONS = frozenset(
    {"pause_all", "resume_all", "pause_worker", "resume_worker", "cancel_worker", "add_worker",
     "remove_worker", "slowmo"}
)  # fmt: skip

# Actions that move a replay; they apply only when the app plays a recording.
REPLAY_ACTIONS = frozenset({"toggle_play", "step_event", "speed", "jump", "jump_to"})
REPLAY_SPEEDS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)

ConfigMaker = Callable[[Sequence[str]], CrawlConfig]
# What the panels read: the live crawler, or a recording played back.
Source = Crawler | ReplayedCrawl


def default_config(roots: Sequence[str]) -> CrawlConfig:
    return CrawlConfig(roots=tuple(roots))


class CrawlScopeApp(App[int]):
    """Crawl `roots` (none: the built-in demo site, served in-process) and show it live."""

    TITLE = "crawlscope"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {CrawlCommands}
    HORIZONTAL_BREAKPOINTS: ClassVar[list[tuple[int, str]]] = [(0, "-narrow"), (100, "-wide")]
    # p and space each have two bindings; check_action shows the one that applies, so
    # the footer says "Resume" while paused.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("p", "pause_all", "Pause"),
        Binding("p", "resume_all", "Resume"),
        Binding("space", "pause_worker", "Pause one"),
        Binding("space", "resume_worker", "Resume one"),
        Binding("c", "cancel_worker", "Cancel"),
        Binding("delete", "cancel_worker", "Cancel", show=False),
        Binding("a", "add_worker", "Add"),
        Binding("plus", "add_worker", "Add", show=False),
        Binding("minus", "remove_worker", "Remove", key_display="-"),
        Binding("s", "slowmo(1)", "Slow-mo"),
        Binding("S", "slowmo(-1)", "Slow-mo back", show=False),
        # A replay's transport. Priority, so the workers table's own use of the arrows,
        # home/end and page keys gives way; check_action lets them through on a live crawl.
        Binding("p,space", "toggle_play", "Play/Pause", key_display="p", priority=True),
        Binding("full_stop,right", "step_event(1)", "Step", key_display=".", priority=True),
        Binding("comma,left", "step_event(-1)", "Back", key_display=",", priority=True),
        Binding("right_square_bracket", "speed(1)", "Faster", key_display="]", priority=True),
        Binding("left_square_bracket", "speed(-1)", "Slower", key_display="[", priority=True),
        Binding("pagedown", "jump(0.1)", "+10%", show=False, priority=True),
        Binding("pageup", "jump(-0.1)", "-10%", show=False, priority=True),
        Binding("home", "jump_to(0)", "Start", show=False, priority=True),
        Binding("end", "jump_to(1)", "End", show=False, priority=True),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(
        self,
        roots: Sequence[str] = (),
        *,
        make_config: ConfigMaker = default_config,
        demo: DemoConfig | None = None,
        start_paused: bool = False,
        slowmo: float = 0.0,
        reproducible: bool = False,
        fps: float = FRAMES_PER_SECOND,
        record: str | None = None,
        replay: ReplayedCrawl | None = None,
        replay_name: str = "",
        greeting: str = "",
    ) -> None:
        """`make_config` builds the crawl's config from the roots (the demo site's URL
        when `roots` is empty). `reproducible` shows dashes for every wall-clock figure
        and leaves out the demo site's port and source line numbers, so that screenshots
        of one crawl state are identical from run to run (and Python release).

        `record` writes the crawl's event trace to that file. `replay` plays a recording
        instead of crawling: the panels read it, the transport keys move its time, the
        keys that steer a crawl are off, and `start_paused` opens it paused."""
        super().__init__()
        self.roots = tuple(roots)
        self.make_config = make_config
        self.demo = demo or DEMO_FOR_THE_EYE
        self.start_paused = start_paused
        self.reproducible = reproducible
        self.fps = fps
        self.record = record  # where to write the crawl's event trace, if anywhere
        # A recording to play instead of a crawl: nothing is fetched, the keys move time.
        self.replay = replay
        self.replay_name = replay_name
        self.greeting = greeting  # shown once on opening (the lecture's word on stage 3)
        self.playing = replay is not None and not start_paused
        self.speed = 1.0
        self._played_at = 0.0  # monotonic time of the last frame that moved the replay
        self.crawler: Crawler | None = None
        self.crawl_error: str | None = None
        # (root, why) for each root, when the crawl ended with none of them reached.
        self.unreachable: list[tuple[str, str]] = []
        self.frames = 0  # timer ticks so far: what "within N frames" counts
        self.frame_costs: deque[float] = deque(maxlen=10_000)  # seconds per _tick
        self.site = ""
        self._slowmo = slowmo
        self._history = History()
        self._crawl_worker: Worker[None] | None = None
        self._quitting = False
        self._chains_version: tuple[int, int] | None = None
        self._chains_at = 0.0
        self._bindings_state: tuple[object, ...] = ()
        self._layout_key: tuple[int, int] = (0, 0)
        self._timer: Timer | None = None
        self._heap_frozen = False  # gc.freeze() done by this app, undone on unmount
        # The frame and perf_counter time of the workers table's last timed redraw.
        self._table_frame = -TABLE_EVERY
        self._table_at = float("-inf")

    # ---- layout and start ------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        with Container(id="panels"):
            workers = WorkersTable(id="workers")
            workers.border_title = "workers"
            yield workers
            queue = QueuePanel(id="queue")
            queue.border_title = "queue"
            yield queue
            recent = RecentFetches(id="recent")
            recent.border_title = "recent fetches"
            yield recent
            chains = RedirectTree(id="redirects")
            chains.border_title = "redirect chains"
            yield chains
        if self.replay is not None:
            yield ReplayBar(id="replay-bar")
        yield Footer()

    def on_mount(self) -> None:
        # Looked up once: a frame must not search the DOM, and the timer may fire once
        # more while the screen is being taken down.
        self._status = self.query_one(StatusLine)
        self._table = self.query_one(WorkersTable)
        self._queue = self.query_one(QueuePanel)
        self._recent = self.query_one(RecentFetches)
        self._tree = self.query_one(RedirectTree)
        self._panels = self.query_one("#panels", Container)
        self._footer = self.query_one(Footer)
        self._table.frozen = self._recent.frozen = self.reproducible
        if self.replay is not None:
            self._start_replay(self.replay)
        else:
            self._crawl_worker = self.run_worker(
                self._run_crawl(), name="crawl", group="crawl", exit_on_error=False
            )
        self._timer = self.set_interval(1 / self.fps, self._tick)
        # Once the screen is built, its objects (the DOM, styles, Textual's and Rich's
        # modules: more than the crawler's own heap) live as long as the app. Frozen, the
        # collector stops walking them on each full collection, which the crawl's
        # allocations trigger again and again: that walk cost a TUI crawl at full speed
        # about 4% of its time (a 3 s crawl: 0.43 s in the collector, 0.30 s frozen).
        self.call_after_refresh(self._freeze_heap)
        self._table.focus()
        if self.greeting:
            self.notify(self.greeting, title="stage 3", timeout=20)

    def _freeze_heap(self) -> None:
        # Not once closing: on_unmount would have nothing left to undo it.
        if not self._heap_frozen and self.is_running:
            gc.freeze()
            self._heap_frozen = True

    async def on_unmount(self) -> None:
        # Closing without q (an error, a test's end): Textual has cancelled the crawl's
        # worker; wait for its cleanup (workers, session, demo site) on this loop.
        if self._timer is not None:
            self._timer.stop()
        if self._heap_frozen:
            # Back to the collector: cycles among the frozen objects can be freed again,
            # and a process that runs several apps (the tests) does not pile them up.
            gc.unfreeze()
            self._heap_frozen = False
        if self.crawler is not None and self.crawler.phase not in OVER:
            self.crawler.stop()
        if self._crawl_worker is not None:
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await self._crawl_worker.wait()

    def _start_replay(self, replay: ReplayedCrawl) -> None:
        self._bar = self.query_one(ReplayBar)
        origin = origin_of(replay.config.root_urls[0])
        self._table.origin = self._recent.origin = self._tree.origin = origin
        self.site = f"replay of {self.replay_name or ' '.join(replay.config.roots)}"
        replay.goto(0)
        self._played_at = time.monotonic()

    async def _run_crawl(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                roots = self.roots
                if not roots:
                    server = await stack.enter_async_context(DemoServer(self.demo))
                    roots = (server.url,)
                    self.site = "demo site" if self.reproducible else f"demo site {server.url}"
                else:
                    self.site = " ".join(mask_userinfo(root) for root in roots)
                crawler = Crawler(self.make_config(roots))
                crawler.slowmo = self._slowmo
                if self.record:
                    # Closed on the way out however the crawl ends, so the file has its
                    # end line and replays to the last state shown.
                    stack.callback(Recorder(crawler, self.record).close)
                if self.start_paused:
                    crawler.pause_all()
                origin = origin_of(crawler.config.root_urls[0])
                self._table.origin = self._recent.origin = self._tree.origin = origin
                self.crawler = crawler
                await crawler.crawl()
                self.unreachable = unreachable_roots(crawler)
                for root, why in self.unreachable:
                    # Whole, where the status line may have to cut it; literal, not markup.
                    self.notify(
                        printable(f"{root}: {why}"),
                        title="cannot reach the site",
                        severity="error",
                        timeout=30,
                        markup=False,
                    )
                if crawler.faults:
                    raise crawler.faults[0]  # why it stopped: a listener failed, say --record's
        except Exception as exc:
            # The screen stays up with the message; the exit status says it failed.
            self.crawl_error = printable(f"{type(exc).__name__}: {exc}", 200)
            self.notify(self.crawl_error, title="the crawl failed", severity="error", timeout=30)
        finally:
            self.refresh_bindings()

    # ---- a frame ---------------------------------------------------------------------

    def _tick(self) -> None:
        if not self.is_running:
            return  # shutting down: the widgets are being taken off the screen
        started = time.perf_counter()
        if self.replay is not None:
            self._play(self.replay)
        table = (
            self.frames - self._table_frame >= TABLE_EVERY
            and started - self._table_at >= TABLE_INTERVAL
        )
        if table:
            self._table_frame, self._table_at = self.frames, started
        self._redraw(table=table)
        self.frames += 1
        self.frame_costs.append(time.perf_counter() - started)

    def _play(self, replay: ReplayedCrawl) -> None:
        """Move the recording on by the time since the last frame, times the speed."""
        now = time.monotonic()
        elapsed, self._played_at = now - self._played_at, now
        if not self.playing:
            return
        if replay.position >= replay.duration:
            self.playing = False  # the end: stay on the last state, paused
            self.refresh_bindings()
            return
        replay.seek(replay.position + elapsed * self.speed)

    def _redraw(self, table: bool = True) -> None:
        crawler: Source | None = self.crawler if self.replay is None else self.replay
        if self.replay is not None:
            r = self.replay
            self._bar.show(
                ReplayView(self.playing, self.speed, r.position, r.duration, r.index, len(r.events))
            )
        if crawler is not None:
            self._show(crawler, crawler.snapshot(), table)
        else:
            self._status.show(self._status_view(None, None))

    def _show(self, crawler: Source, snap: Snapshot, table: bool) -> None:
        if table or snap.phase in OVER:
            self._table.show(snap.workers)
            self._fit_workers(self._table.row_count)
        a = snap.accounting
        finished = a.done + a.failed
        over = snap.phase in OVER
        if not self.reproducible and not over and self._history.feed(snap.t, a.queued, finished):
            self._queue.show_history(self._history.queue_sizes(), self._history.throughputs())
        rate: float | None = None
        if not self.reproducible:
            if over:
                rate = finished / snap.elapsed if snap.elapsed else 0.0
            else:
                rate = self._history.rate(snap.t, finished)
        # A view in the paused state is alive by definition (an ended one is stopped or
        # cancelled); a replay's views carry no task, so asking the task would count none.
        paused = sum(1 for w in snap.workers if w.state is WorkerState.PAUSED)
        self._queue.show(
            QueueView(snap.phase, a, snap.unfinished, snap.live_workers, paused, rate, over)
        )
        recent = crawler.recent
        self._recent.show(reversed(recent), recent[-1] if recent else None)
        # A chain's end also moves with no new hop: when its last URL is fetched.
        chains_version = (snap.redirect_version, finished + a.filtered + a.unfetched)
        if chains_version != self._chains_version and (
            snap.t - self._chains_at >= CHAINS_EVERY or over
        ):
            self._chains_version = chains_version
            self._chains_at = snap.t
            self._tree.show_from(crawler)
        self._status.show(self._status_view(crawler, snap))
        self._refresh_bindings_if_changed(crawler, snap)

    def _status_view(self, crawler: Source | None, snap: Snapshot | None) -> StatusView:
        note = ""
        if self.crawl_error:
            note = self.crawl_error
        elif self.unreachable:
            root, why = self.unreachable[0]
            note = printable(f"cannot reach {root}: {why}", 300)
        elif self._quitting:
            note = "quitting…"
        if crawler is None or snap is None:
            return StatusView(None, None, 0, 0, self._slowmo, self.site, note)
        return StatusView(
            phase=snap.phase,
            elapsed=None if self.reproducible else snap.elapsed,
            live_workers=snap.live_workers,
            busy_workers=snap.accounting.held,
            slowmo=crawler.slowmo,
            site=self.site,
            note=note,
            delay=crawl_delay_note(crawler),
        )

    def _refresh_bindings_if_changed(self, crawler: Source, snap: Snapshot) -> None:
        # The footer greys out keys that do not apply; it only needs telling when the
        # answer can have changed, not every frame.
        selected = self._selected()
        state = (
            snap.phase,
            crawler.paused_all,
            self._quitting,
            snap.live_workers,
            selected is not None and selected.alive,
            selected is not None and selected.paused,
            selected is not None and selected.retiring,
            sum(1 for w in snap.workers if w.retiring),
        )
        if state != self._bindings_state:
            self._bindings_state = state
            self.refresh_bindings()

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self.refresh_bindings()

    def on_resize(self, event: events.Resize) -> None:
        if self._timer is None:
            return  # not mounted yet; on_mount's first frames do the fitting
        # Every key must fit in the footer at 80 columns, quit and help included.
        self._footer.compact = event.size.width < 100
        self._footer.show_command_palette = event.size.width >= 100
        self._fit_workers(self._table.row_count)

    def _fit_workers(self, rows: int) -> None:
        """The workers panel is as tall as its rows need, up to what leaves the panels
        below their minimum; they get the rest."""
        height = self._panels.size.height
        if (rows, height) == self._layout_key or not height:
            return
        self._layout_key = (rows, height)
        wanted = rows + 3  # border and header
        # At most 3/5 of the height (the recent fetches and chains deserve room too),
        # and never so much that the panels below get less than they need.
        workers = max(6, min(wanted, height - BOTTOM_MIN, height * 3 // 5))
        self._panels.styles.grid_rows = f"{workers} 1fr"

    # ---- which keys apply ------------------------------------------------------------

    def _selected(self) -> CrawlWorker | None:
        crawler = self.crawler
        worker_id = self._table.selected_worker
        if crawler is None or worker_id is None:
            return None
        return crawler.workers.get(worker_id)

    def action_applies(self, action: str) -> bool:
        """Whether `action` can act now (the command palette offers only these)."""
        return bool(self.check_action(action.split("(")[0], ()))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in REPLAY_ACTIONS:
            return self.replay is not None
        if action not in CRAWL_ACTIONS:
            return True
        if self.replay is not None:
            return False  # a recording cannot be steered, only played
        crawler = self.crawler
        if crawler is None or self._quitting:
            # Not yet (or no longer) possible: shown greyed out, the pause keys only once.
            return None if action not in ("resume_all", "resume_worker") else False
        if crawler.phase in OVER:
            return False  # hidden: nothing left to steer
        if action == "pause_all":
            return not crawler.paused_all
        if action == "resume_all":
            return crawler.paused_all
        if action in ("pause_worker", "resume_worker", "cancel_worker"):
            w = self._selected()
            paused = w is not None and w.paused
            if action == "pause_worker" and paused:
                return False
            if action == "resume_worker" and not paused:
                return False
            if w is None or not w.alive:
                return None
            if action == "cancel_worker" and w.retiring:
                return None
        if action == "remove_worker" and not any(
            w.alive and not w.retiring for w in crawler.workers.values()
        ):
            return None
        return True

    # ---- actions ---------------------------------------------------------------------

    def action_pause_all(self) -> None:
        if self.crawler is not None:
            self.crawler.pause_all()
            self._redraw()

    def action_resume_all(self) -> None:
        if self.crawler is not None:
            self.crawler.resume_all()
            self._redraw()

    def action_pause_worker(self) -> None:
        w = self._selected()
        if w is not None and self.crawler is not None:
            self.crawler.pause(w.id)
            self._redraw()

    def action_resume_worker(self) -> None:
        w = self._selected()
        if w is not None and self.crawler is not None:
            self.crawler.resume(w.id)
            self._redraw()

    def action_cancel_worker(self) -> None:
        w = self._selected()
        if w is not None and self.crawler is not None:
            self.crawler.cancel_worker(w.id)
            self._redraw()

    def action_add_worker(self) -> None:
        if self.crawler is not None:
            self.crawler.add_worker()
            self._redraw()

    def action_remove_worker(self) -> None:
        if self.crawler is not None:
            self.crawler.remove_worker()
            self._redraw()

    def action_slowmo(self, direction: int = 1) -> None:
        if self.crawler is None:
            return
        current = self.crawler.slowmo
        steps = SLOWMO_STEPS
        index = min(range(len(steps)), key=lambda i: abs(steps[i] - current))
        self._slowmo = steps[(index + direction) % len(steps)]
        self.crawler.slowmo = self._slowmo
        self.notify(
            f"{self._slowmo:g} s at each state change" if self._slowmo else "full speed",
            title="slow motion",
            timeout=2,
        )
        self._redraw()

    # ---- a replay's transport -------------------------------------------------------

    def _moved(self) -> None:
        """After a jump in time: redraw everything now, the chains and sparklines too."""
        self._chains_version = None
        self._chains_at = float("-inf")
        self._history = History()  # its samples belong to the old stretch of time
        self._played_at = time.monotonic()
        self._redraw()
        self.refresh_bindings()

    def action_toggle_play(self) -> None:
        replay = self.replay
        if replay is None:
            return
        if not self.playing and replay.position >= replay.duration:
            replay.goto(0)  # play again from the start, as a media player does
        self.playing = not self.playing
        self._moved()

    def action_step_event(self, direction: int = 1) -> None:
        """Pause, and move exactly one recorded event forward or back."""
        if self.replay is None:
            return
        self.playing = False
        self.replay.goto(self.replay.index + direction)
        self._moved()

    def action_speed(self, direction: int = 1) -> None:
        steps = REPLAY_SPEEDS
        index = min(range(len(steps)), key=lambda i: abs(steps[i] - self.speed))
        self.speed = steps[min(max(index + direction, 0), len(steps) - 1)]
        self._redraw()

    def action_jump(self, share: float) -> None:
        """Move by `share` of the recording's length (pgup/pgdn: 10%)."""
        if self.replay is not None:
            self.replay.seek(self.replay.position + share * self.replay.duration)
            self._moved()

    def action_jump_to(self, share: float) -> None:
        if self.replay is not None:
            self.replay.goto(0 if share <= 0 else len(self.replay.events))
            self._moved()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        """Stop the crawl gracefully (its workers cancelled, its session closed), then exit."""
        if self._quitting:
            return
        self._quitting = True
        if self.replay is not None:
            self.exit(0)  # nothing runs behind a replay: nothing to stop
            return
        self.refresh_bindings()
        crawler = self.crawler
        if crawler is not None and crawler.phase not in OVER:
            crawler.stop()
        elif crawler is None and self._crawl_worker is not None:
            self._crawl_worker.cancel()  # still starting the demo site: nothing to report
        # Waiting happens in a worker, so the screen keeps drawing "quitting…" meanwhile.
        self.run_worker(self._exit_when_stopped(), name="quit", group="quit")

    async def _exit_when_stopped(self) -> None:
        if self._crawl_worker is not None:
            with contextlib.suppress(WorkerCancelled, WorkerFailed):
                await self._crawl_worker.wait()
        self.exit(1 if self.crawl_error or self.unreachable else 0)

    # ---- after the app closes --------------------------------------------------------

    def write_report(self, out: TextIO) -> bool:
        """Print the crawl's report (if it started); True if there was one."""
        crawler = self.crawler
        if crawler is None or crawler.t0 is None:
            return False
        write_report(crawler, out)
        return True
