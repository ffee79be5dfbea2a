"""The frame budget as plain policy: each frame slot's decision from the times and costs it
is told, with no app, no crawl and no Textual (tui/frame_budget.py)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from crawlscope.tui.frame_budget import (
    ALLOWANCE_MAX,
    BUSY_CPU,
    FRAMES_PER_SECOND,
    MAX_GAP,
    ROWS_INTERVAL_BUSY,
    SATURATION_HOLD,
    TABLE_EARLY_COVER,
    TABLE_EVERY,
    TABLE_INTERVAL,
    TABLE_INTERVAL_BUSY,
    TABLE_MAX_GAP_BUSY,
    UI_SHARE,
    FrameBudget,
    next_slot,
)

SLOT = 1 / FRAMES_PER_SECOND


def test_a_saturated_budget_pulses_and_draws_the_table_when_its_allowance_covers_it() -> None:
    budget = FrameBudget()
    budget.saturated = True
    at = budget.table_at = 1000.0
    budget.table_cost, budget.rows_cost = 0.02, 0.0
    budget.allowance = 0.005
    # The table was just drawn: the status line alone.
    assert budget.frame_kind(at + SLOT, frames=10) == "pulse"
    # The table is due but the allowance does not cover it yet: the rows go on.
    assert budget.frame_kind(at + TABLE_INTERVAL_BUSY, frames=11) == "rows"
    # Covered once is not enough: paying for it would stop the frames that follow.
    budget.allowance = 0.02
    assert budget.frame_kind(at + TABLE_INTERVAL_BUSY + 0.01, frames=12) == "pulse"
    budget.allowance = 0.02 * TABLE_EARLY_COVER
    assert budget.frame_kind(at + TABLE_INTERVAL_BUSY, frames=13) == "table"
    assert (budget.table_at, budget.table_frame) == (at + TABLE_INTERVAL_BUSY, 13)
    # Spent beyond the allowance: the slot draws nothing.
    budget.allowance = -0.001
    assert budget.frame_kind(at + 5, frames=14) is None
    # Never spent, but never enough for the table: it is drawn all the same, late.
    budget.allowance = 0.001
    at = budget.table_at
    assert budget.frame_kind(at + TABLE_INTERVAL_BUSY, frames=14) == "rows"
    assert budget.frame_kind(at + TABLE_MAX_GAP_BUSY, frames=15) == "table"


def test_a_saturated_budget_redraws_the_rows_every_other_slot_as_the_allowance_covers() -> None:
    budget = FrameBudget()
    budget.saturated = True
    at = budget.table_at = 1000.0
    budget.table_cost, budget.rows_cost = 0.02, 0.002
    budget.allowance = 0.002
    slots = [at + n * SLOT for n in range(1, 15)]  # up to the next table, a second on
    kinds = [budget.frame_kind(t, frames=n) for n, t in enumerate(slots)]
    rows = [t for t, kind in zip(slots, kinds, strict=True) if kind == "rows"]
    assert len(rows) == 7  # every other slot: with the table, eight a second
    assert all(b - a >= ROWS_INTERVAL_BUSY for a, b in zip([at, *rows], rows, strict=False))
    assert set(kinds) == {"rows", "pulse"}
    assert budget.tables == 7
    # Due and not covered: the slot saves up for them rather than pulse.
    budget.allowance = 0.0015
    assert budget.frame_kind(rows[-1] + 2 * SLOT, frames=20) is None
    assert budget.frame_kind(rows[-1] + 3 * SLOT, frames=20) is None
    budget.allowance = 0.002
    assert budget.frame_kind(rows[-1] + 4 * SLOT, frames=20) == "rows"


def saturated_run(costs: dict[str, float], seconds: float = 30.0) -> list[str]:
    """What a saturated loop's slots draw for `seconds`, each frame paying `costs`."""
    budget = FrameBudget()
    budget.saturated_until = float("inf")
    drawn: list[str] = []
    for n in range(int(seconds * FRAMES_PER_SECOND)):
        kind = budget.slot(100.0 + n * SLOT, late=SLOT, cpu=0.0, frames=len(drawn))
        if kind is not None:
            drawn.append(kind)
            budget.ticked(kind, costs[kind] / 2)
            budget.drawn(costs[kind] / 2)
    # The share, beyond what the budget starts with and the debt it forgives at most.
    spent = sum(costs[kind] for kind in drawn)
    assert spent <= UI_SHARE * seconds + ALLOWANCE_MAX + MAX_GAP * UI_SHARE
    return drawn


def test_the_rows_come_every_other_slot_when_they_are_cheap() -> None:
    # A slot with the rows due and not covered saves up for them rather than pulse.
    drawn = saturated_run({"pulse": 0.0007, "rows": 0.002, "table": 0.008})
    assert (drawn.count("table") + drawn.count("rows")) / 30 >= 6
    assert len(drawn) / 30 >= 14  # and the status line at nearly every slot


def test_costly_rows_come_less_often_and_leave_the_status_line_moving() -> None:
    drawn = saturated_run({"pulse": 0.0008, "rows": 0.0074, "table": 0.0134})
    assert (drawn.count("table") + drawn.count("rows")) / 30 >= 2
    assert len(drawn) / 30 >= 10


def test_an_idle_loop_draws_every_slot_and_the_table_every_other_frame() -> None:
    budget = FrameBudget()
    budget.allowance = -1.0  # spent or not, an idle loop's frames are all drawn
    kinds = [budget.frame_kind(1.0 + n * SLOT, frames=n) for n in range(6)]
    assert TABLE_EVERY == 2
    assert kinds == ["table", "light"] * 3
    # Every other frame, and no more often than TABLE_INTERVAL: at 60 frames a second,
    # one in six.
    fast = FrameBudget(fps=60.0)
    kinds = [fast.frame_kind(n / 60, frames=n) for n in range(12)]
    assert [n for n, kind in enumerate(kinds) if kind == "table"] == [0, round(60 * TABLE_INTERVAL)]


def test_a_loop_near_saturation_stays_under_the_budget_between_busy_slots() -> None:
    """A crawl using 70% to 85% of a core finds some frame slots busy and some not; the
    budget must not come and go with each one (see SATURATION_HOLD)."""
    budget = FrameBudget()
    now = 1e9
    assert not budget.judge_load(now, late=0.0, busy=0.3)
    assert budget.judge_load(now + SLOT, late=SLOT, busy=0.3)  # a late slot
    # One alone (the app's start, a collection) holds nothing.
    assert not budget.judge_load(now + 2 * SLOT, late=0.0, busy=0.5)
    assert budget.judge_load(now + 3 * SLOT, late=0.0, busy=BUSY_CPU)  # a busy one
    assert budget.judge_load(now + 4 * SLOT, late=0.0, busy=0.5)  # held
    assert budget.judge_load(now + 5 * SLOT, late=0.0, busy=0.0)
    then = now + 3 * SLOT + SATURATION_HOLD + SLOT
    assert not budget.judge_load(then, late=0.0, busy=0.5)


def test_a_slot_less_than_half_late_is_on_time() -> None:
    budget = FrameBudget()
    assert not budget.judge_load(10.5, late=SLOT / 2, busy=0.0)
    assert budget.judge_load(10.6, late=SLOT / 2 + 1e-6, busy=0.0)


def test_the_crawls_share_of_a_core_leaves_out_the_screens_own() -> None:
    budget = FrameBudget()
    assert budget.crawl_busy(100.0, cpu=50.0, spent=0.0) == 0.0  # the first slot: no span
    # A second of the loop, 0.9 s of CPU, 0.1 of it the screen's: the crawl's 0.8.
    assert budget.crawl_busy(101.0, cpu=50.9, spent=0.1) == pytest.approx(0.8)
    assert budget.crawl_busy(101.0, cpu=51.0, spent=0.0) == 0.0  # no time passed


def test_each_slot_earns_its_share_of_the_loop_and_pays_what_the_screen_spent() -> None:
    budget = FrameBudget()
    budget.slot(100.0, late=0.0, cpu=0.0, frames=0)
    budget.allowance = 0.0
    budget.spend(0.001)
    budget.slot(100.1, late=0.0, cpu=0.0, frames=1)
    assert budget.allowance == pytest.approx(0.1 * UI_SHARE - 0.001)
    assert budget.spent == 0.0 and budget.ui_seconds == pytest.approx(0.001)
    # Saved up to ALLOWANCE_MAX at most...
    budget.slot(1000.0, late=0.0, cpu=0.0, frames=2)
    assert budget.allowance == ALLOWANCE_MAX
    # ...and a costly frame (a layout) is a debt of MAX_GAP's share at most.
    budget.spend(5.0)
    budget.slot(1000.1, late=0.0, cpu=0.0, frames=3)
    assert budget.allowance == pytest.approx(-MAX_GAP * UI_SHARE)


def test_a_saturated_slot_with_the_allowance_spent_draws_nothing() -> None:
    budget = FrameBudget()
    cpu = 0.0
    kinds = []
    # Every slot late by a slot: saturated throughout.
    for n in range(4):
        cpu += SLOT
        kinds.append(budget.slot(50.0 + n * 2 * SLOT, late=SLOT, cpu=cpu, frames=n))
        budget.spend(0.05)  # each frame costs far more than the slot earns
    assert budget.saturated
    # The next two slots, ROWS_INTERVAL_BUSY apart, can afford the rows (their cost not
    # known yet); the fourth finds the allowance spent.
    assert kinds == ["table", "rows", "rows", None]


def test_a_table_frame_costs_its_tick_and_the_drawing_that_follows_it() -> None:
    budget = FrameBudget()
    budget.ticked("table", 0.004)
    assert budget.table_tick == 0.004 and budget.table_cost == 0.0
    budget.drawn(0.011)
    assert budget.table_cost == pytest.approx(0.015) and budget.table_tick is None
    # Drawing after it (a pulse's) is spent, but is not the table's.
    budget.ticked("pulse", 0.0005)
    budget.drawn(0.0007)
    assert budget.table_cost == pytest.approx(0.015)
    assert budget.ui_seconds == pytest.approx(0.004 + 0.011 + 0.0005 + 0.0007)


def test_a_restart_forgives_what_came_before() -> None:
    budget = FrameBudget()
    budget.allowance = -0.02
    budget.spend(0.3)
    budget.restart()
    assert budget.allowance == ALLOWANCE_MAX and budget.spent == 0.0
    assert budget.slot(10.0, late=0.0, cpu=0.0, frames=0) is not None


def test_the_next_slot_is_on_the_grid_after_now() -> None:
    # On time: the next grid line, none missed.
    due, missed = next_slot(10.0, late=0.01, interval=0.1)
    assert due == pytest.approx(10.1) and missed == 0
    # Two and a half slots late: drawn now, the next at the grid line after now.
    due, missed = next_slot(10.0, late=0.25, interval=0.1)
    assert due == pytest.approx(10.3) and missed == 2


def test_the_policy_loads_no_textual() -> None:
    # The command line reads FRAMES_PER_SECOND from it without drawing anything.
    code = (
        "import sys, crawlscope.tui.frame_budget; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('textual', 'rich')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
