"""Slow motion: a worker lingers inside the real await of each state, never in a sleep.

A worker that enters a state (Crawler._enter) owes a linger. At its first suspension in
that state, the future its coroutine yields to its task (Queue.get's getter, a socket
read's waiter, the politeness gate's sleep...) is handed over a gate, and the task waits
on the gate instead: it opens once that future is done and `slowmo` seconds have passed
since the state was entered. So the task stays suspended at the real await throughout,
and "suspended at" is read from the task as always; between the future's end and the
gate's opening the worker is `lingering`, and its row says so ("(slowed)").

A state that never gives the loop back (a small page parsed on the loop, a body already
read with its headers, a get() from a queue holding URLs) has no await to show and is not
lingered in: asyncio spends no time there, and a class should not see time that is not.

The time held after the future is done is the viewer's, not the crawl's: it is added to
`Worker.lingered`, which the crawl's durations leave out (fetch records, host latency,
time in state).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from ..observe.workers import Worker


class Linger:
    """A worker task's `WorkerTiming.hold`: what its task waits on in slow motion."""

    __slots__ = ("seconds", "worker")

    def __init__(self, worker: Worker, seconds: Callable[[], float]) -> None:
        self.worker = worker
        self.seconds = seconds  # the crawl's slow motion now (0: none)

    def __call__(self, yielded: object) -> object:
        w = self.worker
        if not w.owed or not isinstance(yielded, asyncio.Future) or yielded.done():
            return yielded  # a bare yield (sleep(0)) is a turn, not an await to show
        w.owed = False  # the first suspension of the state only
        seconds = self.seconds()
        if not seconds:
            return yielded
        return _Gate(w, yielded, w.since + seconds).gate


class _Gate:
    """Opens when `awaited` is done and the monotonic clock reads `until`; cancelled, it
    cancels `awaited`, as a task's cancel() cancels the future it waits on."""

    __slots__ = ("awaited", "gate", "held_from", "timer", "until", "worker")

    def __init__(self, worker: Worker, awaited: asyncio.Future[object], until: float) -> None:
        self.worker = worker
        self.awaited = awaited
        self.until = until
        self.held_from = 0.0  # when the linger began (0.0: not lingering)
        self.timer: asyncio.TimerHandle | None = None
        self.gate: asyncio.Future[None] = awaited.get_loop().create_future()
        # The task takes the gate for the future it waits on; the future it replaces is
        # no longer awaited by the task directly.
        awaited._asyncio_future_blocking = False
        self.gate._asyncio_future_blocking = True
        awaited.add_done_callback(self._awaited_done)
        self.gate.add_done_callback(self._gate_done)

    def _awaited_done(self, _awaited: object) -> None:
        if self.gate.done():
            return
        now = time.monotonic()
        if now >= self.until:
            self.gate.set_result(None)
            return
        self.held_from = now
        self.worker.lingering = True
        self.timer = self.awaited.get_loop().call_later(self.until - now, self._open)

    def _open(self) -> None:
        if not self.gate.done():
            self.gate.set_result(None)

    def _gate_done(self, _gate: object) -> None:
        if self.held_from:
            self.worker.lingering = False
            self.worker.lingered += time.monotonic() - self.held_from
            self.held_from = 0.0
        if self.gate.cancelled():
            if self.timer is not None:
                self.timer.cancel()
            self.awaited.cancel()
