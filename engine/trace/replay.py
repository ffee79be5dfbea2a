"""Play a recorded crawl back: the same observed crawl as the live Crawler, at any time.

`ReplayedCrawl.seek(t)` puts the books and the workers where they were `t` seconds into
the recorded crawl; `snapshot()`, `recent_fetches()` and `chains()` (the ObservedCrawl
protocol of engine/observe/contract.py) then answer as the live crawler answered at that moment.
Seeking back replays from the nearest checkpoint, so scrubbing stays cheap on long
recordings.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..exchange.config_json import config_from_plain
from ..exchange.plain import decode
from ..exchange.user_files import FileRefused, read_capped, shown_path
from ..lints.lint import Lint
from ..observe.snapshot import MAX_WARNINGS, Accounting, HostView, Phase, Snapshot
from ..observe.workers import WorkerState, WorkerView
from ..records import FetchRecord
from ..redirects import Chain, ChainEnd, RedirectLog
from ..timing.per_worker import Hold, Summary
from .validation import BadEvent, check_event, check_start, depths_of, host_rows, parse_line

CHECKPOINT_EVERY = 2000  # events between saved states
RECENT_KEPT = 256  # the latest fetch records a state keeps ("recent fetches")
# A crawl's recording is some 2.8 kB a page (7 lines of 400 bytes), and loaded takes 8
# times its size: 256 MiB is a crawl of some 90,000 pages, and 2 GB to play it.
MAX_BYTES = 256 * 1024 * 1024
_NO_TIMING = Summary()


class ReplayError(ValueError):
    """A file that is not a crawlscope recording; the message is for the user."""


@dataclass(slots=True)
class ReplayWorker:
    id: int
    state: WorkerState = WorkerState.WAITING
    url: str | None = None
    since: float = 0.0  # recording time it entered `state`
    pages: int = 0
    paused: bool = False
    retiring: bool = False
    timing: Summary = _NO_TIMING  # as of its last state change

    @property
    def alive(self) -> bool:
        return self.state not in (WorkerState.CANCELLED, WorkerState.STOPPED)


@dataclass(slots=True)
class CrawlState:
    """Everything that changes with time, as the events so far left it: copied whole at
    each checkpoint, and kept by the flight recorder for the events it let go
    (engine/trace/flight.py)."""

    index: int = 0  # events applied
    workers: dict[int, ReplayWorker] = field(default_factory=dict)
    counts: dict[str, Any] = field(default_factory=dict)
    done: dict[str, FetchRecord] = field(default_factory=dict)
    failed: dict[str, FetchRecord] = field(default_factory=dict)
    hops: list[tuple[str, str, bool]] = field(default_factory=list)
    ends: dict[str, ChainEnd] = field(default_factory=dict)  # redirect targets never fetched
    recent: deque[FetchRecord] = field(default_factory=lambda: deque(maxlen=RECENT_KEPT))
    ended_at: float | None = None  # when the phase became finished or stopped
    warnings: deque[Lint] = field(default_factory=lambda: deque(maxlen=MAX_WARNINGS))
    warning_count: int = 0
    lag: tuple[float, float] = (0.0, 0.0)  # loop lag p50, p99 at the last health event
    holds: tuple[Hold, ...] = ()
    verdict: str = ""  # the last health event's (engine/observe/verdict.py)
    # The live workers by state and those asked to stop, kept as events apply: a frame
    # reads them rather than count every worker (a snapshot builds the rows shown only).
    states: dict[WorkerState, int] = field(default_factory=lambda: dict.fromkeys(WorkerState, 0))
    retiring: int = 0

    def count(self, w: ReplayWorker, sign: int) -> None:
        if w.alive:
            self.states[w.state] += sign
            self.retiring += sign * w.retiring

    hosts: tuple[HostView, ...] = ()  # the last "hosts" line's rows, and its count
    host_count: int = 0
    depths: tuple[int, ...] = ()

    def copy(self) -> CrawlState:
        return CrawlState(
            self.index,
            {k: ReplayWorker(w.id, w.state, w.url, w.since, w.pages, w.paused, w.retiring,
                             w.timing)
             for k, w in self.workers.items()},
            dict(self.counts),
            dict(self.done),
            dict(self.failed),
            list(self.hops),
            dict(self.ends),
            deque(self.recent, maxlen=self.recent.maxlen),
            self.ended_at,
            deque(self.warnings, maxlen=self.warnings.maxlen),
            self.warning_count,
            self.lag,
            self.holds,
            self.verdict,
            dict(self.states),
            self.retiring,
            self.hosts,  # a tuple of frozen rows: shared, never changed
            self.host_count,
            self.depths,
        )  # fmt: skip


def load_events(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The start line and the timed events of a recording, each checked (validation.py):
    ReplayError names the first bad line and what is wrong with it, or why the file is
    not read at all (no regular file, over MAX_BYTES)."""
    try:
        data = read_capped(path, MAX_BYTES, "a crawl recording")
    except FileRefused as exc:
        raise ReplayError(str(exc)) from None
    return events_from_bytes(path, data)


def events_from_bytes(path: str | Path, data: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """What load_events gives, from the bytes of the file at `path` (read, capped)."""
    path = shown_path(path)  # as the messages name it: escaped, one line
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ReplayError(f"{path} is not a crawlscope recording (not UTF-8 text)") from None
    # Split at newlines only: str.splitlines() would also cut at characters a JSON string
    # may hold raw (U+2028, form feed...).
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines:
        raise ReplayError(f"{path} is not a crawlscope recording (no start line)")
    try:
        start = parse_line(lines[0])
        if not isinstance(start, dict) or "kind" not in start:
            raise BadEvent("not a crawlscope event")
        if start["kind"] != "start":
            raise ReplayError(f"{path} is not a crawlscope recording (no start line)")
        check_start(start)
    except BadEvent as exc:
        raise ReplayError(f"{path}:1: {exc}") from None
    events: list[dict[str, Any]] = []
    t = 0.0
    for number, line in enumerate(lines[1:], 2):
        try:
            event = parse_line(line)
            t = check_event(event, t)
        except BadEvent as exc:
            raise ReplayError(f"{path}:{number}: {exc}") from None
        events.append(event)
    return start, events


class ReplayedCrawl:
    def __init__(
        self,
        start: dict[str, Any],
        events: Sequence[dict[str, Any]],
        base: CrawlState | None = None,
        times: Sequence[float] | None = None,
    ) -> None:
        """`base`: the state before the first of `events` (the flight recorder's, whose
        older events are gone); a fresh crawl's when None. `times`: each event's, when
        known without reading the events (kept_past.py)."""
        try:
            self.config = config_from_plain(start.get("config"))
            self._times = times if times is not None else [float(e["t"]) for e in events]
        except (KeyError, TypeError, ValueError) as exc:  # BadMessage is a ValueError
            raise ReplayError(f"a recording with a broken line: {exc}") from None
        self.events = events
        self.started_at: float = float(start.get("wall", 0.0))
        self.duration = self._times[-1] if self._times else 0.0
        # Where the events begin: 0 for a whole recording, later for a flight's window.
        self.first = self._times[0] if base is not None and self._times else 0.0
        self.position = self.first
        self._state = base.copy() if base is not None else CrawlState()
        self._state.index = 0
        self._checkpoints: list[CrawlState] = [self._state.copy()]
        self._log = RedirectLog()  # the first `_log_hops` hops of the recording, as chains
        self._log_hops = 0
        self._ids: tuple[int, ...] = ()  # every worker's id, sorted, for the workers below
        self._ids_of: dict[int, ReplayWorker] | None = None

    @classmethod
    def load(cls, path: str | Path) -> ReplayedCrawl:
        start, events = load_events(path)
        return cls(start, events)

    # ---- moving in time ----------------------------------------------------------------

    def extend(self, events: list[dict[str, Any]]) -> None:
        """More events after the last (a crawl going on while it is looked back at)."""
        if not isinstance(self.events, list):
            raise TypeError("only a list of events is extended by events")
        times = self._times
        if not isinstance(times, list):
            raise TypeError("only a list of events is extended by events")
        for event in events:
            times.append(float(event["t"]))
            self.events.append(event)
        if self._times:
            self.duration = self._times[-1]

    def seek(self, t: float) -> None:
        t = min(max(t, self.first), self.duration)
        self._apply_until(bisect.bisect_right(self._times, t))  # events with time <= t
        self.position = t

    @property
    def index(self) -> int:
        """How many events have been applied: the position in whole events."""
        return self._state.index

    def goto(self, index: int) -> None:
        """Put the crawl just after its `index`-th event (0: before the first), and the
        clock at that event's time. Steps one event at a time even where several events
        share a timestamp, which seek() cannot tell apart."""
        index = min(max(index, 0), len(self.events))
        self._apply_until(index)
        self.position = self._times[index - 1] if index else self.first

    def _apply_until(self, target: int) -> None:
        nearest = min(target // CHECKPOINT_EVERY, len(self._checkpoints) - 1)
        if target < self._state.index or nearest > self._state.index // CHECKPOINT_EVERY:
            # Back in time, or forward past a saved state: restart from the last checkpoint
            # at or before the target rather than apply every event in between.
            self._state = self._checkpoints[nearest].copy()
        while self._state.index < target:
            apply_event(self._state, self.events[self._state.index])
            self._state.index += 1
            if (
                self._state.index % CHECKPOINT_EVERY == 0
                and self._state.index // CHECKPOINT_EVERY == len(self._checkpoints)
            ):
                self._checkpoints.append(self._state.copy())

    def event_times(self) -> Sequence[float]:
        return self._times

    # ---- what an observer reads, as a live Crawler answers it --------------------------

    @property
    def state(self) -> CrawlState:
        """The books at the position (a saved flight's prelude is made from it)."""
        return self._state

    @property
    def workers(self) -> dict[int, ReplayWorker]:
        return self._state.workers

    @property
    def done(self) -> dict[str, FetchRecord]:
        return self._state.done

    @property
    def failed(self) -> dict[str, FetchRecord]:
        return self._state.failed

    @property
    def recent(self) -> deque[FetchRecord]:
        return self._state.recent

    @property
    def phase(self) -> Phase:
        return Phase(self._state.counts.get("phase", Phase.IDLE.value))

    @property
    def elapsed(self) -> float:
        """The crawl's clock, which stops when it ends, as the live crawler's does."""
        ended_at = self._state.ended_at
        return self.position if ended_at is None else min(self.position, ended_at)

    @property
    def unfinished(self) -> int:
        return int(self._state.counts.get("unfinished", 0))

    def accounting(self) -> Accounting:
        c = self._state.counts
        return Accounting(*(int(c.get(k, 0)) for k in _ACCOUNTING))

    def recent_fetches(self) -> Sequence[FetchRecord]:
        return self._state.recent

    def snapshot(self, where_for: Container[int] | None = None, rows: bool = True) -> Snapshot:
        # A recording holds no tasks to walk: "suspended at" stays empty. Views are built
        # for the rows asked for only (`where_for`; None: every worker).
        s = self._state
        shown: Iterable[ReplayWorker] = ()
        if not rows:
            pass
        elif where_for is None:
            shown = s.workers.values()
        elif isinstance(where_for, Iterable):
            shown = (s.workers[i] for i in sorted(where_for) if i in s.workers)
        else:
            asked = where_for
            shown = (w for w in s.workers.values() if w.id in asked)
        views = tuple(
            WorkerView(
                w.id, w.state, w.url, w.since, w.pages, w.paused, w.retiring, w.alive, "", "",
                *w.timing,
            )
            for w in shown
        )  # fmt: skip
        return Snapshot(
            t=self.position,
            elapsed=self.elapsed,
            phase=self.phase,
            workers=views,
            live_workers=sum(s.states.values()),
            accounting=self.accounting(),
            unfinished=self.unfinished,
            redirect_version=len(self._state.hops),
            paused_all=self.phase is Phase.PAUSED,
            loop_lag_p50=self._state.lag[0],
            loop_lag_p99=self._state.lag[1],
            verdict=self._state.verdict,
            holds=self._state.holds,
            warnings=tuple(self._state.warnings),
            warning_count=self._state.warning_count,
            worker_ids=None if where_for is None and rows else self._row_ids(),
            states=tuple((state, n) for state, n in s.states.items() if n),
            retiring=s.retiring,
            hosts=self._state.hosts,
            host_count=self._state.host_count,
            depths=self._state.depths,
        )

    def _row_ids(self) -> tuple[int, ...]:
        # The same tuple while the workers are (the same dict, no worker added): a screen
        # compares it with its rows by identity first.
        workers = self._state.workers
        if self._ids_of is not workers or len(self._ids) != len(workers):
            self._ids_of, self._ids = workers, tuple(sorted(workers))
        return self._ids

    def chains(self) -> list[Chain]:
        return self._redirects().chains(self._outcome)

    def chain_preview(self, limit: int, hops: int) -> tuple[list[Chain], int]:
        return self._redirects().preview(self._outcome, limit, hops)

    def _redirects(self) -> RedirectLog:
        """The log of the hops so far: added to as time moves on, made again only after a
        seek back (the hops at any moment are the first so many of the recording's)."""
        hops = self._state.hops
        if self._log_hops > len(hops):
            self._log, self._log_hops = RedirectLog(), 0
        for source, target, budget_left in hops[self._log_hops :]:
            self._log.add(source, target, budget_left=budget_left)
        self._log_hops = len(hops)
        return self._log

    def _outcome(self, url: str) -> tuple[ChainEnd, int | None]:
        if url in self._state.done:
            return ChainEnd.FETCHED, self._state.done[url].status
        if url in self._state.failed:
            return ChainEnd.FAILED, None
        return self._state.ends.get(url, ChainEnd.PENDING), None


def apply_event(s: CrawlState, event: dict[str, Any]) -> None:
    """Move `s` on by one checked event (validation.py)."""
    kind = event["kind"]
    if kind == "state":
        w = s.workers.get(event["worker"])
        if w is None:
            w = s.workers[event["worker"]] = ReplayWorker(event["worker"])
        else:
            s.count(w, -1)
        w.state = WorkerState(event["state"])
        w.url = event.get("url")
        w.since = float(event["t"])
        w.pages = int(event.get("pages", w.pages))
        w.paused = bool(event.get("paused", False))
        w.retiring = bool(event.get("retiring", False))
        if "timing" in event:
            w.timing = Summary(*(float(x) for x in event["timing"]))
        s.count(w, 1)
    elif kind == "hosts":
        s.hosts, s.host_count = host_rows(event), int(event["count"])
        s.depths = depths_of(event)
    elif kind == "fetch":
        record = FetchRecord(**event["record"])
        (s.failed if record.failed else s.done)[record.url] = record
        s.recent.append(record)
        if record.next_url is not None:
            s.hops.append((record.url, record.next_url, bool(event.get("budget_left", True))))
            if "target" in event:
                s.ends[record.next_url] = ChainEnd(event["target"])
    elif kind == "lint":
        s.warnings.append(decode(Lint, event["lint"], "lint"))
        s.warning_count += 1
    elif kind == "health":
        s.lag = (float(event["lag_p50"]), float(event["lag_p99"]))
        s.holds = decode(tuple[Hold, ...], event["holds"], "holds")
        s.verdict = str(event.get("verdict", ""))
    s.counts = {k: event[k] for k in _COUNTS if k in event} or s.counts
    if s.ended_at is None and s.counts.get("phase") in _ENDED:
        s.ended_at = float(event["t"])


_ENDED = (Phase.FINISHED.value, Phase.STOPPED.value)
_ACCOUNTING = ("seen", "done", "failed", "filtered", "queued", "held", "unfetched")
_COUNTS = ("phase", "unfinished", *_ACCOUNTING)
