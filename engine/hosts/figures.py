"""Per-host figures, kept as the crawl goes: the frontier report of Heritrix, one row a host.

Counters move where the crawler already does the work (a URL queued or taken, a request
answered or not, a record kept); a snapshot turns them into `HostView` rows only when it
is taken, and only for the busiest hosts. A latency is one of LATENCY_BUCKETS counters,
never a list of times, so a host costs the same after a million requests as after one.

A blocked host's URLs are parked here as the workers take them from the queue: the lease
is kept (join() keeps waiting for it), the URL counts as queued, and unblocking puts it
back on the queue. Nothing is lost and no worker waits on a host nobody may fetch.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import replace

from ..frontier import Lease
from ..observe.snapshot import DEPTHS, HOST_ROWS, LATENCY_BUCKETS, HostView, RobotsState
from ..politeness import HostGate, RobotsCache
from ..urls import origin_of


class HostFigures:
    """One host's counters."""

    __slots__ = ("done", "errors", "failed", "latency", "parked", "queued", "streak", "tries")

    def __init__(self) -> None:
        self.queued = 0  # URLs on the queue or parked (blocked), by this process's count
        self.done = 0
        self.failed = 0
        self.tries = 0
        self.errors = 0
        self.streak = 0
        self.latency = [0] * LATENCY_BUCKETS
        self.parked: list[Lease] | None = None  # a list while the host is blocked


def latency_bucket(seconds: float) -> int:
    """The bucket of an answer that took `seconds`: [2**(k-1), 2**k) ms is bucket k."""
    return min(int(seconds * 1000).bit_length(), LATENCY_BUCKETS - 1)


class HostBook:
    """Every host the crawl has met, and the blocked ones' parked URLs."""

    def __init__(self) -> None:
        self.hosts: dict[str, HostFigures] = {}
        self.parked = 0  # URLs parked, over every blocked host
        self.depths = [0] * DEPTHS  # pages finished at each depth: the crawl's shape

    def origin(self, url: str) -> str:
        try:
            return origin_of(url)  # kept per host by urls.py
        except ValueError:
            # Not a URL a host can be told from (a state file's row against the rules,
            # say): the crawler refuses it in its own time; no row here.
            return ""

    @property
    def count(self) -> int:
        """Hosts met, not counting the figures kept for URLs with no host ("")."""
        return len(self.hosts) - ("" in self.hosts)

    def _host(self, origin: str) -> HostFigures:
        host = self.hosts.get(origin)
        if host is None:
            host = self.hosts[origin] = HostFigures()
        return host

    # ---- what the crawler tells it ---------------------------------------------------

    def queued(self, url: str) -> None:
        self._host(self.origin(url)).queued += 1

    def take(self, lease: Lease) -> bool:
        """A worker took `lease` from the queue: False to fetch it, True if its host is
        blocked and the lease is parked here (the worker goes back to the queue)."""
        host = self._host(self.origin(lease.url))
        if host.parked is not None:
            host.parked.append(lease)
            self.parked += 1
            return True
        host.queued -= 1
        return False

    def answered(self, origin: str, seconds: float) -> None:
        host = self._host(origin)
        host.tries += 1
        host.streak = 0
        host.latency[latency_bucket(seconds)] += 1

    def no_answer(self, origin: str) -> None:
        host = self._host(origin)
        host.tries += 1
        host.errors += 1
        host.streak += 1

    def finished(self, url: str, failed: bool, depth: int = 0) -> None:
        self.depths[min(max(depth, 0), DEPTHS - 1)] += 1
        host = self._host(self.origin(url))
        if failed:
            host.failed += 1
        else:
            host.done += 1

    # ---- blocking --------------------------------------------------------------------

    def block(self, origin: str) -> bool:
        """Park `origin`'s URLs from now on; False if it was blocked already."""
        host = self._host(origin)
        if host.parked is not None:
            return False
        host.parked = []
        return True

    def unblock(self, origin: str) -> list[Lease]:
        """The leases parked for `origin`, for the crawler to put back on the queue."""
        host = self.hosts.get(origin)
        if host is None or host.parked is None:
            return []
        leases, host.parked = host.parked, None
        self.parked -= len(leases)
        return leases

    def unpark_all(self) -> list[Lease]:
        """At the crawl's end every parked lease goes back (a state file keeps them), and
        the hosts stay blocked."""
        leases: list[Lease] = []
        for host in self.hosts.values():
            if host.parked:
                leases.extend(host.parked)
                host.parked = []
        self.parked = 0
        return leases

    def blocked(self, origin: str) -> bool:
        host = self.hosts.get(origin)
        return host is not None and host.parked is not None

    # ---- what a snapshot reads -------------------------------------------------------

    def rows(
        self, gate: HostGate, robots: RobotsCache | None, t0: float | None, limit: int = HOST_ROWS
    ) -> tuple[HostView, ...]:
        """The busiest `limit` hosts as rows, blocked ones first, then by URLs waiting or
        under way, then by URLs finished. `robots` None: robots.txt is not obeyed."""
        in_flight = gate.in_flight
        waiting = gate.waiting

        def weight(item: tuple[str, HostFigures]) -> tuple[bool, int, int]:
            origin, host = item
            busy = host.queued + in_flight.get(origin, 0) + waiting.get(origin, 0)
            return host.parked is not None, busy, host.done + host.failed

        named = [(origin, host) for origin, host in self.hosts.items() if origin]
        busiest: Iterable[tuple[str, HostFigures]] = (
            sorted(named, key=weight, reverse=True)
            if len(named) <= limit
            else heapq.nlargest(limit, named, key=weight)
        )
        return tuple(self._row(origin, host, gate, robots, t0) for origin, host in busiest)

    @staticmethod
    def _row(
        origin: str, host: HostFigures, gate: HostGate, robots: RobotsCache | None, t0: float | None
    ) -> HostView:
        next_start = gate.next_start(origin)
        # On the crawl's clock, as Snapshot.elapsed is, so a replay shows the same.
        next_fetch = max(0.0, next_start - t0) if next_start and t0 is not None else 0.0
        return HostView(
            origin=origin,
            # In a cluster another process may take what this one queued: its count
            # can go below zero, and the cluster's own queue says more (cluster/observe).
            queued=max(0, host.queued),
            in_flight=gate.in_flight.get(origin, 0),
            done=host.done,
            failed=host.failed,
            tries=host.tries,
            errors=host.errors,
            streak=host.streak,
            latency=tuple(host.latency),
            next_fetch=next_fetch,
            crawl_delay=0.0 if robots is None else robots.crawl_delay(origin),
            delay=gate.delay_of(origin),
            limit=gate.limit_of(origin),
            robots=RobotsState.IGNORED if robots is None else robots.state(origin),
            blocked=host.parked is not None,
            waiting=gate.waiting.get(origin, 0),
        )


# Hosts the report lists at most, busiest first; the rest are counted.
REPORT_HOSTS = 1000


def _weight(h: HostView) -> tuple[bool, int, int]:
    """HostBook.rows's order, of a row: blocked first, then busy, then finished."""
    return h.blocked, h.queued + h.in_flight + h.waiting, h.done + h.failed


def host_rows_of(crawl: object, limit: int = REPORT_HOSTS) -> tuple[tuple[HostView, ...], int]:
    """The busiest `limit` hosts of a crawl whose engine keeps them (the asyncio engine's
    Crawler does; the lecture engines do not), and how many hosts it met. A crawl over
    processes gives its processes' rows added up (`host_views`), ordered here alike."""
    gathered = getattr(crawl, "host_views", None)
    if isinstance(gathered, tuple):
        busiest = sorted(gathered, key=_weight, reverse=True)[:limit]
        return tuple(busiest), max(getattr(crawl, "host_count", 0), len(gathered))
    book, gate = getattr(crawl, "host_book", None), getattr(crawl, "hosts", None)
    if not isinstance(book, HostBook) or not isinstance(gate, HostGate):
        return (), 0
    robots = getattr(crawl, "robots", None)
    config = getattr(crawl, "config", None)
    obeyed = isinstance(robots, RobotsCache) and getattr(config, "obey_robots", True)
    t0 = getattr(crawl, "t0", None)
    rows = book.rows(gate, robots if obeyed else None, t0 if isinstance(t0, float) else None, limit)
    return rows, book.count


# Which robots.txt state a merged row shows when processes differ: what one of them
# learnt beats what another has not yet, and a refusal beats all.
_ROBOTS_RANK = {
    RobotsState.IGNORED: 0, RobotsState.UNKNOWN: 1, RobotsState.FETCHING: 2,
    RobotsState.MISSING: 3, RobotsState.ALLOWED: 4, RobotsState.REFUSED: 5,
}  # fmt: skip


def depth_histogram(depths: list[int]) -> tuple[int, ...]:
    """The depths up to the deepest reached: a snapshot's `depths`."""
    deepest = max((d for d, n in enumerate(depths) if n), default=-1)
    return tuple(depths[: deepest + 1])


def merge_depths(groups: Iterable[tuple[int, ...]]) -> tuple[int, ...]:
    total = [0] * DEPTHS
    for depths in groups:
        for d, n in enumerate(depths[:DEPTHS]):
            total[d] += n
    return depth_histogram(total)


def merge_host_rows(
    groups: Iterable[tuple[HostView, ...]],
    queued: Mapping[str, int] | None = None,
    limit: int = HOST_ROWS,
) -> tuple[HostView, ...]:
    """One row per host over several processes' rows: counts and latency buckets added
    (so p50 and p99 are the whole cluster's), the latest next fetch, the largest delays
    and limit, blocked if any process has it blocked. `queued`, when the queue is shared
    (Redis), is each host's queue as the queue counts it: a process's own count is only
    what it queued less what it took."""
    merged: dict[str, HostView] = {}
    for rows in groups:
        for row in rows:
            old = merged.get(row.origin)
            merged[row.origin] = row if old is None else _add(old, row)
    if queued is not None:
        merged = {
            origin: replace(row, queued=queued.get(origin, 0)) for origin, row in merged.items()
        }

    def weight(row: HostView) -> tuple[bool, int, int]:
        return row.blocked, row.queued + row.in_flight + row.waiting, row.done + row.failed

    return tuple(heapq.nlargest(limit, merged.values(), key=weight))


def _add(a: HostView, b: HostView) -> HostView:
    return HostView(
        origin=a.origin,
        queued=a.queued + b.queued,
        in_flight=a.in_flight + b.in_flight,
        done=a.done + b.done,
        failed=a.failed + b.failed,
        tries=a.tries + b.tries,
        errors=a.errors + b.errors,
        streak=max(a.streak, b.streak),
        latency=tuple(x + y for x, y in zip(a.latency, b.latency, strict=True)),
        next_fetch=max(a.next_fetch, b.next_fetch),
        crawl_delay=max(a.crawl_delay, b.crawl_delay),
        delay=max(a.delay, b.delay),
        limit=max(a.limit, b.limit),
        robots=max(a.robots, b.robots, key=_ROBOTS_RANK.__getitem__),
        blocked=a.blocked or b.blocked,
        waiting=a.waiting + b.waiting,
    )
