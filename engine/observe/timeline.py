"""The timeline: one lane per worker over time, and the crawl's counts on the same axis,
folded from the event stream (the flight recorder's ring, engine/trace/flight.py, or a
recording's events).

Catching up reads only the events added since the last look, and drawing one frame asks
each lane shown for a few points per column (bisect), so a frame costs what the screen
shows, not what the crawl did.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

SAMPLES = 4  # points looked at across each column: its state is the one seen most


class Feed(Protocol):
    """Where the events come from: new ones since the `seen`-th, and the oldest kept."""

    def new_events(self, seen: int) -> tuple[list[dict[str, Any]], int]: ...

    @property
    def first_t(self) -> float: ...


class ListFeed:
    """A recording's events (a list that may grow: a rewind's)."""

    def __init__(self, events: list[dict[str, Any]]) -> None:
        self.events = events

    def new_events(self, seen: int) -> tuple[list[dict[str, Any]], int]:
        return self.events[seen:], len(self.events)

    @property
    def first_t(self) -> float:
        return float(self.events[0]["t"]) if self.events else 0.0


@dataclass(slots=True)
class Lane:
    worker: int
    times: list[float] = field(default_factory=list)  # when each state began
    states: list[str] = field(default_factory=list)
    urls: list[str | None] = field(default_factory=list)

    def at(self, t: float) -> int:
        """The index of the state held at `t` (-1: before the first)."""
        return bisect.bisect_right(self.times, t) - 1

    def state_at(self, t: float) -> tuple[str, str | None, float] | None:
        i = self.at(t)
        if i < 0:
            return None
        return self.states[i], self.urls[i], self.times[i]

    def columns(self, t0: float, step: float, n: int) -> list[str | None]:
        """The state most seen across each of `n` columns of `step` seconds from `t0`."""
        out: list[str | None] = []
        times, states = self.times, self.states
        if not times:
            return [None] * n
        for c in range(n):
            seen: dict[str, int] = {}
            for k in range(SAMPLES):
                t = t0 + (c + (k + 0.5) / SAMPLES) * step
                i = bisect.bisect_right(times, t) - 1
                if i >= 0:
                    s = states[i]
                    seen[s] = seen.get(s, 0) + 1
            out.append(max(seen, key=seen.__getitem__) if seen else None)
        return out

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

    def add(self, t: float, queued: int, unfinished: int, done: int) -> None:
        if self.times and (queued, unfinished, done) == (
            self.queued[-1],
            self.unfinished[-1],
            self.done[-1],
        ):
            return
        self.times.append(t)
        self.queued.append(queued)
        self.unfinished.append(unfinished)
        self.done.append(done)

    def value_at(self, series: Sequence[int], t: float) -> int:
        i = bisect.bisect_right(self.times, t) - 1
        return series[i] if i >= 0 else 0

    def column_max(self, series: Sequence[int], t0: float, step: float, n: int) -> list[int]:
        """The largest value of `series` in each column (the value held at its start
        when it did not change within it)."""
        out = []
        times = self.times
        for c in range(n):
            a = bisect.bisect_right(times, t0 + c * step) - 1
            b = bisect.bisect_right(times, t0 + (c + 1) * step)
            lo = max(a, 0)
            out.append(max(series[lo:b]) if b > lo else (series[a] if a >= 0 else 0))
        return out

    def rates(self, t0: float, step: float, n: int) -> list[float]:
        """Pages done a second in each column."""
        edges = [self.value_at(self.done, t0 + c * step) for c in range(n + 1)]
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

    def catch_up(self) -> None:
        events, self._seen = self.feed.new_events(self._seen)
        lanes, counts = self.lanes, self.counts
        for e in events:
            t = float(e["t"])
            if e["kind"] == "state":
                lane = lanes.get(e["worker"])
                if lane is None:
                    lane = lanes[e["worker"]] = Lane(e["worker"])
                lane.times.append(t)
                lane.states.append(e["state"])
                lane.urls.append(e.get("url"))
            if "queued" in e:
                counts.add(t, e["queued"], e["unfinished"], e["done"] + e.get("failed", 0))
        if events:
            self.last_t = float(events[-1]["t"])
            first = self.feed.first_t
            for lane in lanes.values():
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
