"""Each worker's plain, cheap-to-update state: what the UI samples."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from enum import StrEnum

from ..timing.per_worker import WorkerTiming


class WorkerState(StrEnum):
    WAITING = "waiting"  # suspended in `await q.get()`: the queue is empty
    ROBOTS = "robots"  # waiting for the host's robots.txt (fetched once per host)
    THROTTLED = "throttled"  # waiting for the per-host limit or delay before a request
    CONNECTING = "connecting"  # acquiring a connection (DNS, TCP, TLS, or the pool)
    HEADERS = "headers"  # request sent, awaiting the response's status line and headers
    BODY = "body"  # reading a response body that did not come whole with its headers
    PARSING = "parsing"  # extracting links: CPU work, the loop runs nothing else meanwhile
    BACKOFF = "backoff"  # sleeping before a retry
    PAUSED = "paused"  # held back by a pause, before taking or fetching a URL
    CANCELLED = "cancelled"  # its task was cancelled; the URL it held went back on the queue
    STOPPED = "stopped"  # it ended normally (removed, or the crawl finished)


# States in which a worker holds a URL taken from the queue.
BUSY = frozenset(
    {WorkerState.ROBOTS, WorkerState.THROTTLED, WorkerState.CONNECTING, WorkerState.HEADERS,
     WorkerState.BODY, WorkerState.PARSING, WorkerState.BACKOFF}
)  # fmt: skip


@dataclass(slots=True, eq=False)
class Worker:
    id: int
    state: WorkerState = WorkerState.WAITING
    url: str | None = None  # the URL it holds, from q.get() until its record is written
    max_redirect: int = 0  # the redirect budget that came with `url`
    since: float = field(default_factory=time.monotonic)
    pages: int = 0
    task: asyncio.Task[None] | None = None
    paused: bool = False  # this worker alone was asked to pause
    retiring: bool = False  # asked to stop after the fetch in hand
    go: asyncio.Event = field(default_factory=asyncio.Event)  # set while it may run
    # Slow motion only (engine/timing/slowmo.py): it still owes a linger at its first await in
    # `state`; it is held in that await, done, for the class to see it; the seconds held so
    # far, and as of entering `state` (the crawl's durations leave them out).
    owed: bool = False
    lingering: bool = False
    lingered: float = 0.0
    lingered_then: float = 0.0
    # Its task has ended, as the crawler heard from the task's done callback. Alive means
    # "not heard to have ended" rather than "task.done() is False": the two differ for
    # one loop pass, and a worker whose liveness changed unannounced would leave a stale
    # view in the crawler's snapshot (Crawler._touch).
    ended: bool = False
    timing: WorkerTiming = field(default_factory=WorkerTiming)  # engine/timing/per_worker.py
    # Its last view and what it was built from (Crawler._row_view): a worker that has not
    # stepped or changed since is shown from it, without a walk of its await chain.
    view_of: tuple[object, WorkerView] | None = None

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.ended


# Read-only by convention, not frozen: a frozen dataclass sets each field through
# object.__setattr__, which made building one 4x slower, and a snapshot builds one per
# worker per frame (10,000 workers: 22 ms against 5 ms).
@dataclass(slots=True)
class WorkerView:
    """A worker as an observer sees it at one instant: plain data, no live references,
    so it can be drawn, recorded or sent to another process alike."""

    id: int
    state: WorkerState
    url: str | None
    # When it entered `state`, in seconds of the crawl's clock (Snapshot.elapsed's). Not
    # the time spent in it: that moves every frame, and a view that does not move can be
    # kept from frame to frame while its worker does nothing (time_in_state).
    since: float
    pages: int
    paused: bool  # asked to pause (it may still be finishing a fetch)
    retiring: bool  # asked to stop after the fetch in hand
    alive: bool  # its task has not ended
    # Where its coroutine is suspended ("Queue.get queues.py:158"), read from the task
    # when the snapshot was taken; "" when the observer did not ask for this worker.
    suspended_at: str = ""
    # Where its own code waits: the innermost frame of the chain in crawlscope's engine
    # ("Crawler._work engine/crawler.py:286"), read with suspended_at; what the code pane
    # puts a cursor on (an await in the worker's loop, not asyncio's or aiohttp's insides).
    own_at: str = ""
    # Its steps on the loop (engine/timing/per_worker.py), in seconds, as of its last state change:
    # the median and 99th percentile (bucket upper edges), the longest, and the 99th
    # percentile of its scheduling delay.
    step_p50: float = 0.0
    step_p99: float = 0.0
    step_max: float = 0.0
    delay_p99: float = 0.0

    def time_in_state(self, clock: float) -> float:
        """Seconds in `state` at `clock` (the snapshot's `elapsed`)."""
        return max(clock - self.since, 0.0)
