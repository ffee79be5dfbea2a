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
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from operator import attrgetter
from typing import Any, overload

from ..observe.workers import WorkerState
from ..redirects import ChainEnd
from ..timing.per_worker import Summary
from .events import COUNT_KEYS, FETCH, PAUSED, RETIRING, STATE, Item, to_event
from .replay import RECENT_KEPT, CrawlState, ReplayedCrawl, ReplayWorker, apply_event

# Events between where a replay is and where it is asked to be beyond which the state is
# read from the items afresh rather than moved on one event at a time (some 5 us each).
JUMP_AFTER = 4000
# Events between two states a rewind keeps where it jumped to, so that jumps near one read
# few items (each kept state copies the books: some 1.5 ms at 30,000 pages).
MARK_EVERY = 16384
_ENDED = ("finished", "stopped")


@dataclass(slots=True)
class ChunkSummary:
    """What a whole chunk of the ring's items does to the state, worked out once as the
    chunk is closed (flight.py), so that state_at passes over it in a few dict updates
    rather than item by item: each worker's latest state item and timing in it, its fetch
    items, its object events each with the tuple counts in force before it, and the
    counts a tuple carried after the last of them."""

    last: dict[int, Item]
    timings: dict[int, Any]
    done: dict[str, Any]  # its fetch records by URL, as the books keep them
    failed: dict[str, Any]
    recent: list[Any]  # its last records, as many as "recent fetches" keeps
    hops: list[tuple[str, str, bool]]  # its redirects
    ends: dict[str, ChainEnd]  # what became of redirect targets never fetched
    others: list[tuple[Item, tuple[Any, ...] | None]]
    tail: tuple[Any, ...] | None
    ended: bool  # a tuple in it carries a finished or stopped phase: read it item by item

    def size(self) -> int:
        """What it holds beyond the items it points to, as the ring counts its bytes."""
        return sum(
            sys.getsizeof(part)
            for part in (self.last, self.timings, self.done, self.failed, self.recent,
                         self.hops, self.ends, self.others)
        )  # fmt: skip


def summarize(chunk: Sequence[Item], recent: int = RECENT_KEPT) -> ChunkSummary:
    last: dict[int, Item] = {}
    timings: dict[int, Any] = {}
    fetches: list[Item] = []
    others: list[tuple[Item, tuple[Any, ...] | None]] = []
    counts: tuple[Any, ...] | None = None  # the latest tuple counts since the last object
    ended = False
    for item in chunk:
        kind = item[0]
        if kind == STATE:
            last[item[2]] = item
            if item[7] is not None:
                timings[item[2]] = item[7]
            if item[8] is not None:
                counts = item[8]
                ended = ended or counts[0] in _ENDED
        elif kind == FETCH:
            fetches.append(item)
        else:
            others.append((item, counts))
            counts = None
    fold = _Fold(CrawlState(), None)
    for item in fetches:
        fold.fetch(item)
    books = fold.s
    return ChunkSummary(
        last, timings, books.done, books.failed, [item[2] for item in fetches[-recent:]],
        books.hops, books.ends, others, counts, ended,
    )  # fmt: skip


def state_at(
    base: CrawlState,
    items: Sequence[Item],
    k: int,
    start: int = 0,
    *,
    copy: bool = True,
    summaries: Sequence[ChunkSummary | None] = (),
    chunk: int = 1,
) -> CrawlState:
    """The crawl after the first `k` of `items`, from `base`, the state after the first
    `start` of them: what applying each of `items[start:k]` to a copy of `base` in turn
    gives (replay.apply_event). `base` is left as it is, unless not `copy`: then it is
    the one moved on (the ring's, as it lets go of its oldest items). `summaries[i]`,
    where there is one, stands for `items[i * chunk:(i + 1) * chunk]`."""
    fold = _Fold(base.copy() if copy else base, float(items[start][1]) if k > start else None)
    i = start
    while i < k:
        c, offset = divmod(i, chunk)
        summary = summaries[c] if c < len(summaries) else None
        if summary is not None and offset == 0 and i + chunk <= k and not summary.ended:
            fold.summary(summary)
            i += chunk
            continue
        # Item by item up to the next chunk's start (or `k`).
        to = min(k, (c + 1) * chunk) if c < len(summaries) else k
        fold.items(islice(items, i, to))
        i = to
    return fold.finish(k)


class _Fold:
    """state_at's work: the state moved on by items one by one and by whole chunks."""

    def __init__(self, s: CrawlState, first_t: float | None) -> None:
        """`first_t`: the time of the first item to come (None: none comes), when a crawl
        that `s` says has ended has its clock stopped, as apply_event stops it."""
        self.s = s
        self.last: dict[int, Item] = {}  # each worker's latest state item
        self.timings: dict[int, Any] = {}  # each worker's latest timing among them
        self.pending: tuple[Any, ...] | None = None  # the latest counts a tuple carried
        if first_t is not None and s.ended_at is None and s.counts.get("phase") in _ENDED:
            s.ended_at = first_t
        self.ended = s.ended_at is not None

    def items(self, items: Iterable[Item]) -> None:
        s, last, timings = self.s, self.last, self.timings
        fetch = self.fetch
        pending, ended = self.pending, self.ended
        for item in items:
            kind = item[0]
            if kind == STATE:
                wid = item[2]
                last[wid] = item
                if item[7] is not None:
                    timings[wid] = item[7]
                counts = item[8]
            elif kind == FETCH:
                fetch(item)
                continue
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
        self.pending, self.ended = pending, ended

    def summary(self, summary: ChunkSummary) -> None:
        s = self.s
        self.last.update(summary.last)
        self.timings.update(summary.timings)
        s.done.update(summary.done)
        s.failed.update(summary.failed)
        s.recent.extend(summary.recent)
        s.hops.extend(summary.hops)
        s.ends.update(summary.ends)
        pending = self.pending
        for item, before in summary.others:
            if before is not None:
                pending = before
            if pending is not None:
                s.counts, pending = dict(zip(COUNT_KEYS, pending, strict=True)), None
            apply_event(s, item[2])
        if summary.tail is not None:
            pending = summary.tail
        self.pending, self.ended = pending, s.ended_at is not None

    def fetch(self, item: Item) -> None:
        s = self.s
        record, extra = item[2], item[3]
        # record.failed, inlined: this runs for every fetch kept.
        if record.status is None and record.filtered is None:
            s.failed[record.url] = record
        else:
            s.done[record.url] = record
        s.recent.append(record)
        if record.next_url is not None:
            budget_left = bool(extra.get("budget_left", True)) if extra else True
            s.hops.append((record.url, record.next_url, budget_left))
            if extra and "target" in extra:
                s.ends[record.next_url] = ChainEnd(extra["target"])

    def finish(self, k: int) -> CrawlState:
        s = self.s
        s.index = k
        if self.pending is not None:
            s.counts = dict(zip(COUNT_KEYS, self.pending, strict=True))
        workers = s.workers
        for wid, item in self.last.items():
            w = workers.get(wid)
            if w is None:
                w = workers[wid] = ReplayWorker(wid)
            _, t, _, state, url, pages, flags, _, _ = item
            w.state, w.url, w.since, w.pages = WorkerState(state), url, float(t), int(pages)
            w.paused, w.retiring = bool(flags & PAUSED), bool(flags & RETIRING)
            timing = self.timings.get(wid)
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

    def __init__(
        self,
        start: dict[str, Any],
        items: list[Item],
        base: CrawlState,
        summaries: Sequence[ChunkSummary | None] = (),
        chunk: int = 1024,
    ) -> None:
        self._items = items
        self._summaries, self._chunk = summaries, chunk  # of the first whole chunks
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
        state = state_at(mark, items, target, start=mark.index, summaries=self._summaries,
                         chunk=self._chunk)  # fmt: skip
        # Kept, as a copy (the state returned is moved on), if far from those kept.
        after = marks[at].index if at < len(marks) else len(items) + MARK_EVERY
        if target - mark.index >= MARK_EVERY and after - target >= MARK_EVERY:
            marks.insert(at, state.copy())
        return state


_INDEX = attrgetter("index")
