"""The frame budget: which frame slots the screen draws, and how much each draws, so that
on a saturated event loop the screen takes no more than a small share of it.

Plain arithmetic on the times and costs it is told: the screen (screens/panels.py)
measures them, asks at each frame slot what to draw, and draws it. No Textual here, so
the policy is tested with numbers (tests/tui/test_budget_policy.py) and the command line can
read FRAMES_PER_SECOND without loading Textual.
"""

from __future__ import annotations

from typing import Literal

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
# Between those, the workers table's rows alone (with the status line) are redrawn every
# ROWS_INTERVAL_BUSY at the most, or as often as ROWS_SHARE of the allowance pays for them
# (FrameBudget.rows_interval): the screen's liveliest panel at five to seven a second where
# it was one (issue 32). Their views are built for the rows on screen only, and their
# changed lines are written straight to the terminal (screens/direct_paint.py), so a rows
# frame costs a fifth of a table frame (no recent fetches, queue or chains, no compositor).
# A slot that finds the rows due and not yet covered draws nothing, saving up for them
# (they draw the status line too), where a pulse would take the allowance they wait for:
# that way, by a simulation of this class (frames of 0.7, 2 and 8 ms: pulse, rows, table),
# 7.9 table redraws a second and 15 frames, where it was 5.0 and 15; at 1.0, 3.8 and 14.2
# ms (bench.table_pace's, on a machine loaded by other work) 3.8 and 10.3, where the old
# rule gave 2.7 and 13.3. (The simulation's figures agree with the bench's: 3.4 of this
# rule before the rounding below, 3.2 measured.)
# A hair under two slots at 15 frames a second, whose float times may add up to a little
# less: three slots (0.2 s) made five a second the most, and any late slot fewer.
ROWS_INTERVAL_BUSY = 0.13
# ...and a quarter of the allowance is left to the pulses and tables: the status line
# still moves ten times a second or more when rows frames cost more than the budget says.
ROWS_SHARE = 0.75
# The frame budget. When the loop is saturated (a frame's turn comes late: the crawl has
# more ready callbacks than one pass of the loop can run in a frame's time), the screen
# may take at most this share of the loop's time. It is kept as an allowance: each frame
# slot adds its length times UI_SHARE, each frame takes what it cost, and a slot that
# finds the allowance spent draws nothing. A frame's cost is all the screen spent since
# the frame slot before: the sampling and widget updates (PanelsScreen._tick) and
# Textual's drawing of what they changed (layout, compositing, writing to the terminal),
# which is most of it. When the loop is on time, every frame is drawn.
#
# In a real terminal, amid a crawl at 500 workers, a pulse costs about 1 ms (medians: its
# tick 0.4 ms, Textual's drawing 0.65 ms) and a table frame about 15 ms. (A pulse's
# drawing has since been about halved: the status line is written without the compositor,
# screens/direct_paint.py.) A pulse cost 2 ms before the screen, the panels' grid
# and the footer were blank (PanelsScreen.BLANK) and the status line skipped Textual's
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

# What a frame draws: everything; all but the table, the recent fetches and the chains;
# the workers table and the status line; the status line alone.
FrameKind = Literal["table", "light", "rows", "pulse"]


def next_slot(due: float, late: float, interval: float) -> tuple[float, int]:
    """After the slot due at `due` came `late` seconds after its time: when the next one
    is due, on the grid of `interval` (a late slot is drawn at once, not at the next grid
    line), and how many grid lines between them were missed."""
    following = due + interval * (1 + int(late / interval))
    return following, max(0, round((following - due) / interval) - 1)


class FrameBudget:
    """The screen's account with the loop: what it spent, what it may still spend, and
    whether the loop is saturated. Times are the loop's clock; costs are seconds."""

    def __init__(self, fps: float = FRAMES_PER_SECOND) -> None:
        self.fps = fps
        # Loop seconds the screen may still spend (see UI_SHARE); below 0, a debt.
        self.allowance = ALLOWANCE_MAX
        self.spent = 0.0  # what the screen spent since the last frame slot
        self.ui_seconds = 0.0  # ...and in all: ticks and Textual's drawing
        self.saturated = False  # the crawl fills the loop: the budget applies
        self.saturated_until = 0.0  # loop time (see SATURATION_HOLD)
        self.busy_at = float("-inf")  # loop time of the last slot found busy or late
        self.cpu_at = (0.0, 0.0)  # (loop time, process CPU seconds) at the last frame slot
        self.slot_at = 0.0  # loop time of the last frame slot; 0: none yet
        # What the last table frame cost: its tick and its drawing, which Textual does
        # later, often after the next frame slot. While that drawing is still to come,
        # table_tick holds the tick's part.
        self.table_cost = 0.0
        self.table_tick: float | None = None
        # The same for the last rows frame, and when it was.
        self.rows_cost = 0.0
        self.rows_tick: float | None = None
        self.rows_at = float("-inf")
        self.tables = 0  # frames that redrew the workers table: table and rows frames
        # The frame number and loop time of the workers table's last timed redraw.
        self.table_frame = -TABLE_EVERY
        self.table_at = float("-inf")

    def restart(self) -> None:
        """A new account: a full allowance, and nothing spent since the last slot."""
        self.allowance, self.spent = ALLOWANCE_MAX, 0.0

    def spend(self, seconds: float) -> None:
        self.ui_seconds += seconds
        self.spent += seconds

    def ticked(self, kind: FrameKind, seconds: float) -> None:
        """A frame of `kind` sampled its source and updated its widgets in `seconds`."""
        self.spend(seconds)
        if kind == "table":
            self.table_tick = seconds
        elif kind == "rows":
            self.rows_tick = seconds

    def drawn(self, seconds: float) -> None:
        """Textual drew the screen's changes (a refresh or a layout) in `seconds`."""
        self.spend(seconds)
        if self.table_tick is not None:
            self.table_cost = self.table_tick + seconds
            self.table_tick = None
        if self.rows_tick is not None:
            self.rows_cost = self.rows_tick + seconds
            self.rows_tick = None

    def slot(self, now: float, late: float, cpu: float, frames: int) -> FrameKind | None:
        """A frame slot at loop time `now`, `late` seconds after its time, the process
        having used `cpu` seconds of CPU in all, `frames` frames drawn before it: what it
        draws, or None (nothing). Settles what the screen spent since the slot before."""
        spent, self.spent = self.spent, 0.0
        self.saturated = self.judge_load(now, late, self.crawl_busy(now, cpu, spent))
        since, self.slot_at = (now - self.slot_at if self.slot_at else 0.0), now
        # Kept on an idle loop too, where every frame is drawn whatever it says: a loop that
        # is saturated only now and then must not find it full each time.
        allowance = self.allowance + since * UI_SHARE - spent
        self.allowance = max(-MAX_GAP * UI_SHARE, min(allowance, ALLOWANCE_MAX))
        return self.frame_kind(now, frames)

    def frame_kind(self, now: float, frames: int) -> FrameKind | None:
        """What the frame slot at `now` draws, `frames` frames drawn before it, or None:
        nothing. A table frame is remembered as the table's last."""
        since_table = now - self.table_at
        kind: FrameKind
        if not self.saturated:
            table = frames - self.table_frame >= TABLE_EVERY and since_table >= TABLE_INTERVAL
            kind = "table" if table else "light"
        elif self.allowance < 0:
            return None
        elif since_table >= TABLE_MAX_GAP_BUSY or (
            since_table >= TABLE_INTERVAL_BUSY
            and self.allowance >= self.table_cost * TABLE_EARLY_COVER
        ):
            kind = "table"
        else:
            since_rows = now - max(self.rows_at, self.table_at)
            interval = self.rows_interval()
            # To the nearest slot, not the next: a rows frame due a hair after a slot
            # would wait for the one after, and take a third less than its share.
            if since_rows >= interval - 0.5 / self.fps:
                if self.allowance < self.rows_cost:
                    return None  # saving up for the rows, which draw the status line too
                kind = "rows"
            else:
                kind = "pulse"
        if kind == "table":
            self.table_frame, self.table_at = frames, now
        if kind == "rows":
            self.rows_at = now
        if kind in ("table", "rows"):
            self.tables += 1
        return kind

    def rows_interval(self) -> float:
        """How often a saturated loop redraws the rows: every ROWS_INTERVAL_BUSY, or as
        often as ROWS_SHARE of the allowance pays for."""
        return max(ROWS_INTERVAL_BUSY, self.rows_cost / (ROWS_SHARE * UI_SHARE))

    def judge_load(self, now: float, late: float, busy: float) -> bool:
        """Whether the budget applies to the frame slot at `now`, which came `late`
        seconds after its time with the crawl keeping the process `busy` (a share of a
        core)."""
        if late > 1 / self.fps / 2 or busy >= BUSY_CPU:
            # One such slot alone is the app's start or a collection, and holds nothing:
            # it took the first second of every crawl, an idle one too, under the budget.
            if now - self.busy_at <= SATURATION_HOLD:
                self.saturated_until = now + SATURATION_HOLD
            self.busy_at = now
            return True
        return now < self.saturated_until

    def crawl_busy(self, now: float, cpu: float, spent: float) -> float:
        """The share of a core the process used since the last frame slot (`cpu`: its CPU
        seconds now), the screen's own `spent` left out: how busy the crawl keeps it."""
        then, cpu_then = self.cpu_at
        self.cpu_at = (now, cpu)
        if not then or now <= then:
            return 0.0
        return (cpu - cpu_then - spent) / (now - then)
