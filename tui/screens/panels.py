"""The panels every way of watching a crawl shares: status, workers, queue, recent
fetches and redirect chains, refreshed from an ObservedCrawl at a fixed frame rate.

The screen samples its source on a timer and the source never calls the screen, so the
cost of a frame follows what is on screen, not how fast the crawl goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container
from textual.screen import ModalScreen

from crawlscope.engine.observe.contract import CrawlControls, ObservedCrawl
from crawlscope.engine.observe.snapshot import OVER, Snapshot
from crawlscope.engine.observe.workers import WorkerState, WorkerView
from crawlscope.engine.urls import origin_of

from ..frame_budget import FRAMES_PER_SECOND, FrameBudget, FrameKind, next_slot
from ..history import History
from ..keys import Key, screen_actions
from ..textual_private import TimedScreen, report_error
from ..widgets.code_pane import CodePane
from ..widgets.held import Held, Repaints
from ..widgets.keys_footer import KeysFooter
from ..widgets.queue_panel import QueuePanel, QueueView
from ..widgets.recent_fetches import RecentFetches
from ..widgets.redirect_tree import RedirectTree
from ..widgets.status_line import StatusLine, StatusView
from ..widgets.verdict_line import VerdictLine
from ..widgets.warnings_screen import WarningsScreen
from ..widgets.worker_detail_screen import WorkerDetailScreen
from ..widgets.workers_table import WorkersTable
from .code_view import CodeViews
from .direct_paint import DirectPaint
from .hosts import HostsScreen
from .time_views import TimeViews
from .worker_filter import WorkerFilter

# A crawl waits at most this long for the screen to take its running shape (settle).
SETTLE_LIMIT = 0.5
# The redirect tree is redrawn at most this often (what it draws is capped: redirect_tree.py).
CHAINS_EVERY = 0.5

# Rows the queue, recent and redirect panels need at the least (the queue panel's lines).
BOTTOM_MIN = 11


class Backdrop(Container):
    """The panels' grid: nothing of its own to draw but its background (see BLANK)."""

    BLANK = True


class PanelsScreen(TimedScreen, TimeViews, CodeViews, WorkerFilter):
    """Draws an ObservedCrawl. Subclasses add the keys: steering a live crawl, or
    moving through a recording."""

    # Textual draws a change of one cell by rendering again, in full, every widget whose
    # clip holds it: the status line, but also the screen, the panels' grid and the footer,
    # whose clip is the whole screen. Blank (a background, no border, no text), each is one
    # blank strip repeated instead of 0.1 to 0.2 ms of styling: a sixth of a pulse's cost.
    BLANK = True
    KEYS: ClassVar[tuple[Key, ...]] = ()
    BINDINGS: ClassVar[list[BindingType]] = []

    def __init__(self, *, fps: float = FRAMES_PER_SECOND, reproducible: bool = False) -> None:
        """`reproducible` shows dashes for every wall-clock figure and leaves out source
        line numbers, so that screenshots of one crawl state are identical from run to
        run (and Python release)."""
        super().__init__()
        # What each frame slot draws, if anything (see frame_budget.py).
        self.budget = FrameBudget(fps)
        self.reproducible = reproducible
        self.source: ObservedCrawl | None = None
        self.site = ""  # what is crawled, for the status line
        self.note = ""  # a word for the status line: an error, "quitting…"
        self.snap: Snapshot | None = None  # the last frame's
        self.frames = 0  # frames drawn so far: what "within N frames" counts
        # The last frame (from 0; or the next, for a redraw a key asked for) that drew
        # every panel, the chains included: tests wait for it before reading the screen
        # (the budget can hold whole frames back for a second after a busy loop).
        self.whole_frame = -1
        # Frame slots (1/fps apart) that passed with no frame drawn: the loop was busy
        # with the crawl, or the budget held the frame back. frames + frames_skipped is
        # the frames asked for.
        self.frames_skipped = 0
        self.frame_costs: deque[float] = deque(maxlen=10_000)  # seconds per _tick
        self.frame_lags: deque[float] = deque(maxlen=10_000)  # how late each frame came
        self._frame_due = 0.0  # loop time the next frame is due
        self._frame_handle: asyncio.TimerHandle | None = None
        self._history = History()
        self._history_shown = True  # the sparklines show the history's last sample
        self._chains_version: tuple[int, int] | None = None
        # The snapshot time of the chains' last redraw; at first, long ago, whatever the
        # source's clock (a replay's starts at 0).
        self._chains_at = float("-inf")
        self._bindings_state: tuple[object, ...] = ()
        self._layout_key: tuple[int, int] = (0, 0)
        # A key can arrive before on_mount has found the widgets; it acts on the source,
        # and the first frame draws the result.
        self._widgets_found = False
        self._missed = False  # frames went undrawn under a full screen (hidden)

    @property
    def fps(self) -> float:
        return self.budget.fps

    @property
    def ui_seconds(self) -> float:
        """Seconds the screen has taken from the loop in all: ticks and Textual's drawing."""
        return self.budget.ui_seconds

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
        yield VerdictLine(id="verdict")
        with Backdrop(id="panels"):
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
            yield CodePane(id="live-code")  # docked right, shown on `v` (code_view.py)
        yield from self.compose_bar()
        yield KeysFooter()

    def compose_bar(self) -> ComposeResult:
        """A line above the footer, for a subclass that needs one."""
        yield from ()

    def on_mount(self) -> None:
        # Looked up once: a frame must not search the DOM, and the timer may fire once
        # more while the screen is being taken down.
        self._status = self.query_one(StatusLine)
        self._verdict = self.query_one(VerdictLine)
        self._table = self.query_one(WorkersTable)
        self._queue = self.query_one(QueuePanel)
        self._recent = self.query_one(RecentFetches)
        self._tree = self.query_one(RedirectTree)
        self._panels = self.query_one("#panels", Backdrop)
        self._footer = self.query_one(KeysFooter)
        # The widgets whose refreshes a frame holds and paints itself (see _draw).
        # (Not query(Repaints): CSS type names follow first bases only, CursorLines' is
        # ScrollView.)
        self._repainting = tuple(
            w for w in self.walk_children(with_self=False) if isinstance(w, Repaints)
        )
        self._painter = DirectPaint(self, self._panels, (self._status, self._table), self.drawn)
        self._table.frozen = self._recent.frozen = self.reproducible
        self._widgets_found = True
        self._show_origin()
        if self.source is not None:
            # Given a crawl before it was mounted: its first frame now, for the same
            # reason as in observe().
            self.redraw()
        loop = asyncio.get_running_loop()
        self._frame_due = loop.time() + 1 / self.fps
        self._frame_handle = loop.call_at(self._frame_due, self._frame)
        self._table.focus()

    def on_unmount(self) -> None:
        if self._frame_handle is not None:
            self._frame_handle.cancel()
            self._frame_handle = None

    def observe(self, source: ObservedCrawl, site: str) -> None:
        """Start drawing `source` (now, or once mounted if called before)."""
        self.source = source
        self.site = site
        # Building the screen (mounting, the first layout: 100 to 200 ms) took nothing from
        # this crawl, which had not started: its frames start with a full allowance, not
        # with that debt to pay back by skipping its first half second.
        self.budget.restart()
        if self._widgets_found:
            self._show_origin()
            # A frame now, not at the timer's next turn: the keys that apply are read from
            # the last frame, and a key pressed before it would find none.
            self.redraw()

    async def settle(self, workers: int) -> None:
        """Lay the screen out now as it will be once the crawl's `workers` rows are on it
        (the workers panel's height, the table's scrollbar, the footer's keys), and return
        once that is drawn, or after SETTLE_LIMIT at most. Awaited before the crawl starts:
        those are four or five layouts of the whole screen, 40 to 80 ms with the messages
        around them, that otherwise held the loop in the crawl's first fifth of a second.
        Called from another task than the screen's."""
        if not self._widgets_found:
            return
        self._table.expect(workers)
        self._fit_workers(self._table.rows_to_fit)
        quiet = 0  # refreshes in a row that laid nothing out, the footer's keys settled
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_LIMIT):
                # Two: a layout can call for another (a scrollbar that came sizes itself),
                # by way of a widget's message after the refresh that made it.
                while quiet < 2:
                    layouts = self.layouts
                    await self.wait_for_refresh()
                    settled = self._footer.settled and layouts == self.layouts
                    quiet = quiet + 1 if settled else 0

    def _show_origin(self) -> None:
        # URLs of the crawl's own site are drawn as paths.
        if self.source is not None:
            origin = origin_of(self.source.config.root_urls[0])
            self._table.origin = self._recent.origin = self._tree.origin = origin

    # ---- a frame ---------------------------------------------------------------------

    def _frame(self) -> None:
        """The frame timer: frames are due on a grid of 1/fps. A frame that comes late (the
        loop was busy) is drawn at once, not at the next grid line, and the grid lines it
        missed count as skipped; on a saturated loop the budget picks what a frame draws,
        if anything."""
        self._frame_handle = None
        if not self.app.is_running:
            return  # shutting down: the widgets are being taken off the screen
        loop = asyncio.get_running_loop()
        now = loop.time()
        late = now - self._frame_due
        self.frame_lags.append(late)
        kind = self.budget.slot(now, late, time.process_time(), self.frames)
        if kind is None:
            self.frames_skipped += 1
        else:
            self._draw(kind)
        due, missed = next_slot(self._frame_due, late, 1 / self.fps)
        self.frames_skipped += missed
        self._frame_due = due
        self._frame_handle = loop.call_at(due, self._frame)

    def _tick(self, kind: FrameKind = "table") -> None:
        if not self.app.is_running:
            return  # shutting down: the widgets are being taken off the screen
        started = time.perf_counter()
        self.advance()
        if self.hidden():
            self._missed = True
            return
        self.redraw(table=kind == "table", pulse=kind == "pulse", rows=kind == "rows")
        self.frames += 1
        cost = time.perf_counter() - started
        self.frame_costs.append(cost)
        self.budget.ticked(kind, cost)

    def hidden(self) -> bool:
        """Whether a full screen is over this one (the timeline): then no frame is drawn,
        since Textual would draw the whole screen on top again for each change below."""
        top = self.app.screen
        return top is not self and not isinstance(top, ModalScreen)

    def on_screen_resume(self) -> None:
        if self._missed:  # back on top after frames it did not draw: all of it, now
            self._missed = False
            self.redraw()

    def _draw(self, kind: FrameKind) -> None:
        """A frame, drawn here and now: its widgets' refreshes are held (see held.py) and
        composited at once, not three turns of the loop later through Textual's messages
        (turns the budget never saw)."""
        held = Held()
        for widget in self._repainting:
            widget.held = held
        try:
            self._tick(kind)
        except Exception as error:  # the app's error, as one raised in a message handler
            report_error(self.app, error)
            return
        finally:
            for widget in self._repainting:
                widget.held = None
        if held.regions:
            self._painter.paint(held)

    def drawn(self, seconds: float) -> None:
        self.budget.drawn(seconds)

    def advance(self) -> None:
        """Move the source on before a frame is drawn (a replay's clock)."""

    def redraw(self, table: bool = True, pulse: bool = False, rows: bool = False) -> None:
        """Draw the source's state now: everything, all but the table (light), the table's
        rows and the status line (rows), or only the status line (a pulse)."""
        if not self._widgets_found:
            return
        source = self.source
        if source is None:
            self._status.show(StatusView(None, None, 0, 0, 0.0, self.site, self.note))
            self.whole_frame = self.frames
            return
        last = self.snap
        if pulse and last is not None:
            # The counts without the workers' views; the keys go on reading the last
            # full snapshot, so a change of phase makes this a full frame.
            glance = source.snapshot((), rows=False)
            if glance.phase is last.phase and glance.phase not in OVER:
                self._feed_history(glance)
                self._show_status(glance)
                self._refresh_bindings_if_changed(glance)
                return
            table = True
        if rows and last is not None:
            # The rows on screen, from their views alone; the other panels keep their
            # pace. A change of phase makes this a full frame, as for a pulse.
            snap = source.snapshot(self.rows_wanted(self._table.wanted_ids()))
            if snap.phase is last.phase and snap.phase not in OVER:
                self.snap = snap
                self._feed_history(snap)
                self.show_rows(self._table, snap)
                self._fit_workers(self._table.rows_to_fit)
                self._status.show_states(snap.state_counts())
                self._show_status(snap)
                self._refresh_bindings_if_changed(snap)
                return
            table = True
        # "Suspended at" costs a walk of each task; only a frame that redraws the table
        # shows it.
        over = last is not None and last.phase in OVER
        wanted = self.rows_wanted(self._table.wanted_ids()) if table or over else set()
        snap = self.snap = source.snapshot(wanted)
        a = snap.accounting
        finished = a.done + a.failed
        over = snap.phase in OVER
        self._feed_history(snap)
        if table or over:
            self.show_rows(self._table, snap)
            self._fit_workers(self._table.rows_to_fit)
            # Of the instant the rows just drawn were taken at, so the two agree.
            self._status.show_states(snap.state_counts())
        if not self._history_shown:
            self._history_shown = True
            self._queue.show_history(self._history.queue_sizes(), self._history.throughputs())
        rate: float | None = None
        if not self.reproducible:
            if over:
                rate = finished / snap.elapsed if snap.elapsed else 0.0
            else:
                rate = self._history.rate(snap.t, finished)
        paused = dict(snap.state_counts()).get(WorkerState.PAUSED, 0)
        self._queue.show(
            QueueView(snap.phase, a, snap.unfinished, snap.live_workers, paused, rate, over)
        )
        if table or over:
            # At the table's pace: on a busy crawl the list changes every frame, and a
            # line scrolling by 15 times a second is no more readable than 7 times.
            recent = source.recent_fetches()
            self._recent.show(reversed(recent), recent[-1] if recent else None)
            # A chain's end also moves with no new hop: when its last URL is fetched.
            chains_version = (snap.redirect_version, finished + a.filtered + a.unfetched)
            # Paced by the screen's clock, not the source's: a source that stops (a
            # monitor gone, a replay paused) would leave its last change undrawn for good.
            now = time.monotonic()
            if chains_version != self._chains_version and (
                now - self._chains_at >= CHAINS_EVERY or over
            ):
                self._chains_version = chains_version
                self._chains_at = now
                self._tree.show_from(source)
            if chains_version == self._chains_version:
                self.whole_frame = self.frames
            self.show_code(snap)
        self._show_status(snap)
        self._refresh_bindings_if_changed(snap)

    def _feed_history(self, snap: Snapshot) -> None:
        a = snap.accounting
        if self.reproducible or snap.phase in OVER:
            return
        if self._history.feed(snap.t, a.queued, a.done + a.failed):
            self._history_shown = False

    def _show_status(self, snap: Snapshot) -> None:
        self._verdict.show("" if self.reproducible else snap.verdict)  # a wall-clock figure
        a = snap.accounting
        self._status.show(
            StatusView(
                phase=snap.phase,
                elapsed=None if self.reproducible else snap.elapsed,
                live_workers=snap.live_workers,
                busy_workers=a.held,
                slowmo=snap.slowmo,
                site=self.site,
                note=self.note,
                delay=snap.crawl_delay,
                flight=self.flight_note,
                pages=a.done + a.failed,
                # Wall-clock figures too (a step's length): a reproducible screen omits it.
                warnings=0 if self.reproducible else snap.warning_count,
            )
        )

    def moved(self) -> None:
        """After a jump in time: redraw everything now, the chains and sparklines too."""
        if not self._widgets_found:
            return
        self._chains_version = None
        self._chains_at = float("-inf")
        self._history = History()  # its samples belong to the old stretch of time
        self.redraw()
        self.refresh_bindings()

    def bindings_state(self, snap: Snapshot) -> tuple[object, ...]:
        """What the footer shows: whether each of this screen's keys applies, as
        check_action answers it. The footer is told only when an answer moves: telling it
        rebuilds its keys and lays the whole screen out again."""
        del snap  # check_action reads the last frame
        return tuple(self.check_action(name, ()) for name in screen_actions(self.KEYS))

    def _refresh_bindings_if_changed(self, snap: Snapshot) -> None:
        # The footer greys out keys that do not apply; it only needs telling when the
        # answer can have changed, not every frame.
        state = self.bindings_state(snap)
        if state != self._bindings_state:
            self._bindings_state = state
            self.refresh_bindings()

    def selected(self) -> WorkerView | None:
        """The highlighted worker as its row shows it."""
        if not self._widgets_found:
            return None
        return self._table.selected_view()

    def on_workers_table_highlighted(self, _event: WorkersTable.Highlighted) -> None:
        self.refresh_bindings()
        self.code_follows()

    def on_workers_table_rows_wanted(self, _event: WorkersTable.RowsWanted) -> None:
        # The rows alone: the other panels keep their pace (and a reader waiting for a
        # whole frame still waits for the next table frame).
        self.redraw(table=False, rows=True)

    def on_resize(self, event: events.Resize) -> None:
        if not hasattr(self, "_panels"):
            return  # not mounted yet; on_mount's first frames do the fitting
        # Every key must fit in the footer at 80 columns, quit and help included.
        self._footer.compact = event.size.width < 100
        self._footer.show_command_palette = event.size.width >= 100
        self._fit_workers(self._table.rows_to_fit)

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

    # ---- keys --------------------------------------------------------------------------

    def action_applies(self, action: str) -> bool:
        """Whether `action` can act now (the command palette offers only these)."""
        name = action.split("(")[0]
        if name not in {key.action.split("(")[0] for key in self.KEYS}:
            return False  # not a key of this screen
        if name.startswith("app."):
            return bool(self.app.check_action(name.removeprefix("app."), ()))
        return bool(self.check_action(name, ()))

    def action_help(self) -> None:
        from ..widgets.help_screen import HelpScreen  # Markdown's parser: 80 ms of import

        self.app.push_screen(HelpScreen())

    def action_worker_detail(self) -> None:
        view = self.selected()
        if view is not None and self.source is not None:
            self.app.push_screen(WorkerDetailScreen(self.source, view.id, self._table.origin))

    def action_warnings(self) -> None:
        if self.source is not None:
            self.app.push_screen(WarningsScreen(self.source))

    def host_controls(self) -> CrawlControls | None:
        """What the hosts screen's keys steer with (None: it only shows the hosts)."""
        return None

    def action_hosts(self) -> None:
        if self.source is not None:
            self.app.push_screen(HostsScreen(self.source, self.host_controls(), self.reproducible))
