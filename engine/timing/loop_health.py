"""Loop health and the timing lints: how late the loop runs a timer, which steps held it
longest, and the warnings drawn from the workers' timing (engine/timing/per_worker.py).

- Lag: a probe timer due every PROBE_EVERY seconds notes how late it ran; the snapshot
  reads p50 and p99 over the last LAG_WINDOW seconds (a bounded ring, sorted when read,
  at most once per probe).
- Holds: every worker step of LONG_STEP_NS or more, with its worker, the state it ran in,
  its URL and the line where it gave the loop back; the snapshot shows the longest of
  the last LAG_WINDOW seconds.
- Lints: LOOP_BLOCKED for each such step; STUCK for a busy worker in one state
  `stuck_factor` times the crawl's mean for that state (and at least `stuck_min`
  seconds; not a backoff or a host's delay, which are waits on purpose); JOIN_STALLED
  when the unfinished counter has not moved for `stall_after` seconds while every
  worker waits on the queue, which join() would wait on for ever (in-memory frontier
  only: in a cluster, another process may be holding the URLs).
"""

from __future__ import annotations

import asyncio
import math
import os
import time
from collections import deque
from collections.abc import Callable, Container, Mapping
from types import FrameType
from typing import TYPE_CHECKING, Protocol

from ..ledger import Ledger, Listeners
from ..lints.hosts import host_lints, idle_workers
from ..lints.lint import Lint, LintKind
from ..observe.snapshot import MAX_WARNINGS, Phase
from ..observe.text import printable
from ..observe.verdict import Diagnosis, reading_of
from ..observe.workers import BUSY, Worker, WorkerState
from ..urls import origin_of
from . import per_worker as timing
from .per_worker import Change, Hold

if TYPE_CHECKING:
    from ..frontier import Frontier
    from ..observe.snapshot import Snapshot

PROBE_EVERY = 0.25  # seconds between lag probes
LAG_WINDOW = 60.0  # seconds of lag samples and holds the figures cover
LAG_SAMPLES = int(LAG_WINDOW / PROBE_EVERY) + 1
MAX_HOLDS = 5  # the longest holds a snapshot shows
CHECK_EVERY = 4  # probes between checks for stuck workers and a stalled join
# States a worker may be stuck in: not the deliberate waits (a backoff before a retry, a
# host's delay or limit), whose length the config sets, and which the host lints watch.
STUCK_STATES = BUSY - {WorkerState.BACKOFF, WorkerState.THROTTLED}


class WatchedCrawl(Protocol):
    """What the loop's health reads of the crawl it watches. The crawler makes a LoopHealth
    and hands itself in; naming it here by what is read, not by its class, keeps this module
    a part the crawler uses, never one that knows the crawler."""

    phase: Phase
    q: Frontier
    ledger: Ledger

    @property
    def workers(self) -> Mapping[int, Worker]: ...
    @property
    def unfinished(self) -> int: ...
    @property
    def elapsed(self) -> float: ...
    def snapshot(self, where_for: Container[int] | None = None, rows: bool = True) -> Snapshot: ...


class LoopHealth:
    def __init__(self, crawler: WatchedCrawl, on_fault: Callable[[Exception], None]) -> None:
        self.crawler = crawler
        self.lint_listeners: Listeners[Lint] = Listeners(on_fault)
        # Told after each check (every CHECK_EVERY probes): a recorder keeps the figures.
        self.check_listeners: Listeners[None] = Listeners(on_fault)
        self.warnings: deque[Lint] = deque(maxlen=MAX_WARNINGS)
        self.warning_count = 0
        self.stuck_factor = 10.0
        self.stuck_min = 5.0
        self.stall_after = 5.0
        self._lags: deque[tuple[float, float]] = deque(maxlen=LAG_SAMPLES)  # (t, lag)
        self._holds: deque[Hold] = deque(maxlen=64)
        self._handle: asyncio.TimerHandle | None = None
        self._due = 0.0
        self._probes = 0
        self._read_at = -1  # the probe count the cached figures were read at
        self._lag = (0.0, 0.0)
        self._stuck: set[tuple[int, float]] = set()  # (worker, since) already warned of
        self._unfinished = -1
        self._still_since = 0.0
        self._stall_told = False
        self._host_told: set[tuple[LintKind, str]] = set()  # host lints now holding
        # What limits the crawl (engine/observe/verdict.py), fed at each check: the clocks
        # it reads the process's share of a core from, and a loop-blocked warning since.
        self.diagnosis = Diagnosis()
        self._clocks = (time.monotonic(), time.process_time())
        self._store = (0.0, 0)  # the frontier's store_time() at the last check
        self._blocked = ""

    # ---- the probe ------------------------------------------------------------------

    def start(self) -> None:
        if timing.ENABLED:
            self._schedule(asyncio.get_running_loop())

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _schedule(self, loop: asyncio.AbstractEventLoop) -> None:
        self._due = loop.time() + PROBE_EVERY
        self._handle = loop.call_at(self._due, self._probe, loop)

    def _probe(self, loop: asyncio.AbstractEventLoop) -> None:
        self._lags.append((time.monotonic(), max(loop.time() - self._due, 0.0)))
        self._probes += 1
        if self._probes % CHECK_EVERY == 0:
            self._check_stuck()
            self._check_stall()
            self._check_hosts()
            if self.check_listeners:
                self.check_listeners.tell(None)
        self._schedule(loop)

    def figures(self) -> tuple[float, float, tuple[Hold, ...]]:
        """Lag p50 and p99 over the last minute, and its longest holds."""
        if self._read_at != self._probes:
            self._read_at = self._probes
            since = time.monotonic() - LAG_WINDOW
            lags = sorted(lag for t, lag in self._lags if t >= since)
            if lags:
                self._lag = (_nearest_rank(lags, 0.5), _nearest_rank(lags, 0.99))
        now = self.crawler.elapsed
        recent = [h for h in self._holds if h.t >= now - LAG_WINDOW]
        recent.sort(key=lambda h: h.seconds, reverse=True)
        return self._lag[0], self._lag[1], tuple(recent[:MAX_HOLDS])

    # ---- the lints --------------------------------------------------------------------

    def tell(self, lint: Lint) -> None:
        if lint.kind is LintKind.LOOP_BLOCKED:
            self._blocked = lint.text
        self.warnings.append(lint)
        self.warning_count += 1
        if self.lint_listeners:
            self.lint_listeners.tell(lint)

    def long_step(
        self, w: Worker, ns: int, gc_ns: int, frame: FrameType | None, began: Change
    ) -> None:
        """A step of `w` held the loop `ns` nanoseconds, `gc_ns` of them collecting
        garbage, begun in the state change `began` (engine/timing/per_worker.py told)."""
        seconds = ns / 1e9
        # Put down to the state its time went to and the URL held then, never to where
        # the worker stands after it (the next page's request, sent in the same step).
        now = time.monotonic()
        state, url = w.timing.longest_state(began, now - seconds, now)
        state = str(state or w.state.value)
        url = url or self._last_url(w.id)
        line = _line(frame)
        t = self.crawler.elapsed
        self._holds.append(Hold(seconds, t, w.id, state, url, line))
        where = f" {printable(url, 200)}" if url else ""
        given = f", gave it back at {line}" if line else ""
        collected = f" ({gc_ns / 1e6:.0f} ms of it collecting garbage)" if gc_ns >= 1e6 else ""
        text = (
            f"worker {w.id} held the loop {seconds * 1000:.0f} ms {state}{where}{given}{collected}"
        )
        self.tell(Lint(LintKind.LOOP_BLOCKED, t, text, w.id, _host(url), url, line))

    def _last_url(self, worker_id: int) -> str:
        # The fetch just finished: its record is the newest of this worker's.
        for record in reversed(self.crawler.ledger.recent):
            if record.worker == worker_id:
                return record.url
        return ""

    def _check_stuck(self) -> None:
        workers = self.crawler.workers.values()
        total: dict[str, float] = {}
        count: dict[str, int] = {}
        for w in workers:
            for state, (seconds, n) in w.timing.state_totals().items():
                total[state] = total.get(state, 0.0) + seconds
                count[state] = count.get(state, 0) + n
        now = time.monotonic()
        for w in workers:
            if w.state not in STUCK_STATES or not w.alive or (w.id, w.since) in self._stuck:
                continue
            n = count.get(w.state, 0)
            usual = total[w.state] / n if n else 0.0
            spent = now - w.since
            if spent >= max(self.stuck_factor * usual, self.stuck_min):
                self._stuck.add((w.id, w.since))
                url = w.url or ""
                usual_text = f"{usual * 1000:.0f} ms usual" if n else "no usual yet"
                text = f"worker {w.id} {w.state.value} for {spent:.1f} s ({usual_text})" + (
                    f" on {printable(url, 200)}" if url else ""
                )
                lint = Lint(LintKind.STUCK, self.crawler.elapsed, text, w.id, _host(url), url)
                self.tell(lint)

    def _check_stall(self) -> None:
        c = self.crawler
        if c.q.accounting() is not None:
            # A shared frontier: other processes hold URLs that this one's workers wait
            # for, and may hold them a long while; a still counter proves nothing here.
            return
        unfinished = c.unfinished
        now = time.monotonic()
        if unfinished != self._unfinished:
            self._unfinished, self._still_since, self._stall_told = unfinished, now, False
            return
        live = [w for w in c.workers.values() if w.alive]
        waiting = bool(live) and all(w.state is WorkerState.WAITING for w in live)
        if not waiting or unfinished <= 0 or c.phase is not Phase.RUNNING:
            self._still_since = now
            return
        if not self._stall_told and now - self._still_since >= self.stall_after:
            self._stall_told = True
            text = (
                f"{unfinished} unfinished for"
                f" {now - self._still_since:.0f} s while all {len(live)} workers wait on"
                f" the queue ({c.q.qsize()} queued)"
            )
            self.tell(Lint(LintKind.JOIN_STALLED, c.elapsed, text))

    def _diagnose(self, snap: Snapshot) -> None:
        """One reading for the verdict: the snapshot's counts, the process's share of a
        core since the last check, and a loop-blocked warning raised since."""
        wall, cpu = time.monotonic(), time.process_time()
        was_wall, was_cpu = self._clocks
        self._clocks = (wall, cpu)
        share = (cpu - was_cpu) / (wall - was_wall) if wall > was_wall else 0.0
        lags = sorted(lag for t, lag in self._lags if t >= was_wall)
        lag = lags[len(lags) // 2] if lags else 0.0
        seconds, rounds = self.crawler.q.store_time()
        was_seconds, was_rounds = self._store
        self._store = (seconds, rounds)
        waited, trips = seconds - was_seconds, rounds - was_rounds
        busy = min(waited / (wall - was_wall), 1.0) if wall > was_wall else 0.0
        store = (busy, waited / trips if trips else 0.0)
        self.diagnosis.feed(reading_of(snap, share, lag, self._blocked, store), snap.hosts)
        self._blocked = ""

    def _check_hosts(self) -> None:
        """The host lints (engine/lints/hosts.py) of the crawl now, each told once while
        it holds: told again only after a check found it gone."""
        c = self.crawler
        if c.phase is not Phase.RUNNING:
            return
        snap = c.snapshot((), rows=False)  # the counts and the host rows; no worker views
        self._diagnose(snap)
        found = host_lints(snap.hosts, idle_workers(snap), snap.live_workers, snap.elapsed)
        now = {(lint.kind, lint.host) for lint in found}
        for lint in found:
            if (lint.kind, lint.host) not in self._host_told:
                self.tell(lint)
        self._host_told = now


def _nearest_rank(ordered: list[float], q: float) -> float:
    return ordered[max(math.ceil(q * len(ordered)) - 1, 0)]


def _line(frame: FrameType | None) -> str:
    if frame is None:
        return ""
    code = frame.f_code
    return f"{code.co_qualname} {os.path.basename(code.co_filename)}:{frame.f_lineno}"


def _host(url: str) -> str:
    try:
        return origin_of(url) if url else ""
    except ValueError:
        return ""
