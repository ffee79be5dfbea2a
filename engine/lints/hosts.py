"""The warnings about hosts: a crawl held back by one host's politeness, and a host that
fails request after request (a retry storm).

Plain functions of a snapshot's parts, so a live crawl, a replay and a monitor's view
raise the same warnings from the same rows.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..observe.snapshot import HostView, Snapshot
from ..observe.text import printable
from ..observe.workers import WorkerState
from .lint import Lint, LintKind

# Requests in a row with no answer before a host is said to be in a retry storm.
RETRY_STORM_STREAK = 5


def host_lints(hosts: Sequence[HostView], idle: int, live_workers: int, t: float) -> list[Lint]:
    """The host warnings for one moment (`t`: the crawl's clock, Snapshot.elapsed), with
    `idle` of the `live_workers` waiting on q.get()."""
    found = retry_storms(hosts, t)
    politeness = politeness_bound(hosts, idle, live_workers, t)
    if politeness is not None:
        found.insert(0, politeness)
    return found


def idle_workers(snap: Snapshot) -> int:
    """The live workers of `snap` waiting on q.get(), from its counts (no rows needed)."""
    return dict(snap.state_counts()).get(WorkerState.WAITING, 0)


def politeness_bound(
    hosts: Sequence[HostView], idle: int, live_workers: int, t: float
) -> Lint | None:
    """Raised when at least half the live workers do nothing but wait: idle on q.get(),
    or holding a URL at a host's gate (its per-host limit or its delay), and at least
    one waits at a gate. The host named is the one most workers wait on."""
    gated = [host for host in hosts if host.waiting > 0]
    if not gated or not live_workers:
        return None
    at_gates = sum(host.waiting for host in gated)
    if (idle + at_gates) * 2 < live_workers:
        return None
    host = max(gated, key=lambda h: h.waiting)
    origin = printable(host.origin)
    text = (
        f"{host.waiting} of {live_workers} workers wait on {origin}"
        f" ({_why(host)}), {idle} idle on q.get()"
    )
    return Lint(LintKind.POLITENESS, t, text, host=host.origin)


def _why(host: HostView) -> str:
    """What holds a host's URLs back: its limit when it is full, else its delay."""
    if host.limit and host.in_flight >= host.limit:
        return f"per-host limit {host.limit}"
    if host.crawl_delay >= host.delay and host.crawl_delay:
        return f"robots.txt Crawl-delay {host.crawl_delay:g} s"
    if host.delay:
        return f"delay {host.delay:g} s"
    return f"per-host limit {host.limit}"


def retry_storms(hosts: Sequence[HostView], t: float) -> list[Lint]:
    """One warning for each host whose last RETRY_STORM_STREAK requests or more got no
    answer (timeouts, refused or reset connections)."""
    return [
        Lint(
            LintKind.RETRY_STORM,
            t,
            f"{printable(host.origin)} gave no answer {host.streak} times in a row"
            f" ({host.errors} of its {host.tries} requests failed)",
            host=host.origin,
        )
        for host in hosts
        if host.streak >= RETRY_STORM_STREAK
    ]
