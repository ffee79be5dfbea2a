"""`t`: the timeline. One lane per worker over time, each state in the workers table's
colour with the URL on it where it fits; above the lanes, the queue, the unfinished
counter and pages/s on the same axis. Drawn from the flight recorder (or a recording's
events), so a frame costs the lanes on screen, not the crawl's rate.

Keys: + and - zoom (1 s to 10 minutes across the screen), left and right move the cursor
(the view scrolls at its edges), [ and ] scroll a quarter of the screen, f follows "now",
up and down pick a lane, o sorts the lanes (by worker, by time in the state), enter shows
the waterfall of the fetch under the cursor.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.filter import ANSIToTruecolor, LineFilter
from textual.geometry import Size
from textual.screen import Screen
from textual.strip import Strip

from crawlscope.engine.observe.contract import ObservedCrawl
from crawlscope.engine.observe.text import printable
from crawlscope.engine.observe.timeline import Feed, Lane, Timeline
from crawlscope.engine.observe.workers import WorkerState

from ..format import STATE_STYLE
from ..screens.direct_paint import paint_rows
from .held import Repaints
from .waterfall_screen import WaterfallScreen, waterfall_or_why

SPANS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0)  # seconds across the lanes
LABEL = 7  # columns of a lane's label, "w 123  "
HEAD = 5  # rows above the lanes: title, axis, three strips
REFRESH_EVERY = 0.5  # seconds: a whole timeline is dearer to draw than a panel's change
CATCH_UP_EVERY = 0.1  # seconds between two reads of the recorder's new events
BLOCKS = " ▁▂▃▄▅▆▇█"
SORTS = ("worker", "time")
# The crawl's clock (Snapshot.elapsed) and phase, read at each frame.
Clock = Callable[[], tuple[float, str]]
# A lane's label, from its number: a worker's id, or a lecture stage's task.
Label = Callable[[int], str]
# A lane's last strip: its columns, (picked, the cursor's column, the first column), the
# strip, and whether a URL is written on it (then where the view starts decides which).
KeptStrip = tuple[list[str | None], tuple[bool, int, int], Strip, bool]


def worker_label(worker: int) -> str:
    return f"w{worker}"


def clock_of(source: ObservedCrawl) -> Clock:
    def clock() -> tuple[float, str]:
        snap = source.snapshot((), rows=False)
        return snap.elapsed, snap.phase.value

    return clock


@functools.cache
def lane_style(state: str) -> Style:
    """The state's colour from the workers table, as a solid cell."""
    try:
        words = STATE_STYLE[WorkerState(state)]
    except (KeyError, ValueError):
        # Not a worker's state: a lecture stage's "ran" (engine/lecture/step_lanes.py),
        # bright, its step's one event; any other (a task done, the crawl's phase), grey.
        return Style(color="bright_white", bold=True) if state == "ran" else Style(color="grey50")
    colour = next((w for w in words.split() if w not in ("bold", "dim", "italic")), "white")
    if "on" in words.split():
        colour = words.split()[-1]  # "black on yellow": the background is the colour
    if words == "dim":
        colour = "grey30"
    if words == "dim italic":
        colour = "grey15"
    return Style(color=colour)


LANE_CHAR = {"waiting": "░", "stopped": " ", "cancelled": "x"}


_LABEL_STYLES = {False: Style(reverse=False, bold=False), True: Style(reverse=True, bold=True)}


@functools.cache
def _on(state: str) -> Style:
    """A URL written on the state's colour."""
    return Style(color="black", bgcolor=lane_style(state).color)


class TimelineView(Repaints):
    """The whole timeline, row by row (render_line): no child widgets to lay out."""

    DEFAULT_CSS = "TimelineView { height: 1fr; }"

    def __init__(
        self, timeline: Timeline, now: Clock, unit: str = "s", label: Label | None = None
    ) -> None:
        super().__init__()
        self.timeline = timeline
        self.now = now  # the crawl's clock and phase: the present (or a replay's moment)
        self.unit = unit  # of the time axis: seconds, or a lecture stage's steps
        self.label = label or worker_label
        self.phase = ""
        self.span = 10.0
        self.end = 0.0  # the time at the right edge
        self.follow = True
        self.cursor = -1  # column of the cursor; -1: the last
        self.top = 0  # the first lane shown
        self.selected = 0  # the lane picked (index into the order)
        self.sort = "worker"
        self._order: list[int] = []
        self.frame_seconds = 0.0  # what the last frame cost to build and write
        self.catch_up_seconds = 0.0  # what the last catch-up with the recorder cost
        self._lane_strips: dict[int, KeptStrip] = {}
        # The app's ANSI-to-truecolor filter, applied here once a style rather than by the
        # compositor once a segment and frame (a busy lane has 50): filters_applied says so.
        self.filters_applied: tuple[LineFilter, ...] = ()
        self._truecolor: ANSIToTruecolor | None = None
        self._styles: dict[Style, Style] = {}
        self._solids: dict[tuple[str, int], Segment] = {}  # cells of a state, by width
        self._rows: list[Strip] = []
        self._looks: tuple[object, ...] = ()
        self.ticks = 0  # times it looked for something new to draw
        self.frames = 0  # times it found some, and drew

    @property
    def columns(self) -> int:
        return max(self.size.width - LABEL, 1)

    @property
    def step(self) -> float:
        return self.span / self.columns

    @property
    def first_column(self) -> int:
        """The number of the leftmost column on the grid of `step` (Lane.columns): the
        view ends at the column edge at or before `end`, so that the columns of one frame
        are those of the next, moved."""
        return math.floor(self.end / self.step) - self.columns

    @property
    def start(self) -> float:
        return self.first_column * self.step

    @property
    def cursor_column(self) -> int:
        return self.columns - 1 if self.cursor < 0 else min(self.cursor, self.columns - 1)

    @property
    def cursor_t(self) -> float:
        return self.start + (self.cursor_column + 0.5) * self.step

    def lanes_shown(self) -> int:
        return max(self.size.height - HEAD, 0)

    def order(self) -> list[int]:
        return self._order

    def selected_worker(self) -> int | None:
        order = self._order
        return order[self.selected] if 0 <= self.selected < len(order) else None

    def catch_up(self) -> None:
        """Read the events the recorder kept since the last look into the lanes: every
        CATCH_UP_EVERY seconds, so that a fast crawl's thousands of events a second come
        in slices of a few milliseconds, never one long step before a frame."""
        t0 = time.perf_counter()
        self.timeline.catch_up()
        self.catch_up_seconds = time.perf_counter() - t0

    def tick(self) -> None:
        self.catch_up()
        t0 = time.perf_counter()  # the frame: what the screen shows, built and written
        self.ticks += 1
        now, self.phase = self.now()
        if self.follow:
            self.end = now
        self._order = self.timeline.order(self.cursor_t, self.sort)
        self.selected = min(self.selected, max(len(self._order) - 1, 0))
        # What a frame is drawn from: when none of it moved (a paused replay, a finished
        # crawl, the view scrolled back with nothing new in it), the screen is left as it
        # is rather than drawn and written to the terminal again.
        looks = (self.timeline.seen, self.size, self.first_column, self.step, self.cursor,
                 self.follow, self.top, self.selected, self.sort, self.phase,
                 tuple(self._order))  # fmt: skip
        if looks == self._looks:
            return
        self._looks = looks
        self.frames += 1
        before = self._rows
        self._build()
        after = self._rows
        # Only the lines that changed are written (a lane idle across the view, the
        # axis between labels), and straight to the terminal where nothing is over it.
        changed = [
            y for y in range(max(len(before), len(after)))
            if y >= len(before) or y >= len(after) or before[y] != after[y]
        ]  # fmt: skip
        if changed and not paint_rows(self, changed):
            self.refresh()
        self.frame_seconds = time.perf_counter() - t0

    def styled(self, style: Style) -> Style:
        """`style` as the app's ANSI-to-truecolor filter makes it, worked out once."""
        got = self._styles.get(style)
        if got is None:
            if not self.filters_applied and self._truecolor is None:
                found = [f for f in self.app.get_line_filters() if isinstance(f, ANSIToTruecolor)]
                if found:
                    self._truecolor, self.filters_applied = found[0], (found[0],)
            tc = self._truecolor
            # The background only matters to a dim colour, which no style here has.
            got = tc.truecolor_style(style, self.background_colors[1].rich_color) if tc else style
            self._styles[style] = got
        return got

    def _build(self) -> None:
        width = self.size.width
        n, k0, step = self.columns, self.first_column, self.step
        t0 = k0 * step
        counts = self.timeline.counts
        rows: list[Strip] = [self._title(width), self._axis(n, t0)]
        rows.append(self._strip("queue", counts.column_max(counts.queued, k0, step, n)))
        rows.append(self._strip("unfin", counts.column_max(counts.unfinished, k0, step, n)))
        rows.append(self._strip("pages/s", counts.rates(k0, step, n)))
        shown = self.lanes_shown()
        if self.selected < self.top:
            self.top = self.selected
        elif self.selected >= self.top + shown:
            self.top = self.selected - shown + 1
        for i in range(self.top, min(self.top + shown, len(self._order))):
            rows.append(self._lane(self._order[i], i == self.selected, n, k0, step))
        self._rows = rows

    def _title(self, width: int) -> Strip:
        follow = "following now" if self.follow else "f: follow now"
        # The phase first, as on every screen of a crawl: FINISHED is read off it.
        unit = self.unit
        text = f" {self.phase.upper()}  {self.span:g} {unit} across"
        text += f"  cursor {self.cursor_t:.3f} {unit}"
        text += f"  sort by {self.sort}  {follow}"
        worker = self.selected_worker()
        if worker is not None:
            held = self.timeline.lanes[worker].state_at(self.cursor_t)
            if held is not None:
                state, url, _since = held
                text += f"  |  {self.label(worker)} {state}"
                if url:
                    text += f" {printable(url, 200)}"
        return Strip([Segment(text[:width].ljust(width), self.styled(Style(bold=True)))])

    def _axis(self, n: int, t0: float) -> Strip:
        cells = [" "] * n
        every = max(n // 6, 10)
        for c in range(0, n, every):
            label = f"|{t0 + c * self.step:.1f}{'s' if self.unit == 's' else ''}"
            for k, ch in enumerate(label):
                if c + k < n:
                    cells[c + k] = ch
        cur = self.cursor_column
        segments = [Segment(" " * LABEL)]
        dim = self.styled(Style(dim=True))
        segments.append(Segment("".join(cells[:cur]), dim))
        segments.append(Segment("▼", self.styled(Style(bold=True, color="white"))))
        segments.append(Segment("".join(cells[cur + 1 :]), dim))
        return Strip(segments)

    def _strip(self, name: str, values: list[int] | list[float]) -> Strip:
        top = max(values, default=0) or 1
        cells = "".join(BLOCKS[min(round(v / top * 8), 8)] for v in values)
        label = f"{name[: LABEL - 1]:<{LABEL - 1}} "
        figure = f"{top:.0f}" if top >= 1 else f"{top:.2f}"
        dim = self.styled(Style(dim=True))
        return Strip([Segment(label, dim), Segment(cells, self.styled(Style(color="cyan"))),
                      Segment(f" max {figure}", dim)])  # fmt: skip

    def _lane(self, worker: int, picked: bool, n: int, k0: int, step: float) -> Strip:
        lane = self.timeline.lanes[worker]
        states = lane.columns(k0, step, n)
        cur = self.cursor_column
        # A lane whose columns did not move (a worker idle across the view) is the strip
        # it was: not built again, and not written (the frame writes lines that changed).
        kept = self._lane_strips.get(worker)
        if kept is not None and kept[0] == states:
            _, (was_picked, was_cur, was_k0), strip, urls = kept
            if (was_picked, was_cur) == (picked, cur) and (not urls or was_k0 == k0):
                return strip
        strip, urls = self._lane_strip(lane, states, picked, cur, k0, step)
        self._lane_strips[worker] = (states, (picked, cur, k0), strip, urls)
        return strip

    def _lane_strip(
        self, lane: Lane, states: list[str | None], picked: bool, cur: int, k0: int, step: float
    ) -> tuple[Strip, bool]:
        """The lane's strip, and whether a URL is written on it (then where the view
        starts decides which)."""
        t0 = k0 * step
        urls = False
        label = self.label(lane.worker)[: LABEL - 1].ljust(LABEL - 1) + " "
        segments = [Segment(label, self.styled(_LABEL_STYLES[picked]))]
        solids = self._solids
        add = segments.append
        n = len(states)
        # Where a run of one state ends: a pass in C over the columns, then one step of
        # Python a run (a busy lane has some 50 runs in 150 columns, most of them short).
        ends = [i for i in range(1, n) if states[i] != states[i - 1]]
        ends.append(n)
        c = 0
        for run in ends:
            state = states[c]
            if state is None:
                add(Segment(" " * (run - c)))
            elif run - c < 12 and not c <= cur < run:
                # One Segment for each state and width, made once and drawn again and again.
                solid = solids.get((state, run - c))
                if solid is None:
                    solid = solids[state, run - c] = Segment(
                        LANE_CHAR.get(state, "█") * (run - c), self.styled(lane_style(state))
                    )
                add(solid)
            else:
                segments.extend(self._run(lane, state, c, run, t0, step, cur))
                urls = True
            c = run
        return Strip(segments, LABEL + n), urls

    def _run(
        self, lane: Lane, state: str, a: int, b: int, t0: float, step: float, cur: int
    ) -> list[Segment]:
        """Columns a..b of one state: solid cells, the URL written on them if it fits."""
        style = self.styled(lane_style(state))
        width = b - a
        if width >= 12 and state not in LANE_CHAR:
            held = lane.state_at(t0 + (a + 0.5) * step)
            url = held[1] if held is not None and held[0] == state else None
            if url:
                path = printable(url.split("//", 1)[-1], width)
                text = (path + " " * width)[:width]
                style = self.styled(_on(state))
            else:
                text = "█" * width
        else:
            text = LANE_CHAR.get(state, "█") * width
        if not a <= cur < b:
            return [Segment(text, style)]
        k = cur - a  # the cursor's column, marked
        out = [
            Segment(text[:k], style),
            Segment(text[k], self.styled(style + Style(reverse=True))),
            Segment(text[k + 1 :], style),
        ]
        return [s for s in out if s.text]

    def render_line(self, y: int) -> Strip:
        rows = self._rows
        return rows[y] if y < len(rows) else Strip.blank(self.size.width)

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return container.height


class TimelineScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,t,q", "dismiss", "Close"),
        Binding("plus,equals_sign", "zoom(-1)", "Zoom in", key_display="+"),
        Binding("minus", "zoom(1)", "Zoom out", key_display="-"),
        Binding("left", "cursor(-1)", "Earlier", key_display="←"),
        Binding("right", "cursor(1)", "Later", key_display="→"),
        Binding("left_square_bracket", "scroll_view(-1)", "Back", key_display="["),
        Binding("right_square_bracket", "scroll_view(1)", "On", key_display="]"),
        Binding("f", "follow", "Now"),
        Binding("up", "lane(-1)", "Up", show=False),
        Binding("down", "lane(1)", "Down", show=False),
        Binding("pageup", "lane(-10)", "Page up", show=False),
        Binding("pagedown", "lane(10)", "Page down", show=False),
        Binding("o", "sort", "Sort"),
        Binding("enter", "waterfall", "Waterfall"),
    ]

    def __init__(
        self,
        feed: Feed,
        now: Clock,
        title: str = "timeline",
        unit: str = "s",
        label: Label | None = None,
    ) -> None:
        super().__init__()
        self.view = TimelineView(Timeline(feed), now, unit, label)
        self.title_text = title

    def compose(self) -> ComposeResult:
        from textual.widgets import Footer

        yield self.view
        yield Footer()

    def on_mount(self) -> None:
        self.call_after_refresh(self.view.tick)
        self.set_interval(REFRESH_EVERY, self.view.tick)
        self.set_interval(CATCH_UP_EVERY, self.view.catch_up)

    def action_zoom(self, direction: int) -> None:
        v = self.view
        index = min(range(len(SPANS)), key=lambda i: abs(SPANS[i] - v.span))
        cursor_t = v.cursor_t
        v.span = SPANS[min(max(index + direction, 0), len(SPANS) - 1)]
        if not v.follow:  # zoom about the cursor's moment
            v.end = cursor_t + v.span / 2
            v.cursor = v.columns // 2
        v.tick()

    def action_cursor(self, direction: int) -> None:
        v = self.view
        col = v.cursor_column + direction
        if col < 0 or col >= v.columns:
            v.follow = False
            v.end += direction * v.step
            col = min(max(col, 0), v.columns - 1)
        if direction < 0:
            v.follow = False
        v.cursor = col
        v.tick()

    def action_scroll_view(self, direction: int) -> None:
        v = self.view
        v.follow = False
        v.end += direction * v.span / 4
        v.tick()

    def action_follow(self) -> None:
        v = self.view
        v.follow, v.cursor = True, -1
        v.tick()

    def action_lane(self, delta: int) -> None:
        v = self.view
        v.selected = min(max(v.selected + delta, 0), max(len(v.order()) - 1, 0))
        v.tick()

    def action_sort(self) -> None:
        v = self.view
        v.sort = SORTS[(SORTS.index(v.sort) + 1) % len(SORTS)]
        v.tick()

    def action_waterfall(self) -> None:
        v = self.view
        worker = v.selected_worker()
        if worker is None:
            return
        held = v.timeline.lanes[worker].state_at(v.cursor_t)
        url = held[1] if held is not None else None
        if url is None:
            self.notify("no fetch under the cursor on this lane", timeout=3)
            return
        fall = waterfall_or_why(v.timeline.feed, url)
        if isinstance(fall, str):
            self.notify(fall, timeout=4)
            return
        self.app.push_screen(WaterfallScreen(fall))
