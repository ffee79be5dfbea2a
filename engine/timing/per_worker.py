"""Time per worker: how long each resume of its coroutine ran on the loop (a *step*),
how long it waited to run once ready (*scheduling delay*), and its time in each state.

The mechanism, chosen for cost (it is always on): a worker's task runs a TimedCoroutine
that wraps the worker's coroutine. asyncio's Task resumes a coroutine by calling its
send() or throw(); the wrapper reads `time.perf_counter_ns()` on each side of that call
and drops the difference into a fixed histogram. That is two clock reads, one Python
call and a bucket increment per step, and nothing at all while a worker waits, whatever
the crawl rate. (sys.setprofile or a Task subclass would cost every coroutine and
callback in the process, the TUI's included; loop.slow_callback_duration needs debug
mode, which slows everything.)

Scheduling delay, defined honestly: asyncio keeps no "became ready" time for a task, so
it is measured from the moment the loop iteration that runs the step came back from
polling for I/O (PollClock, which wraps the loop's selector.select) to the moment the
step starts: how long the callbacks queued ahead of it in that iteration held it back.
A step woken during the previous iteration also waited for that iteration's rest, which
this does not count: the figure is a lower bound of the true delay. Where the loop has
no selector to wrap (uvloop, say) no delay is recorded.

Histograms are log2 buckets of nanoseconds (`BUCKETS` counters, one array each): p50
and p99 are read as the upper edge of the bucket holding them (capped at the maximum
seen), so they are "at most" figures within a factor of two, for a fixed ~300 bytes.
"""

from __future__ import annotations

import asyncio
import gc
import os
import time
import weakref
from array import array
from collections import deque
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass
from types import FrameType
from typing import Any, NamedTuple

# The benchmark's switch (bench/timing_cost.py): with it False, new worker tasks run
# their coroutine bare, state changes are not timed, no lag probe runs and no garbage
# collection is watched. Not a user option; the instrumentation is always on.
ENABLED = True

BUCKETS = 32
# Bucket 0 holds steps under 2**_FIRST ns (about 1 µs); bucket i, those of bit length
# _FIRST + i; the last, everything longer (over 35 minutes).
_FIRST = 10
_TOP = BUCKETS - 1
# A step this long held the loop for everyone: the crawler hears of it (LOOP_BLOCKED).
LONG_STEP_NS = 50_000_000

# Time in each state, in slots given out to states as they are first left (timing
# knows no states of its own, so that workers.py can hold a WorkerTiming).
MAX_STATES = 16
_STATE_SLOT: dict[str, int] = {}
# State changes a worker keeps: one step can pass parsing -> waiting -> (robots ->
# throttled ->) connecting -> headers, and a long step is put down to the state its time
# went to.
TRAIL = 6
# A state change: (monotonic time, the state entered, the URL held then).
Change = tuple[float, str, str | None]
NO_CHANGE: Change = (0.0, "", None)

_clock = time.perf_counter_ns


class Histogram:
    """Counts of values in log2 buckets of nanoseconds, and the largest value seen."""

    __slots__ = ("counts", "max_ns")

    def __init__(self) -> None:
        self.counts = array("Q", bytes(8 * BUCKETS))
        self.max_ns = 0

    def add(self, ns: int) -> None:
        i = (ns >> _FIRST).bit_length()  # as TimedCoroutine.send counts
        self.counts[i if i < BUCKETS else _TOP] += 1
        if ns > self.max_ns:
            self.max_ns = ns

    @property
    def total(self) -> int:
        return sum(self.counts)

    def quantile(self, q: float) -> float:
        """Seconds: the upper edge of the bucket that holds the q-th value, at most the
        maximum; 0.0 when empty."""
        total = sum(self.counts)
        if not total:
            return 0.0
        rank = q * total
        seen = 0
        for i, count in enumerate(self.counts):
            seen += count
            if count and seen >= rank:
                return min(bucket_edge_ns(i), self.max_ns) / 1e9
        return self.max_ns / 1e9


def bucket_edge_ns(i: int) -> int:
    """The largest value bucket `i` holds, in nanoseconds (its upper edge)."""
    return (1 << (_FIRST + i)) - 1


class Summary(NamedTuple):
    """A worker's timing in four plain numbers (seconds): what a table row shows, and
    what a recording's state event holds (as a list, in this order)."""

    step_p50: float = 0.0
    step_p99: float = 0.0
    step_max: float = 0.0
    delay_p99: float = 0.0


class WorkerTiming:
    """One worker's figures: ~1 KB however long it runs (tests/engine/test_timing.py)."""

    __slots__ = ("_trail_at", "current", "delay", "hold", "on_long", "state_n", "state_s",
                 "step", "trail")  # fmt: skip

    def __init__(self) -> None:
        self.step = Histogram()
        self.delay = Histogram()
        self.state_s = array("d", bytes(8 * MAX_STATES))  # seconds in each state
        self.state_n = array("Q", bytes(8 * MAX_STATES))  # times each state was left
        # Its last TRAIL state changes, (monotonic time, state entered, URL held then),
        # in a ring: what a long step is put down to (the state it started in).
        self.trail: list[Change] = [NO_CHANGE] * TRAIL
        self._trail_at = 0
        self.current = NO_CHANGE  # the newest of the trail: what a step starts in
        # Told of a step of LONG_STEP_NS or more (garbage collection left out): its
        # length, the collections' part of it, the innermost frame where the coroutine
        # gave the loop back, and the state change the step began after.
        self.on_long: Callable[[int, int, FrameType | None, Change], None] | None = None
        # Slow motion (engine/timing/slowmo.py): given what the coroutine yielded to its task,
        # what the task is to wait on instead (the same future, or one that holds it).
        self.hold: Callable[[Any], Any] | None = None

    def moved(self, left: str, seconds: float, entered: str, url: str | None, now: float) -> None:
        """The worker spent `seconds` in state `left` and at `now` entered `entered`,
        holding `url`."""
        if not ENABLED:
            return
        self.trail[self._trail_at] = self.current = (now, entered, url)
        self._trail_at = (self._trail_at + 1) % TRAIL
        slot = _STATE_SLOT.get(left)
        if slot is None:
            if len(_STATE_SLOT) >= MAX_STATES:
                return
            slot = _STATE_SLOT[left] = len(_STATE_SLOT)
        self.state_n[slot] += 1
        if seconds > 0:
            self.state_s[slot] += seconds

    def longest_state(self, began: Change, start: float, end: float) -> tuple[str, str | None]:
        """Of a step from monotonic `start` to `end` that began in `began`, the state the
        most of its time went to, and the URL held on entering it: one step can parse a
        page, take the next URL and send its request, and it is the parse that held it."""
        changes = sorted(c for c in self.trail if c[1] and start < c[0] <= end)
        best, longest, at = began, 0.0, start
        for change in (*changes, (end, "", None)):
            if change[0] - at > longest:
                longest = change[0] - at
                best = began
            began, at = change, change[0]
        return best[1], best[2]

    def state_totals(self) -> dict[str, tuple[float, int]]:
        """Each state left so far: seconds spent in it, and how many times."""
        return {state: (self.state_s[i], self.state_n[i]) for state, i in _STATE_SLOT.items()}

    def summary(self) -> Summary:
        if not self.step.max_ns:
            return _EMPTY
        return Summary(
            self.step.quantile(0.5),
            self.step.quantile(0.99),
            self.step.max_ns / 1e9,
            self.delay.quantile(0.99),
        )


_EMPTY = Summary()


@dataclass(frozen=True, slots=True)
class Hold:
    """One step that held the loop long: whose, in what state, where it gave it back."""

    seconds: float
    t: float  # when it ended, in seconds of the crawl's clock
    worker: int
    state: str
    url: str = ""
    line: str = ""  # "links.py:212": the innermost frame after the step


# The last garbage collections, (start, end) in perf_counter_ns: read only after a long
# step, to leave their time out of it. A callback per collection, about a microsecond.
_GC_SPANS: deque[tuple[int, int]] = deque(maxlen=32)
_gc_began = 0


def _note_gc(phase: str, _info: dict[str, int]) -> None:
    global _gc_began
    if phase == "start":
        _gc_began = _clock()
    elif _gc_began:
        _GC_SPANS.append((_gc_began, _clock()))


def gc_ns_between(start: int, end: int) -> int:
    """Nanoseconds of garbage collection between two perf_counter_ns readings."""
    return sum(min(b, end) - max(a, start) for a, b in tuple(_GC_SPANS) if b > start and a < end)


class PollClock:
    """When the loop last came back from polling for I/O, in perf_counter_ns: the start
    of the scheduling delay of every step run in that iteration."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last = 0


_CLOCKS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, PollClock] = (
    weakref.WeakKeyDictionary()
)
_NO_CLOCK = PollClock()  # never set: its `last` of 0 means "no delay measured"


def poll_clock(loop: asyncio.AbstractEventLoop) -> PollClock:
    """The loop's PollClock, installed on first use: selector.select wrapped to note
    the time it returns (one clock read per loop iteration)."""
    clock = _CLOCKS.get(loop)
    if clock is not None:
        return clock
    selector = getattr(loop, "_selector", None)
    select = getattr(selector, "select", None)
    if select is None:
        return _NO_CLOCK
    clock = PollClock()

    def timed_select(timeout: float | None = None) -> Any:
        try:
            return select(timeout)
        finally:
            clock.last = _clock()

    try:
        selector.select = timed_select  # type: ignore[union-attr]
    except AttributeError:
        return _NO_CLOCK
    _CLOCKS[loop] = clock
    return clock


class TimedCoroutine(Coroutine[Any, Any, Any]):
    """A coroutine that times each of its steps; what a worker's task runs.

    engine/observe/introspect.py looks through it (`wrapped`), so "suspended at" and the await
    chain read the worker's own coroutine.
    """

    __slots__ = ("_delay", "_delays", "_poll", "_step", "_steps", "timing", "wrapped")

    def __init__(
        self, coro: Coroutine[Any, Any, Any], timing: WorkerTiming, poll: PollClock
    ) -> None:
        self.wrapped = coro
        self.timing = timing
        self._poll = poll
        if _note_gc not in gc.callbacks:
            gc.callbacks.append(_note_gc)
        self._step, self._steps = timing.step, timing.step.counts
        self._delay, self._delays = timing.delay, timing.delay.counts

    # send() is the hot path, run on every step of every worker: the histograms'
    # updates are written out here rather than called (each call cost a fifth of it).
    def send(self, value: Any) -> Any:
        began = self.timing.current
        start = _clock()
        try:
            yielded = self.wrapped.send(value)
            hold = self.timing.hold
            return yielded if hold is None else hold(yielded)
        finally:
            ns = _clock() - start
            i = (ns >> _FIRST).bit_length()
            self._steps[i if i < BUCKETS else _TOP] += 1
            if ns > self._step.max_ns:
                self._step.max_ns = ns
            if ns >= LONG_STEP_NS:
                self._long(start, ns, began)
            polled = self._poll.last
            if polled:
                d = start - polled
                if d >= 0:
                    i = (d >> _FIRST).bit_length()
                    self._delays[i if i < BUCKETS else _TOP] += 1
                    if d > self._delay.max_ns:
                        self._delay.max_ns = d

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        began = self.timing.current
        start = _clock()
        try:
            if val is None and tb is None:
                yielded = self.wrapped.throw(typ)
            else:
                yielded = self.wrapped.throw(typ, val, tb)
            hold = self.timing.hold
            return yielded if hold is None else hold(yielded)
        finally:
            ns = _clock() - start
            self.timing.step.add(ns)
            if ns >= LONG_STEP_NS:
                self._long(start, ns, began)

    def _long(self, start: int, ns: int, began: Change) -> None:
        # A garbage collection that ran inside the step held the loop too, but it is the
        # whole process's, not this worker's: it does not count towards a long step.
        collected = gc_ns_between(start, start + ns)
        on_long = self.timing.on_long
        if on_long is not None and ns - collected >= LONG_STEP_NS:
            on_long(ns, collected, innermost_frame(self.wrapped), began)

    def close(self) -> None:
        self.wrapped.close()

    def __await__(self) -> Generator[Any, None, Any]:
        return self.wrapped.__await__()

    # What asyncio's Task repr and debuggers read from a coroutine.
    @property
    def cr_code(self) -> Any:
        return getattr(self.wrapped, "cr_code", None)

    @property
    def cr_frame(self) -> Any:
        return getattr(self.wrapped, "cr_frame", None)

    @property
    def cr_await(self) -> Any:
        return getattr(self.wrapped, "cr_await", None)

    @property
    def cr_running(self) -> bool:
        return bool(getattr(self.wrapped, "cr_running", False))


def timed(coro: Coroutine[Any, Any, Any], timing: WorkerTiming) -> Coroutine[Any, Any, Any]:
    """What a worker's task should run: `coro` timed into `timing`, unless the benchmark
    turned timing off."""
    if not ENABLED:
        return coro
    return TimedCoroutine(coro, timing, poll_clock(asyncio.get_running_loop()))


_ASYNCIO_DIR = os.path.dirname(asyncio.__file__)


def innermost_frame(coro: object) -> FrameType | None:
    """The deepest frame of a suspended await chain outside asyncio itself: the line
    where the crawl's own code gave the loop back (`await asyncio.sleep(0)`, not
    asyncio's `__sleep0`). Read only after a long step, so a plain walk will do."""
    frame = None
    node: object = coro
    for _ in range(64):
        f = getattr(node, "cr_frame", None) or getattr(node, "gi_frame", None)
        if f is None:
            break
        if not f.f_code.co_filename.startswith(_ASYNCIO_DIR):
            frame = f
        node = getattr(node, "cr_await", None) or getattr(node, "gi_yieldfrom", None)
        if node is None:
            break
    return frame
