"""The timeline: one lane per worker over time, and the crawl's counts on the same axis,
folded from the event stream (the flight recorder's ring, engine/trace/flight.py, or a
recording's events).

Catching up reads only the events added since the last look, and drawing one frame asks
each lane shown for a few points per column (bisect), so a frame costs what the screen
shows, not what the crawl did.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# What a timeline takes from each event: a worker's state change, and the counts.
StatePoint = tuple[float, int, str, "str | None"]  # t, worker, state, url
CountPoint = tuple[float, int, int, int]  # t, queued, unfinished, done (failed included)


class Feed(Protocol):
    """Where the events come from: the points of those after the first `seen`, how many
    there have been, and the time of the oldest kept."""

    def new_points(self, seen: int) -> tuple[list[StatePoint], list[CountPoint], int]: ...

    def new_events(self, seen: int) -> tuple[list[dict[str, Any]], int]: ...

    @property
    def first_t(self) -> float: ...


def points_of(events: list[dict[str, Any]]) -> tuple[list[StatePoint], list[CountPoint]]:
    """The points of events in the recording's form."""
    states: list[StatePoint] = []
    counts: list[CountPoint] = []
    for e in events:
        t = float(e["t"])
        if e["kind"] == "state":
            states.append((t, e["worker"], e["state"], e.get("url")))
        if "queued" in e:
            counts.append((t, e["queued"], e["unfinished"], e["done"] + e.get("failed", 0)))
    return states, counts


class ListFeed:
    """A recording's events (a list that may grow: a rewind's)."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events

    def new_points(self, seen: int) -> tuple[list[StatePoint], list[CountPoint], int]:
        return (*points_of(self.events[seen:]), len(self.events))

    def new_events(self, seen: int) -> tuple[list[dict[str, Any]], int]:
        return self.events[seen:], len(self.events)

    @property
    def first_t(self) -> float:
        return float(self.events[0]["t"]) if self.events else 0.0


DENSE = 3  # changes within a column beyond which its middle stands for it
# Seconds by which the counts may come out of order (a state change is stamped when the
# worker entered it, a fetch when it is recorded): a column of the strips is kept for the
# next frame once it ended this long before the last change.
LATE = 0.1


@dataclass(slots=True)
class Lane:
    worker: int
    times: list[float] = field(default_factory=list)  # when each state began
    states: list[str] = field(default_factory=list)
    urls: list[str | None] = field(default_factory=list)
    # The columns worked out at the last frame that no later change can alter: from
    # column `_from` on, on the grid of `_step` (Lane.columns).
    _settled: list[str | None] = field(default_factory=list)
    _from: int = 0
    _step: float = 0.0

    def at(self, t: float) -> int:
        """The index of the state held at `t` (-1: before the first)."""
        return bisect.bisect_right(self.times, t) - 1

    def state_at(self, t: float) -> tuple[str, str | None, float] | None:
        i = self.at(t)
        if i < 0:
            return None
        return self.states[i], self.urls[i], self.times[i]

    def columns(self, k0: int, step: float, n: int) -> list[str | None]:
        """The state held longest across each of `n` columns of `step` seconds, column `k`
        spanning [k * step, (k + 1) * step), from column `k0` (None before the lane's
        first state); in a column with more than DENSE changes, the state held at its
        middle. Columns are numbered on a grid fixed by `step` so that one that ended
        before the lane's last change, which no later event can alter, is worked out once
        and read from then on: a frame works out the columns that moved, not the screen."""
        times = self.times
        if not times:
            return [None] * n
        # A column is for good once it ends by the last change (a worker's changes come in
        # order), while it begins after the first kept (what came before may be let go).
        first = math.ceil(times[0] / step)  # the first column that begins after it
        kept = self._settled if self._step == step and k0 >= max(first, self._from) else []
        out = kept[k0 - self._from : k0 - self._from + n]
        column = self._column
        # From the first column that begins at or after the last change, every column
        # holds the last state: when following now, most of those not settled.
        held_from = max(math.ceil(times[-1] / step), k0 + len(out))
        for k in range(k0 + len(out), min(held_from, k0 + n)):
            out.append(column(k * step, (k + 1) * step))
        if len(out) < n:
            out += [self.states[-1]] * (n - len(out))
        if k0 >= first:
            # The columns ended by the last change (one fewer: a rounding at the edge).
            settled = min(n, math.floor(times[-1] / step) - k0 - 1)
            self._settled, self._from, self._step = out[: max(settled, 0)], k0, step
        else:
            self._settled = []
        return out

    def _column(self, start: float, end: float) -> str | None:
        times, states = self.times, self.states
        right = bisect.bisect_right
        i = right(times, start) - 1  # the state held at the column's start
        last = bisect.bisect_left(times, end, i + 1) - 1  # the last to begin within it
        if last == i:  # no change within the column
            return states[i] if i >= 0 else None
        if last - i > DENSE:
            return states[right(times, (start + end) / 2, i + 1, last + 1) - 1]
        held: dict[str, float] = {}
        edge = start
        for j in range(i + 1, last + 1):
            if i >= 0:
                held[states[i]] = held.get(states[i], 0.0) + times[j] - edge
            edge, i = times[j], j
        held[states[i]] = held.get(states[i], 0.0) + end - edge
        return max(held, key=held.__getitem__)

    def trim(self, before: float) -> None:
        """Forget the states that ended before `before` (the one held then stays)."""
        i = bisect.bisect_right(self.times, before) - 1
        if i > 0:
            del self.times[:i], self.states[:i], self.urls[:i]


@dataclass(slots=True)
class Counts:
    """The queue, the unfinished counter and the pages done, each time they changed."""

    times: list[float] = field(default_factory=list)
    queued: list[int] = field(default_factory=list)
    unfinished: list[int] = field(default_factory=list)
    done: list[int] = field(default_factory=list)
    # What column_max kept of its last frame, by series: from which column, on which grid.
    _kept: dict[int, tuple[int, float, list[int]]] = field(default_factory=dict)

    def add(self, t: float, queued: int, unfinished: int, done: int) -> None:
        if (
            self.times
            and done == self.done[-1]
            and queued == self.queued[-1]
            and unfinished == self.unfinished[-1]
        ):
            return
        self.times.append(t)
        self.queued.append(queued)
        self.unfinished.append(unfinished)
        self.done.append(done)

    def value_at(self, series: Sequence[int], t: float) -> int:
        i = bisect.bisect_right(self.times, t) - 1
        return series[i] if i >= 0 else 0

    def column_max(self, series: list[int], k0: int, step: float, n: int) -> list[int]:
        """The largest value of `series` in each column of the grid of `step` (Lane.columns),
        from column `k0` (the value held at its start when it did not change within it).
        Columns that ended LATE before the last change are kept for the next frame, as a
        lane keeps its own."""
        times = self.times
        if not times:
            return [0] * n
        kept_from, kept_step, kept = self._kept.get(id(series), (0, 0.0, []))
        first = math.ceil(times[0] / step)
        if kept_step != step or k0 < max(first, kept_from):
            kept = []
        out = kept[k0 - kept_from : k0 - kept_from + n]
        out += self._column_max(series, k0 + len(out), step, n - len(out))
        if k0 >= first:
            settled = min(n, math.floor((times[-1] - LATE) / step) - k0 - 1)
            self._kept[id(series)] = (k0, step, out[: max(settled, 0)])
        return out

    def _column_max(self, series: list[int], k0: int, step: float, n: int) -> list[int]:
        out = []
        times = self.times
        right = bisect.bisect_right
        edge = right(times, k0 * step)
        for k in range(k0, k0 + n):
            a = edge - 1
            edge = right(times, (k + 1) * step, max(a, 0))
            lo = max(a, 0)
            if edge > lo:
                out.append(series[lo] if edge - lo == 1 else max(series[lo:edge]))
            else:
                out.append(series[a] if a >= 0 else 0)
        return out

    def rates(self, k0: int, step: float, n: int) -> list[float]:
        """Pages done a second in each column of the grid of `step`, from column `k0`."""
        edges = [self.value_at(self.done, k * step) for k in range(k0, k0 + n + 1)]
        return [(edges[c + 1] - edges[c]) / step for c in range(n)]

    def trim(self, before: float) -> None:
        i = bisect.bisect_right(self.times, before) - 1
        if i > 0:
            del self.times[:i], self.queued[:i], self.unfinished[:i], self.done[:i]


class Timeline:
    """Lanes and counts, kept up with a feed."""

    def __init__(self, feed: Feed) -> None:
        self.feed = feed
        self.lanes: dict[int, Lane] = {}
        self.counts = Counts()
        self.last_t = 0.0
        self._seen = 0
        self._first = 0.0  # the feed's oldest time when the lanes were last trimmed
        self._appends: dict[int, tuple[Callable[[float], None], Callable[[str], None],
                                       Callable[[str | None], None]]] = {}  # fmt: skip

    @property
    def seen(self) -> int:
        """How many events it has read: more, and the lanes may have moved."""
        return self._seen

    def catch_up(self) -> None:
        states, counts_seen, self._seen = self.feed.new_points(self._seen)
        # Thousands of points a frame at a fast crawl's pace: each lane's appends are
        # looked up once, not three attributes a point.
        appends = self._appends
        for t, worker, state, url in states:
            got = appends.get(worker)
            if got is None:
                lane = self.lanes[worker] = Lane(worker)
                got = appends[worker] = (lane.times.append, lane.states.append, lane.urls.append)
            got[0](t)
            got[1](state)
            got[2](url)
        counts = self.counts
        for point in counts_seen:
            counts.add(*point)
        if states or counts_seen:
            last = max(states[-1][0] if states else 0.0, counts_seen[-1][0] if counts_seen else 0.0)
            self.last_t = max(self.last_t, last)
            first = self.feed.first_t
            if first != self._first:  # the feed let go of its oldest: so do the lanes
                self._first = first
                for lane in self.lanes.values():
                    lane.trim(first)
                counts.trim(first)

    def order(self, at: float, by: str = "worker") -> list[int]:
        """The workers' ids: by number, or by how long each has held its state at `at`
        (longest first)."""
        ids = sorted(self.lanes)
        if by == "time":

            def held(i: int) -> float:
                now = self.lanes[i].state_at(at)
                return at - now[2] if now is not None else -1.0

            ids.sort(key=held, reverse=True)
        return ids
