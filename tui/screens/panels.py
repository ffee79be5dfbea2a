"""The panels every way of watching a crawl shares: status, workers, queue, recent
fetches and redirect chains, refreshed from an ObservedCrawl at a fixed frame rate.

The screen samples its source on a timer and the source never calls the screen, so the
cost of a frame follows what is on screen, not how fast the crawl goes.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections import deque
from collections.abc import Iterable
from typing import ClassVar, Literal

from textual import events
from textual._compositor import LayoutUpdate
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Container
from textual.geometry import Region, Size
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

from crawlscope.engine.observe import ObservedCrawl
from crawlscope.engine.politeness import origin_of
from crawlscope.engine.snapshot import OVER, Snapshot
from crawlscope.engine.workers import WorkerState, WorkerView

from ..history import History
from ..keys import Key
from ..widgets.held import Held, Repaints
from ..widgets.help_screen import HelpScreen
from ..widgets.keys_footer import KeysFooter
from ..widgets.queue_panel import QueuePanel, QueueView
from ..widgets.recent_fetches import RecentFetches
from ..widgets.redirect_tree import RedirectTree
from ..widgets.status_line import StatusLine, StatusView, state_counts
from ..widgets.workers_table import WorkersTable

FRAMES_PER_SECOND = 15.0
# The workers table is redrawn every this many frames, and no more often than every
# TABLE_INTERVAL seconds. Its redraw is cheap (only the rows on screen whose values
# changed are rebuilt), but on a busy crawl every visible row changes every frame (the
# "for" column at least) and each redrawn line is composited and written to the terminal
# again: every other frame still reads as motion and halves that cost. A key's effect is
# drawn at once regardless (the actions redraw everything).
TABLE_EVERY = 2
TABLE_INTERVAL = 0.1
# While the loop is saturated the table (and the queue panel, the recent fetches and the
# chains, at its pace) is redrawn at most this often; the frames between are pulses: the
# status line alone (clock, pages, workers), a tenth of a table frame's cost, so that the
# screen keeps moving at nearly its full rate exactly when the crawl is busiest. Once a
# second: at twice, the tables (6 to 8 ms each) took half the screen's share of a
# saturated crawl, for rows that change many times between any two of them anyway; in a
# real terminal the screen's share of a 20,000-page crawl fell from 3.2-3.3% to 2.2-2.5%.
TABLE_INTERVAL_BUSY = 1.0
# ...and at least this often, whatever the budget below says.
TABLE_MAX_GAP_BUSY = 2.0
# The frame budget. When the loop is saturated (a frame's turn comes late: the crawl has
# more ready callbacks than one pass of the loop can run in a frame's time), the screen
# may take at most this share of the loop's time. It is kept as an allowance: each frame
# slot adds its length times UI_SHARE, each frame takes what it cost, and a slot that
# finds the allowance spent draws nothing. A frame's cost is all the screen spent since
# the frame slot before: the sampling and widget updates (_tick) and Textual's drawing of
# what they changed (layout, compositing, writing to the terminal), which is most of it.
# When the loop is on time, every frame is drawn.
#
# In a real terminal, amid a crawl at 500 workers, a pulse costs about 1 ms (medians: its
# tick 0.4 ms, Textual's drawing 0.65 ms) and a table frame about 15 ms. (A pulse's
# drawing has since been about halved: the status line is written without the compositor,
# _paint_status_alone.) A pulse cost 2 ms before the screen, the panels' grid and the
# footer were blank (PanelsScreen.BLANK) and the status line skipped Textual's
# StylesCache (OneLine.render_lines); 3% then fell to 11 frames a second on a crawl the
# machine slowed down. 2.5% now pays for 14 to 15 (15
# pulses take 1.5%), a table among them every 1 to 2 s; at 3% the tables came every 0.6 s
# and the frames took 3.4% of a 10,000-page crawl. At 2% a crawl the machine slowed down
# fell below 12 frames a second at 500 workers: the tables forced every
# TABLE_MAX_GAP_BUSY were paid for with pulses.
UI_SHARE = 0.025
# Pulses come first: a table frame before TABLE_MAX_GAP_BUSY waits until the allowance
# covers its cost this many times over, so that drawing it leaves the pulses going. (At
# once, it took what the next pulses needed: they were skipped while it was paid back.)
TABLE_EARLY_COVER = 2.0
# The allowance saved up at most (enough for a table frame), and the debt at most: a
# costly frame (the first layout, a resize) is paid back within MAX_GAP, and the screen
# never freezes for longer.
ALLOWANCE_MAX = 0.1
MAX_GAP = 0.5
# The loop also counts as saturated when the crawl keeps the process this busy, frames
# aside: a crawl waiting on a slow site can use 80% of a core in short passes, so frames
# come on time and yet each one is taken from the crawl.
BUSY_CPU = 0.7
# ...and stays saturated this long after the last frame slot that found it so, once two
# such slots came this close together. Near the line (a crawl on a slow site using 70%
# to 85% of a core), slot after slot flipped between the two: the slots on time drew
# everything, a table every other frame, and the saturated ones then found the allowance
# spent and drew nothing. At 100 workers on a site answering in 100 ms that was 11.5
# frames a second and the screen's largest share of the loop (5.6%).
SATURATION_HOLD = 1.0
# A crawl waits at most this long for the screen to take its running shape (settle).
SETTLE_LIMIT = 0.5
# The redirect tree is redrawn at most this often (what it draws is capped: redirect_tree.py).
CHAINS_EVERY = 0.5

# What a frame draws: everything; all but the table, the recent fetches and the chains;
# the status line alone.
FrameKind = Literal["table", "light", "pulse"]

# Rows the queue, recent and redirect panels need at the least (the queue panel's lines).
BOTTOM_MIN = 11


def region_alone(
    visible: dict[Widget, tuple[Region, Region]], widget: Widget, screen: Screen[None]
) -> Region | None:
    """Where `widget` is on screen, if it is there whole with nothing but the screen
    behind it drawn in its place; else None. `visible`: the compositor's map."""
    place = visible.get(widget)
    if place is None or not place[1].contains_region(place[0]):
        return None  # not shown, or cut by its container
    region = place[0]
    for other, (other_region, clip) in visible.items():
        if other is widget or other is screen:
            continue
        if other_region.intersection(clip).overlaps(region):
            return None
    return region


@functools.cache
def screen_actions(keys: tuple[Key, ...]) -> tuple[str, ...]:
    """The actions of `keys` a screen checks (the app's own, quit and help, are the app's
    to check): worked out once, not on each frame."""
    names = (key.action.split("(")[0] for key in keys)
    return tuple(dict.fromkeys(n for n in names if not n.startswith("app.")))


class Backdrop(Container):
    """The panels' grid: nothing of its own to draw but its background (see BLANK)."""

    BLANK = True


class PanelsScreen(Screen[None]):
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
        self.fps = fps
        self.reproducible = reproducible
        self.source: ObservedCrawl | None = None
        self.site = ""  # what is crawled, for the status line
        self.note = ""  # a word for the status line: an error, "quitting…"
        self.snap: Snapshot | None = None  # the last frame's
        self.frames = 0  # frames drawn so far: what "within N frames" counts
        # The number of the last frame (counted from 0; or the next one, for a redraw a
        # key asked for) that drew every panel from its snapshot, the chains included:
        # the frames between draw some of them. Tests wait for it before reading the
        # screen, since the budget can hold back whole frames for a second after the
        # loop was last busy.
        self.whole_frame = -1
        # Frame slots (1/fps apart) that passed with no frame drawn: the loop was busy
        # with the crawl, or the budget held the frame back. frames + frames_skipped is
        # the frames asked for.
        self.frames_skipped = 0
        self.frame_costs: deque[float] = deque(maxlen=10_000)  # seconds per _tick
        # Seconds the screen has taken from the loop in all: ticks and Textual's drawing.
        self.ui_seconds = 0.0
        self._spent = 0.0  # the part of it since the last frame slot
        self._drawing = False  # inside a compositor refresh or layout: counted once
        self.layouts = 0  # layouts of the screen so far
        # Where the status line is on screen with nothing over it (None: something is, or
        # it is not shown), as worked out for the compositor's map it was read from.
        self._status_map: dict[Widget, tuple[Region, Region]] | None = None
        self._status_alone: Region | None = None
        self.frame_lags: deque[float] = deque(maxlen=10_000)  # how late each frame came
        self._frame_due = 0.0  # loop time the next frame is due
        self._saturated = False  # the crawl fills the loop: the budget applies
        self._saturated_until = 0.0  # loop time (see SATURATION_HOLD)
        self._busy_at = float("-inf")  # loop time of the last slot found busy or late
        self._cpu_at = (0.0, 0.0)  # (loop time, process CPU seconds) at the last frame slot
        self._frame_handle: asyncio.TimerHandle | None = None
        # The budget (see UI_SHARE): loop seconds the screen may still spend, the loop time
        # of the last frame slot, and what the last table frame cost: its tick and its
        # drawing, which Textual does later, often after the next frame slot. While that
        # drawing is still to come, _table_tick holds the tick's part.
        self._allowance = ALLOWANCE_MAX
        self._slot_at = 0.0
        self._table_cost = 0.0
        self._table_tick: float | None = None
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
        # The frame and loop time of the workers table's last timed redraw.
        self._table_frame = -TABLE_EVERY
        self._table_at = float("-inf")

    def compose(self) -> ComposeResult:
        yield StatusLine(id="status")
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
        yield from self.compose_bar()
        yield KeysFooter()

    def compose_bar(self) -> ComposeResult:
        """A line above the footer, for a subclass that needs one."""
        yield from ()

    def on_mount(self) -> None:
        # Looked up once: a frame must not search the DOM, and the timer may fire once
        # more while the screen is being taken down.
        self._status = self.query_one(StatusLine)
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
        self._allowance, self._spent = ALLOWANCE_MAX, 0.0
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
        interval = 1 / self.fps
        now = loop.time()
        late = now - self._frame_due
        self.frame_lags.append(late)
        spent, self._spent = self._spent, 0.0
        self._saturated = self._judge_load(now, late, self._crawl_busy(now, spent))
        since, self._slot_at = (now - self._slot_at if self._slot_at else 0.0), now
        # Kept on an idle loop too, where every frame is drawn whatever it says: a loop that
        # is saturated only now and then must not find it full each time.
        allowance = self._allowance + since * UI_SHARE - spent
        self._allowance = max(-MAX_GAP * UI_SHARE, min(allowance, ALLOWANCE_MAX))
        kind = self._frame_kind(now)
        if kind is None:
            self.frames_skipped += 1
        else:
            self._draw(kind)
        due = self._frame_due + interval * (1 + int(late / interval))
        self.frames_skipped += max(0, round((due - self._frame_due) / interval) - 1)
        self._frame_due = due
        self._frame_handle = loop.call_at(due, self._frame)

    def _frame_kind(self, now: float) -> FrameKind | None:
        """What this frame slot draws, or None: nothing."""
        since_table = now - self._table_at
        kind: FrameKind
        if not self._saturated:
            table = self.frames - self._table_frame >= TABLE_EVERY and since_table >= TABLE_INTERVAL
            kind = "table" if table else "light"
        elif self._allowance < 0:
            return None
        elif since_table >= TABLE_MAX_GAP_BUSY or (
            since_table >= TABLE_INTERVAL_BUSY
            and self._allowance >= self._table_cost * TABLE_EARLY_COVER
        ):
            kind = "table"
        else:
            kind = "pulse"
        if kind == "table":
            self._table_frame, self._table_at = self.frames, now
        return kind

    def _judge_load(self, now: float, late: float, busy: float) -> bool:
        """Whether the budget applies to this frame slot, which came `late` seconds after
        its time with the crawl keeping the process `busy` (a share of a core)."""
        if late > 1 / self.fps / 2 or busy >= BUSY_CPU:
            # One such slot alone is the app's start or a collection, and holds nothing:
            # it took the first second of every crawl, an idle one too, under the budget.
            if now - self._busy_at <= SATURATION_HOLD:
                self._saturated_until = now + SATURATION_HOLD
            self._busy_at = now
            return True
        return now < self._saturated_until

    def _crawl_busy(self, now: float, spent: float) -> float:
        """The share of a core the process used since the last frame slot, the screen's
        own time left out: how busy the crawl keeps it."""
        cpu = time.process_time()
        then, cpu_then = self._cpu_at
        self._cpu_at = (now, cpu)
        if not then or now <= then:
            return 0.0
        return (cpu - cpu_then - spent) / (now - then)

    def _tick(self, kind: FrameKind = "table") -> None:
        if not self.app.is_running:
            return  # shutting down: the widgets are being taken off the screen
        started = time.perf_counter()
        self.advance()
        self.redraw(table=kind == "table", pulse=kind == "pulse")
        self.frames += 1
        cost = time.perf_counter() - started
        self.frame_costs.append(cost)
        self._spend(cost)
        if kind == "table":
            self._table_tick = cost

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
            self.app._handle_exception(error)
            return
        finally:
            for widget in self._repainting:
                widget.held = None
        if held.regions:
            self._paint_now(held)

    def _paint_now(self, held: Held) -> None:
        """Composite and write what `held` holds, as the screen's update timer would; or,
        when a layout is on its way (it would move what is drawn), another screen is on
        top, or Textual has other changes to draw, leave all of it to Textual."""
        if (
            not self.is_current
            or self.app._batch_count
            or self._layout_required
            or self._scroll_required
            or self._repaint_required
            or self._recompose_required
            or self._dirty_widgets
            or self._panels._layout_required
            or any(w._layout_required or w._scroll_required for w in held.regions)
        ):
            for widget, regions in held.regions.items():
                widget.release(regions)
            return
        if self._paint_status_alone(held):
            return
        for widget, regions in held.regions.items():
            widget.mark(regions)
        # A widget off screen (a panel the terminal has no room for) has nothing to draw;
        # passed to the compositor, it would have it rebuild its whole map.
        visible = self._compositor.visible_widgets
        self._compositor.update_widgets({w for w in held.regions if w in visible})
        self._compositor_refresh()

    def _paint_status_alone(self, held: Held) -> bool:
        """Write a change of the status line alone (a pulse's) straight to the terminal,
        when nothing is drawn over it: what the compositor would write, without its work
        for the whole screen (a map of 48 lines' cuts, a walk of every widget's region:
        half a pulse's cost). False if the compositor must draw it."""
        status = self._status
        if len(held.regions) != 1 or status not in held.regions or self.app.is_inline:
            return False
        visible = self._compositor.visible_widgets
        if visible is not self._status_map:
            self._status_map = visible
            self._status_alone = region_alone(visible, status, self)
        at = self._status_alone
        if at is None:
            return False
        started = time.perf_counter()
        whole = Region(0, 0, at.width, at.height)
        regions = held.regions[status]
        cut = whole if regions is None else Region.from_union(regions).intersection(whole)
        if cut:
            lines: list[Iterable[Strip]] = [[strip] for strip in status.render_lines(cut)]
            self.app._display(self, LayoutUpdate(lines, cut.translate(at.offset)))
        self._drawn(time.perf_counter() - started)
        return True

    def _spend(self, seconds: float) -> None:
        self.ui_seconds += seconds
        self._spent += seconds

    def _drawn(self, seconds: float) -> None:
        """Textual drew the screen's changes (a refresh or a layout) in `seconds`."""
        self._spend(seconds)
        if self._table_tick is not None:
            self._table_cost = self._table_tick + seconds
            self._table_tick = None

    # A frame's changes are drawn in these two methods of Screen, by _paint_now or by
    # Textual's update timer: timed here so that the budget sees what a frame really costs
    # the loop, its compositing and writing as well as its tick. They are private
    # API (pyproject.toml keeps textual to one major release); were they renamed, the
    # budget would count _tick alone. A layout pass composites too: counted once.
    def _compositor_refresh(self) -> None:
        if self._drawing:
            super()._compositor_refresh()
            return
        self._drawing = True
        started = time.perf_counter()
        try:
            super()._compositor_refresh()
        finally:
            self._drawing = False
            self._drawn(time.perf_counter() - started)

    def _refresh_layout(self, size: Size | None = None, scroll: bool = False) -> None:
        self.layouts += 1
        if self._drawing:
            super()._refresh_layout(size, scroll)
            return
        self._drawing = True
        started = time.perf_counter()
        try:
            super()._refresh_layout(size, scroll)
        finally:
            self._drawing = False
            self._drawn(time.perf_counter() - started)

    def advance(self) -> None:
        """Move the source on before a frame is drawn (a replay's clock)."""

    def redraw(self, table: bool = True, pulse: bool = False) -> None:
        """Draw the source's state now: everything, all but the table (light), or only the
        status line (a pulse)."""
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
        # "Suspended at" costs a walk of each task; only a frame that redraws the table
        # shows it.
        over = last is not None and last.phase in OVER
        snap = self.snap = source.snapshot(self._table.visible_ids() if table or over else ())
        a = snap.accounting
        finished = a.done + a.failed
        over = snap.phase in OVER
        self._feed_history(snap)
        if table or over:
            self._table.show(snap.workers, snap.elapsed)
            self._fit_workers(self._table.rows_to_fit)
            # Counted from the rows just drawn, so the header and the rows agree.
            self._status.show_states(state_counts(snap.workers))
        if not self._history_shown:
            self._history_shown = True
            self._queue.show_history(self._history.queue_sizes(), self._history.throughputs())
        rate: float | None = None
        if not self.reproducible:
            if over:
                rate = finished / snap.elapsed if snap.elapsed else 0.0
            else:
                rate = self._history.rate(snap.t, finished)
        paused = sum(1 for w in snap.workers if w.state is WorkerState.PAUSED)
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
            if chains_version != self._chains_version and (
                snap.t - self._chains_at >= CHAINS_EVERY or over
            ):
                self._chains_version = chains_version
                self._chains_at = snap.t
                self._tree.show_from(source)
            if chains_version == self._chains_version:
                self.whole_frame = self.frames
        self._show_status(snap)
        self._refresh_bindings_if_changed(snap)

    def _feed_history(self, snap: Snapshot) -> None:
        a = snap.accounting
        if self.reproducible or snap.phase in OVER:
            return
        if self._history.feed(snap.t, a.queued, a.done + a.failed):
            self._history_shown = False

    def _show_status(self, snap: Snapshot) -> None:
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
                pages=a.done + a.failed,
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
        self.app.push_screen(HelpScreen())
