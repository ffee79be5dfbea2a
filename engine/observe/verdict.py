"""What limits the crawl right now, in one line, with its evidence and the one thing that
would help: the crawl's own figures read once a second (engine/timing/loop_health.py
feeds them), weighed over the last WINDOW seconds, and said only once a new cause has led
for HOLD seconds, so that the line does not flicker with every second's noise.

The causes, each a share from 0 to 1 of what the workers (or the loop) are doing:
- the server: workers connecting or awaiting headers and bodies, with the loop free;
- politeness: workers holding a URL while its host's limit, delay or Crawl-delay holds
  them back (THROTTLED);
- the frontier: workers idle on `q.get()` with nothing queued;
- the CPU: the crawl's process using a whole core (the loop has no time to spare: its
  steps queue up behind each other);
- a blocked loop: a step that held the loop past the warning's threshold, named;
- the frontier's store (a cluster's Redis): workers idle on `q.get()` while URLs are
  queued, and the process's pump awaiting round trips most of the time. Idle workers with
  URLs queued and the pump at rest are the cluster's per-host limits, not Redis.

A pure function of the readings: the live crawl, a replay (its recording keeps each
second's line) and every viewer show the same line at the same moment.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .snapshot import HostView, Snapshot
from .text import printable
from .workers import WorkerState

WINDOW = 3.0  # seconds of readings weighed together
HOLD = 3.0  # seconds a new cause must lead before the line says it
LEADS = 0.5  # the share a cause needs to be the verdict alone
AHEAD = 0.25  # ... and by how much it must lead the next
MIXED = 0.3  # two causes at least this strong, neither far ahead: "mixed"
BUSY_CORE = 0.9  # the share of a core from which the CPU limits the crawl
# The loop's lag (how late a timer runs) from which it has no time to spare: a share of a
# core undercounts a process on a machine whose other tenants take CPU from it.
BUSY_LAG = (0.005, 0.025)  # seconds: from nothing to all of the CPU score
NETWORK = frozenset({WorkerState.ROBOTS, WorkerState.CONNECTING, WorkerState.HEADERS,
                     WorkerState.BODY})  # fmt: skip
NAMES = {
    "server": "server-bound",
    "politeness": "politeness-bound",
    "frontier": "frontier-starved",
    "cpu": "CPU-bound",
    "blocked": "loop blocked",
    "store": "Redis-bound",
}


@dataclass(frozen=True, slots=True)
class Reading:
    """One second of the crawl, as the verdict weighs it."""

    t: float  # the crawl's clock
    live: int  # workers that can work: alive, not paused
    idle: int  # waiting on q.get()
    queued: int
    gated: int  # holding a URL, held back by its host
    network: int  # connecting, awaiting headers or a body, fetching robots.txt
    cpu: float  # the share of a core the process used since the reading before
    lag: float  # the loop's median lag since the reading before, in seconds
    blocked: str  # a loop-blocked warning raised since the reading before ("": none)
    # The share of the second the frontier's pump spent awaiting its store (a cluster's
    # Redis; 0 for a queue in memory), and the mean round trip then, in seconds.
    store_busy: float = 0.0
    round_trip: float = 0.0


def reading_of(
    snap: Snapshot, cpu: float, lag: float = 0.0, blocked: str = "",
    store: tuple[float, float] = (0.0, 0.0),
) -> Reading:  # fmt: skip
    """`store`: the frontier store's busy share and mean round trip (Reading's fields)."""
    states = dict(snap.state_counts())
    paused = states.get(WorkerState.PAUSED, 0)
    live = max(snap.live_workers - paused, 0)
    network = sum(n for state, n in states.items() if state in NETWORK)
    return Reading(snap.elapsed, live, states.get(WorkerState.WAITING, 0),
                   snap.accounting.queued, states.get(WorkerState.THROTTLED, 0), network,
                   cpu, lag, blocked, *store)  # fmt: skip


def shares(readings: list[Reading]) -> dict[str, float]:
    """Each cause's strength over `readings` (the last WINDOW seconds), from 0 to 1."""
    if not readings:
        return {}
    n = len(readings)
    low, high = BUSY_LAG
    cpu = sum(max(_within(r.cpu, 0.6, BUSY_CORE), _within(r.lag, low, high)) for r in readings) / n
    out = {"server": 0.0, "politeness": 0.0, "frontier": 0.0, "cpu": cpu, "store": 0.0}
    for r in readings:
        if r.live <= 0:
            continue
        out["politeness"] += r.gated / r.live / n
        idle = r.idle / r.live
        out["frontier"] += (idle if r.queued == 0 else 0.0) / n
        out["store"] += (idle * r.store_busy if r.queued > 0 else 0.0) / n
        # Workers that wait on the network while the loop is saturated wait on the loop.
        out["server"] += r.network / r.live * (1.0 - cpu) / n
    return out


def _within(value: float, low: float, high: float) -> float:
    """Where `value` stands from `low` (0) to `high` (1)."""
    return min(max((value - low) / (high - low), 0.0), 1.0)


@dataclass(frozen=True, slots=True)
class Verdict:
    cause: str  # a key of NAMES, "mixed", or "" (too early to say)
    line: str  # what the screen and the report say
    since: float  # when its cause began to lead, on the crawl's clock (said HOLD s later)


class Diagnosis:
    """Readings in, the verdict out; each verdict said, with how long it held (the
    report's "what limited it")."""

    def __init__(self) -> None:
        self.readings: deque[Reading] = deque()
        self.verdict = Verdict("", "", 0.0)
        self.history: list[Verdict] = []  # every verdict said, in order
        self._leading = ""  # the cause leading now, not yet said
        self._leading_since = 0.0

    def feed(self, reading: Reading, hosts: tuple[HostView, ...] = ()) -> Verdict:
        readings = self.readings
        readings.append(reading)
        while readings and readings[0].t < reading.t - WINDOW:
            readings.popleft()
        window = list(readings)
        cause, line = _leading(window, hosts)
        if cause != self._leading:
            self._leading, self._leading_since = cause, reading.t
        held = reading.t - self._leading_since >= HOLD or cause == "blocked"
        if cause and held and line != self.verdict.line:
            # A new cause, or the same one with new evidence (a host, a figure): the
            # line is said again, and its moment kept only when the cause changed.
            since = self.verdict.since if cause == self.verdict.cause else self._leading_since
            self.verdict = Verdict(cause, line, since)
            if self.history and self.history[-1].cause == cause:
                self.history[-1] = self.verdict  # its latest evidence, from the same moment
            else:
                self.history.append(self.verdict)
        return self.verdict


def _leading(window: list[Reading], hosts: tuple[HostView, ...]) -> tuple[str, str]:
    """The cause leading over `window`, and its line ("" when none is clear)."""
    strength = shares(window)
    blocked = next((r.blocked for r in reversed(window) if r.blocked), "")
    # One page that held the loop, on a loop with time to spare; long steps one after
    # another on a saturated loop are the CPU's limit, not one page's.
    if blocked and strength.get("cpu", 0.0) < LEADS:
        return "blocked", f"{NAMES['blocked']}: {printable(blocked, 200)}"
    ranked = sorted(strength.items(), key=lambda kv: -kv[1])
    if not ranked:
        return "", ""
    (first, a), (second, b) = ranked[0], ranked[1]
    if a >= LEADS and a - b >= AHEAD:
        return first, _said(first, window[-1], hosts, a)
    if a >= MIXED and b >= MIXED:
        return "mixed", f"mixed: {NAMES[first]} ({a:.0%}) and {NAMES[second]} ({b:.0%})"
    if a >= LEADS:
        return first, _said(first, window[-1], hosts, a)
    return "", ""


def _said(cause: str, last: Reading, hosts: tuple[HostView, ...], share: float) -> str:
    """The cause in the crawl's words: the one action that would help first (what an
    80-column line keeps), then the evidence."""
    name = NAMES[cause]
    if cause == "frontier":
        return (f"{name}: fewer workers would do · {last.idle} of {last.live} workers idle "
                "on q.get(), nothing queued")  # fmt: skip
    if cause == "cpu":
        return (f"{name}: --procs N would help · the loop runs timers {last.lag * 1000:.0f} "
                f"ms late, the process uses {last.cpu:.0%} of a core")  # fmt: skip
    if cause == "store":
        return (f"{name}: more workers a process or a nearer Redis would help · {last.idle} "
                f"of {last.live} workers idle on q.get() with {last.queued:,} URLs queued; "
                f"a round trip takes {last.round_trip * 1000:.0f} ms, awaited "
                f"{last.store_busy:.0%} of the time")  # fmt: skip
    if cause == "politeness":
        host = max(hosts, key=lambda h: h.waiting, default=None)
        if host is None or not host.waiting:
            return f"{name}: {last.gated} of {last.live} workers held back by a host's rules"
        return (f"{name}: h changes it · {last.gated} of {last.live} workers wait on "
                f"{_host(host)}'s {_rule(host)}")  # fmt: skip
    # The server: the host most requests are in flight to, and its answers' median.
    host = max(hosts, key=lambda h: h.in_flight, default=None)
    if host is None or not host.in_flight:
        return f"{name}: {share:.0%} of the workers' time awaits the network"
    where = f"p50 answer under {host.p50 * 1000:.0f} ms at {_host(host)}"
    if host.limit and host.in_flight >= host.limit:
        return (f"{name}: its limit of {host.limit} in flight holds the workers, more would "
                f"not help (h raises it) · {where}")  # fmt: skip
    return f"{name}: more workers would help · {where}"


def _host(host: HostView) -> str:
    """A host as the line names it: its origin without the scheme, shown literally."""
    return printable(host.origin.split("://", 1)[-1], 80)


def _rule(host: HostView) -> str:
    if host.crawl_delay:
        return f"Crawl-delay {host.crawl_delay:g} s (robots.txt)"
    if host.delay:
        return f"delay {host.delay:g} s"
    if host.limit:
        return f"limit of {host.limit} in flight"
    return "rules"
