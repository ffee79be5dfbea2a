"""The crawl's shape, in one line: pages by depth, the queue's growth against the rate of
fetches over the last seconds, and an ETA when one can be told (the crawl is bounded by
--max-pages, or its queue is shrinking)."""

from __future__ import annotations

from collections import deque

from crawlscope.engine.observe.snapshot import OVER, Snapshot

from ..format import duration

WINDOW = 10.0  # seconds of the crawl's clock the rates are taken over


class CrawlShape:
    """Fed one snapshot at a time; says the shape from what it was fed."""

    def __init__(self) -> None:
        self._samples: deque[tuple[float, int, int]] = deque()  # (elapsed, queued, finished)

    def line(self, snap: Snapshot, max_pages: int, reproducible: bool = False) -> str:
        a = snap.accounting
        finished = a.done + a.failed
        samples = self._samples
        if samples and snap.elapsed < samples[-1][0]:
            samples.clear()  # a replay moved back in time
        samples.append((snap.elapsed, a.queued, finished))
        while len(samples) > 2 and samples[0][0] < snap.elapsed - WINDOW:
            samples.popleft()
        depths = " ".join(f"{d}:{n}" for d, n in enumerate(snap.depths)) or "-"
        text = f"pages by depth {depths}"
        if reproducible:
            return text + "; queue --/s, fetched --/s"
        t0, queued0, finished0 = samples[0]
        span = snap.elapsed - t0
        if span <= 0:
            return text + "; rates after a moment"
        growth = (a.queued - queued0) / span
        rate = (finished - finished0) / span
        text += f"; queue {growth:+.1f}/s, fetched {rate:.1f}/s"
        return text + "; " + eta(snap, max_pages, growth, rate)


def eta(snap: Snapshot, max_pages: int, growth: float, rate: float) -> str:
    """The ETA, if one can be told. A blocked host's URLs wait (counted as queued) until it
    is unblocked: no rate of the crawl says when that is, so they are left out of the ETA
    and said apart."""
    a = snap.accounting
    if snap.phase in OVER:
        return "ended"
    parked = sum(host.queued for host in snap.hosts if host.blocked)
    waits = f" ({parked:,} URLs wait on blocked hosts: no ETA for them)" if parked else ""
    if max_pages and rate > 0:
        left = max(0, max_pages - a.done - a.failed)
        return f"ETA {duration(left / rate)} (--max-pages {max_pages}){waits}"
    rest = a.queued - parked + a.held
    if growth < 0 and rest > 0:
        rest_of = " of the unblocked hosts" if parked else ""
        return f"ETA {duration(rest / -growth)} (the queue{rest_of} shrinks){waits}"
    if parked:
        return f"no ETA: {parked:,} URLs wait on blocked hosts"
    return "no ETA: the queue is not shrinking"
