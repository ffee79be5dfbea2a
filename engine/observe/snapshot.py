"""The crawl at one instant, copied out for an observer.

A snapshot is plain data: numbers, strings, enums and tuples of them. Everything a
screen shows is computed here, when it is sampled, so a snapshot means the same drawn in
this process, written to a file, or sent to a viewer in another (`to_plain` and
`from_plain` turn it into JSON-ready dicts and back, unchanged).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from enum import StrEnum
from typing import Any

from ..lints.lint import Lint, LintKind
from ..timing.per_worker import Hold
from .workers import WorkerState, WorkerView

# Warnings a snapshot carries, the latest; `warning_count` counts them all.
MAX_WARNINGS = 50


class Phase(StrEnum):
    IDLE = "idle"  # crawl() not called yet
    RUNNING = "running"
    PAUSED = "paused"
    STOPPING = "stopping"  # cancelling the workers
    FINISHED = "finished"  # join() returned: nothing left to do
    STOPPED = "stopped"  # stop() ended it early


# Past steering: the crawl is ending or has ended, and its figures only settle.
OVER = frozenset({Phase.STOPPING, Phase.FINISHED, Phase.STOPPED})


@dataclass(frozen=True, slots=True)
class Accounting:
    """Where every seen URL is. The parts always add up to `seen`."""

    seen: int
    done: int
    failed: int
    filtered: int
    queued: int
    held: int
    unfetched: int

    @property
    def balanced(self) -> bool:
        parts = self.done + self.failed + self.filtered + self.queued + self.held + self.unfetched
        return parts == self.seen

    def line(self) -> str:
        verdict = "all accounted for" if self.balanced else "MISMATCH"
        return (
            f"Accounting: {self.seen} seen = {self.done} done + {self.failed} failed"
            f" + {self.filtered} filtered + {self.queued} queued + {self.held} held"
            f" + {self.unfetched} unfetched ({verdict})"
        )


# Latency buckets of a host: bucket k holds answers that took [2**(k-1), 2**k) ms (bucket
# 0: under 1 ms; the last also holds everything slower), so a histogram is a fixed
# handful of counters, merged across processes by adding them.
LATENCY_BUCKETS = 20
# Depths the crawl-shape histogram tells apart; deeper pages count in the last.
DEPTHS = 32
# Host rows a snapshot carries at most (the busiest, and every blocked one first): a
# crawl of 100,000 hosts must not make every frame that long.
HOST_ROWS = 200


def bucket_bounds(k: int) -> tuple[float, float]:
    """Seconds at the bottom and the top of latency bucket `k`."""
    return (0.0 if k == 0 else 2 ** (k - 1) / 1000), 2**k / 1000


def latency_quantile(buckets: tuple[int, ...], q: float) -> float:
    """The top of the bucket the `q` quantile falls in, in seconds (0.0: no answers)."""
    total = sum(buckets)
    if not total:
        return 0.0
    rank = max(1, math.ceil(q * total))
    seen = 0
    for k, count in enumerate(buckets):
        seen += count
        if seen >= rank:
            return bucket_bounds(k)[1]
    return bucket_bounds(len(buckets) - 1)[1]


class RobotsState(StrEnum):
    UNKNOWN = "not yet fetched"
    FETCHING = "fetching"
    ALLOWED = "allowed"  # a file was parsed: its rules apply
    REFUSED = "refused"  # 5xx or unreachable: everything disallowed (RFC 9309)
    MISSING = "missing"  # 4xx: no rules, everything allowed
    IGNORED = "ignored"  # --no-robots


@dataclass(frozen=True, slots=True)
class HostView:
    """One host (origin) of the crawl: its URLs, its answers' times and its politeness."""

    origin: str
    queued: int  # on the queue, or parked because the host is blocked
    in_flight: int  # requests under way
    done: int
    failed: int
    tries: int  # requests made (a retry counts again)
    errors: int  # of those, the ones that got no answer
    streak: int  # requests in a row that got no answer, up to now
    latency: tuple[int, ...]  # LATENCY_BUCKETS counts
    next_fetch: float  # crawl clock seconds before which it is not asked again (0: any time)
    crawl_delay: float  # robots.txt's, as obeyed (capped)
    delay: float  # ours between request starts (--delay, or set on the host)
    limit: int  # requests in flight at most (0: no limit)
    robots: RobotsState
    blocked: bool
    waiting: int  # workers holding its URLs, waiting for its limit or its delay

    @property
    def p50(self) -> float:
        return latency_quantile(self.latency, 0.5)

    @property
    def p99(self) -> float:
        return latency_quantile(self.latency, 0.99)

    @property
    def error_rate(self) -> float:
        return self.errors / self.tries if self.tries else 0.0

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> HostView:
        return cls(
            **{**data, "latency": tuple(data["latency"]), "robots": RobotsState(data["robots"])}
        )


def host_rows_problem(hosts: tuple[HostView, ...]) -> str | None:
    """What is wrong with host rows from another process or a file, past their types (no
    more rows than a crawl sends, histograms of the one shape, no figure below zero);
    None if nothing."""
    if len(hosts) > HOST_ROWS:
        return f"more than {HOST_ROWS} host rows"
    for i, host in enumerate(hosts):
        if len(host.latency) != LATENCY_BUCKETS:
            return f"hosts[{i}].latency is not {LATENCY_BUCKETS} counts"
        counts = (host.queued, host.in_flight, host.done, host.failed, host.tries, host.errors,
                  host.streak, host.limit, host.waiting, *host.latency)  # fmt: skip
        if min(counts) < 0 or min(host.next_fetch, host.crawl_delay, host.delay) < 0:
            return f"hosts[{i}] has a negative figure"
    return None


def depths_problem(depths: tuple[int, ...]) -> str | None:
    """What is wrong with a depth histogram from elsewhere; None if nothing."""
    if len(depths) > DEPTHS:
        return f"more than {DEPTHS} depths"
    if depths and min(depths) < 0:
        return "a negative count of pages at a depth"
    return None


@dataclass(frozen=True, slots=True)
class Snapshot:
    t: float  # monotonic time it was taken
    elapsed: float
    phase: Phase
    workers: tuple[WorkerView, ...]
    live_workers: int
    accounting: Accounting
    unfinished: int  # the queue's unfinished-task counter that join() waits on
    redirect_version: int  # moves whenever a redirect hop is recorded
    paused_all: bool = False  # the whole crawl was asked to pause
    slowmo: float = 0.0  # seconds lingered at each state change
    crawl_delay: str = ""  # the robots.txt Crawl-delay slowing the crawl most, in words
    # Loop health over the last minute (engine/timing/loop_health.py): how late a probe timer
    # ran, median and 99th percentile, in seconds; the steps that held the loop longest.
    loop_lag_p50: float = 0.0
    loop_lag_p99: float = 0.0
    # What limits the crawl now, in one line (engine/observe/verdict.py; "": not yet said).
    verdict: str = ""
    holds: tuple[Hold, ...] = ()
    # The latest warnings (lints), oldest first, at most MAX_WARNINGS; and how many so far.
    warnings: tuple[Lint, ...] = ()
    warning_count: int = 0
    # A source that builds only the rows a screen asked for (a view per worker per frame
    # was 80% of a frame at 10,000 workers) says so here: every worker's id in row order,
    # with `workers` the asked rows alone; and the live workers by state, and those asked
    # to stop, as it counted them when they changed. None: `workers` is every worker, and
    # the counts come from it.
    worker_ids: tuple[int, ...] | None = None
    states: StateCounts | None = None
    retiring: int = 0

    def state_counts(self) -> StateCounts:
        """The live workers by state, in the engine's order of states."""
        if self.states is not None:
            return self.states
        return count_states(w.state for w in self.workers if w.alive)

    def row_ids(self) -> tuple[int, ...]:
        """Every worker's id, in row order."""
        if self.worker_ids is not None:
            return self.worker_ids
        return tuple(w.id for w in self.workers)

    def removable(self) -> int:
        """Live workers not yet asked to stop: what "remove a worker" can take."""
        if self.worker_ids is not None:
            return self.live_workers - self.retiring
        return sum(1 for w in self.workers if w.alive and not w.retiring)

    hosts: tuple[HostView, ...] = ()  # the busiest HOST_ROWS hosts, blocked ones first
    host_count: int = 0  # every host the crawl has met
    depths: tuple[int, ...] = ()  # pages finished (done or failed) at each depth

    def to_plain(self) -> dict[str, Any]:
        """Dicts, lists, strings and numbers only: what json.dumps takes as it is."""
        return asdict(self)

    @classmethod
    def from_plain(cls, data: Mapping[str, Any]) -> Snapshot:
        """The inverse of to_plain; raises KeyError, TypeError or ValueError on data
        that is not a snapshot."""
        workers = tuple(
            WorkerView(**{**view, "state": WorkerState(view["state"])}) for view in data["workers"]
        )
        return cls(
            t=float(data["t"]),
            elapsed=float(data["elapsed"]),
            phase=Phase(data["phase"]),
            workers=workers,
            live_workers=int(data["live_workers"]),
            accounting=Accounting(**data["accounting"]),
            unfinished=int(data["unfinished"]),
            redirect_version=int(data["redirect_version"]),
            paused_all=bool(data["paused_all"]),
            slowmo=float(data["slowmo"]),
            crawl_delay=str(data["crawl_delay"]),
            loop_lag_p50=float(data["loop_lag_p50"]),
            loop_lag_p99=float(data["loop_lag_p99"]),
            holds=tuple(Hold(**hold) for hold in data["holds"]),
            warnings=tuple(Lint(**{**w, "kind": LintKind(w["kind"])}) for w in data["warnings"]),
            warning_count=int(data["warning_count"]),
            worker_ids=_ids(data.get("worker_ids")),
            states=_states(data.get("states")),
            retiring=int(data.get("retiring", 0)),
            # A recording made before hosts were carried has none.
            hosts=tuple(HostView.from_plain(row) for row in data.get("hosts", ())),
            host_count=int(data.get("host_count", 0)),
            depths=tuple(int(n) for n in data.get("depths", ())),
        )


# The live workers by state: (state, count) for each state with any, in WorkerState's
# order, so that a line drawn from it does not reorder itself as the counts move.
StateCounts = tuple[tuple[WorkerState, int], ...]


def count_states(states: Iterable[WorkerState]) -> StateCounts:
    counts = Counter(states)
    return tuple((state, counts[state]) for state in WorkerState if counts[state])


def _ids(data: object) -> tuple[int, ...] | None:
    if data is None:
        return None
    if not isinstance(data, list | tuple):
        raise TypeError("worker_ids is not a list")
    return tuple(int(i) for i in data)


def _states(data: object) -> StateCounts | None:
    if data is None:
        return None
    if not isinstance(data, list | tuple):
        raise TypeError("states is not a list")
    return tuple((WorkerState(state), int(count)) for state, count in data)
