"""The flight recorder's ring played back without folding all of it.

A rewind opens on a ring of some 150,000 events (ten minutes of a fast crawl), and a
replay reaches a moment by applying every event before it, each made an object first:
seconds. Here the state at a moment is read straight from the ring's tuples instead
(state_at): one pass in which a state change only notes the worker's latest item and a
fetch only files its record, the workers built once at the end. Small steps (playing
on, one event at a time) still apply events one by one, as any replay does.
"""

from __future__ import annotations

import bisect
import gc
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from itertools import islice
from operator import attrgetter
from typing import Any, overload

from ..observe.workers import WorkerState
from ..redirects import ChainEnd
from ..timing.per_worker import Summary
from .events import COUNT_KEYS, FETCH, PAUSED, RETIRING, STATE, Item, to_event
from .replay import CrawlState, ReplayedCrawl, ReplayWorker, apply_event

# Events between where a replay is and where it is asked to be beyond which the state is
# read from the items afresh rather than moved on one event at a time (some 5 us each).
JUMP_AFTER = 4000
# Events between two states a rewind keeps where it jumped to, so that jumps near one read
# few items (each kept state copies the books: some 1.5 ms at 30,000 pages).
MARK_EVERY = 16384
_ENDED = ("finished", "stopped")


def state_at(
    base: CrawlState, items: Sequence[Item], k: int, start: int = 0, *, copy: bool = True
) -> CrawlState:
    """The crawl after the first `k` of `items`, from `base`, the state after the first
    `start` of them: what applying each of `items[start:k]` to a copy of `base` in turn
    gives (replay.apply_event). `base` is left as it is, unless not `copy`: then it is
    the one moved on (the ring's, as it lets go of its oldest items)."""
    s = base.copy() if copy else base
    s.index = k
    last: dict[int, Item] = {}  # each worker's latest state item
    timings: dict[int, Any] = {}  # each worker's latest timing among them
    pending: tuple[Any, ...] | None = None  # the latest counts, if a tuple carried them
    done, failed, recent = s.done, s.failed, s.recent
    if k > start and s.ended_at is None and s.counts.get("phase") in _ENDED:
        s.ended_at = float(items[start][1])
    ended = s.ended_at is not None
    for item in islice(items, start, k):
        kind = item[0]
        if kind == STATE:
            wid = item[2]
            last[wid] = item
            if item[7] is not None:
                timings[wid] = item[7]
            counts = item[8]
        elif kind == FETCH:
            record, extra, counts = item[2], item[3], item[4]
            # record.failed, inlined: this runs for every fetch kept.
            if record.status is None and record.filtered is None:
                failed[record.url] = record
            else:
                done[record.url] = record
            recent.append(record)
            if record.next_url is not None:
                budget_left = bool(extra.get("budget_left", True)) if extra else True
                s.hops.append((record.url, record.next_url, budget_left))
                if extra and "target" in extra:
                    s.ends[record.next_url] = ChainEnd(extra["target"])
        else:
            # An object already: a rare kind here, every kind in a viewer's ring (its
            # state changes are applied as they come, so none is pending from a tuple).
            if pending is not None:
                s.counts, pending = dict(zip(COUNT_KEYS, pending, strict=True)), None
            apply_event(s, item[2])
            ended = s.ended_at is not None
            continue
        if counts is not None:
            pending = counts
            if not ended and counts[0] in _ENDED:
                s.ended_at, ended = float(item[1]), True
    if pending is not None:
        s.counts = dict(zip(COUNT_KEYS, pending, strict=True))
    workers = s.workers
    for wid, item in last.items():
        w = workers.get(wid)
        if w is None:
            w = workers[wid] = ReplayWorker(wid)
        _, t, _, state, url, pages, flags, _, _ = item
        w.state, w.url, w.since, w.pages = WorkerState(state), url, float(t), int(pages)
        w.paused, w.retiring = bool(flags & PAUSED), bool(flags & RETIRING)
        timing = timings.get(wid)
        if timing is not None:
            w.timing = Summary(*(float(x) for x in timing))
    s.states = dict.fromkeys(WorkerState, 0)
    s.retiring = 0
    for w in workers.values():
        s.count(w, 1)
    return s


@contextmanager
def uncollected() -> Iterator[None]:
    """No garbage collection while a state is built: it makes no cycles, and a collection
    on the way walks every object the ring holds (some 60 ms at 150,000 events)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


class ItemEvents(Sequence[dict[str, Any]]):
    """A list of items seen as the recording's events, each made when it is read."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [to_event(item) for item in self.items[index]]
        return to_event(self.items[index])

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (to_event(item) for item in self.items)


class ItemTimes(Sequence[float]):
    """Each item's time, read from the item when asked: a seek bisects a few of them, and
    a list of them all would cost a rewind's opening more than its state does."""

    def __init__(self, items: list[Item]) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    @overload
    def __getitem__(self, index: int) -> float: ...

    @overload
    def __getitem__(self, index: slice) -> list[float]: ...

    def __getitem__(self, index: int | slice) -> float | list[float]:
        if isinstance(index, slice):
            return [float(item[1]) for item in self.items[index]]
        return float(self.items[index][1])


class KeptPast(ReplayedCrawl):
    """A ring's items as a recording (the ring's own `start` and `base`), which jumps to
    a far moment by state_at rather than by applying the events between."""

    def __init__(self, start: dict[str, Any], items: list[Item], base: CrawlState) -> None:
        self._items = items
        # States on the way, every MARK_EVERY items from `base`: never changed once made.
        base.index = 0
        self._marks = [base]
        with uncollected():
            super().__init__(start, ItemEvents(items), base, times=ItemTimes(items))

    def extend_items(self, items: list[Item]) -> None:
        """The ring's items added since (a crawl going on while it is looked back at)."""
        self._items.extend(items)
        if self._items:
            self.duration = float(self._items[-1][1])

    def _apply_until(self, target: int) -> None:
        index = self._state.index
        if target < index or target - index > JUMP_AFTER:
            with uncollected():
                self._state = self._jump(target)
            return
        state, items = self._state, self._items
        while state.index < target:
            apply_event(state, to_event(items[state.index]))
            state.index += 1

    def _jump(self, target: int) -> CrawlState:
        """The state after `target` items, read from the nearest kept state before it
        (those missing on the way made and kept)."""
        marks, items = self._marks, self._items
        at = bisect.bisect_right(marks, target, key=_INDEX)
        mark = marks[at - 1]
        state = state_at(mark, items, target, start=mark.index)
        # Kept, as a copy (the state returned is moved on), if far from those kept.
        after = marks[at].index if at < len(marks) else len(items) + MARK_EVERY
        if target - mark.index >= MARK_EVERY and after - target >= MARK_EVERY:
            marks.insert(at, state.copy())
        return state


_INDEX = attrgetter("index")
