"""A timeline lane's columns (engine/observe/timeline.py): the state held longest in each,
and the columns a frame keeps for the next. Whatever a lane kept from its last frame, the
columns it gives are those a lane that never drew before gives from the same changes, as
the changes arrive, the view follows "now", zooms, scrolls back and lets go of the past."""

from __future__ import annotations

import random

from crawlscope.engine.observe.timeline import Counts, Lane

STATES = ("waiting", "headers", "body", "parsing", "throttled")


def fresh(lane: Lane) -> Lane:
    return Lane(lane.worker, list(lane.times), list(lane.states), list(lane.urls))


def test_a_column_shows_the_state_held_longest_in_it() -> None:
    lane = Lane(0, [0.0, 1.2, 1.3, 2.05], ["waiting", "body", "parsing", "waiting"], [None] * 4)
    # Columns of 1 s: [0,1) waiting; [1,2) waiting 0.2, body 0.1, parsing 0.7; [2,3)...
    assert lane.columns(0, 1.0, 3) == ["waiting", "parsing", "waiting"]
    assert lane.columns(-2, 1.0, 2) == [None, None]


def test_kept_columns_are_the_columns_worked_out_afresh() -> None:
    rng = random.Random(7)
    lane = Lane(3)
    t = 0.0
    step, n = 0.05, 80
    checked = 0
    for frame in range(400):
        # Changes arrive in order, some in the column being drawn, some far apart.
        for _ in range(rng.randrange(0, 6)):
            t += rng.choice((0.001, 0.01, 0.03, 0.2))
            lane.times.append(t)
            lane.states.append(rng.choice(STATES))
            lane.urls.append(None)
        if frame % 50 == 49:
            # A zoom: another grid, its columns numbered much as the last one's were.
            step = rng.choice((0.05, 0.051, 0.0502))
        if frame % 70 == 69:
            lane.trim(t - 3.0)  # the ring let go of the oldest
        # Scrolled back for a while, else following now (which is after the last change).
        end = t - 2.0 if frame % 90 < 20 else t + rng.choice((0.0, 0.02, 0.3))
        k0 = int(end // step) - n
        assert lane.columns(k0, step, n) == fresh(lane).columns(k0, step, n), frame
        checked += 1
    assert checked == 400 and lane._settled


def test_the_count_strips_show_each_columns_largest_value() -> None:
    counts = Counts()
    for t, queued in ((0.5, 3), (1.1, 9), (1.4, 2), (3.2, 5)):
        counts.add(t, queued, 0, 0)
    # Columns of 1 s from column -1: nothing yet, 3, max(3, 9, 2), 2, 5.
    assert counts.column_max(counts.queued, -1, 1.0, 5) == [0, 3, 9, 2, 5]


def test_kept_strip_columns_are_the_columns_worked_out_afresh() -> None:
    rng = random.Random(11)
    counts = Counts()
    t, queued = 0.0, 0
    step, n = 0.05, 60
    for frame in range(300):
        for _ in range(rng.randrange(0, 8)):
            t += rng.choice((0.001, 0.01, 0.04))
            queued = max(queued + rng.randrange(-3, 4), 0)
            counts.add(t, queued, queued + 1, frame)
        if frame % 40 == 39:
            step = rng.choice((0.05, 0.051))
        if frame % 70 == 69:
            counts.trim(t - 2.0)
        end = t + rng.choice((0.0, 0.05)) - (1.5 if frame % 60 < 10 else 0.0)
        k0 = int(end // step) - n
        again = Counts(list(counts.times), list(counts.queued), list(counts.unfinished))
        for series, same in ((counts.queued, again.queued), (counts.unfinished, again.unfinished)):
            assert counts.column_max(series, k0, step, n) == again.column_max(same, k0, step, n)
