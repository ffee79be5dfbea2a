"""The frontier: the chapter's queue of (url, max_redirect) pairs, with leases.

The crawler talks to its queue as the chapter does: `put_nowait(pair)` where links are
found, `lease = await q.get()`, the fetch, `q.task_done(lease)`, and `await q.join()`,
which returns once the unfinished count (queued + in flight) is 0. What `get()` hands out
is a lease on one pair: a worker cancelled before its record was written gives it back
with `put_back(lease)`, and `task_done(lease)` counts a lease once however often it is
called, so a queue kept elsewhere (engine/cluster) can expire and reclaim leases and
still never let the count drift.

`MemoryFrontier` is today's `asyncio.Queue`, as fast as before; which URLs are new is the
ledger's to decide (its seen set), in this process.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from .observe.snapshot import Accounting

Pair = tuple[str, int]  # (url, max_redirect)


class Lease:
    """One pair in a worker's hands, from get() until task_done()."""

    __slots__ = ("done", "pair")

    def __init__(self, pair: Pair) -> None:
        self.pair = pair
        self.done = False  # task_done() counted it already

    @property
    def url(self) -> str:
        return self.pair[0]

    @property
    def max_redirect(self) -> int:
        return self.pair[1]


class Frontier(Protocol):
    """What the crawler needs of its queue, wherever the queue is kept."""

    def put_nowait(self, pair: Pair) -> None:
        """Queue a pair the ledger admitted as new."""
        ...

    async def get(self) -> Lease: ...

    def take_ready(self) -> Lease | None:
        """A lease at once if one is ready here, else None: then get() must wait. The
        crawler's worker enters "waiting" only then, so the state means what it says."""
        ...

    def put_back(self, lease: Lease) -> None:
        """The leased pair goes back on the queue (its worker was cancelled); the lease
        still ends with task_done()."""
        ...

    def task_done(self, lease: Lease) -> None:
        """The lease is over; a second call for the same lease does nothing."""
        ...

    async def join(self) -> None:
        """Wait until nothing is queued or in flight."""
        ...

    def qsize(self) -> int: ...

    @property
    def unfinished(self) -> int:
        """Queued plus in flight: the count join() waits on."""
        ...

    def accounting(self) -> Accounting | None:
        """The whole crawl's books when the frontier is shared (None: the ledger's own)."""
        ...

    def store_time(self) -> tuple[float, int]:
        """Seconds spent awaiting the store the frontier is kept in, and the round trips
        they were, since the start ((0.0, 0) for a queue in memory): the verdict's
        evidence that a crawl waits on its Redis."""
        ...

    async def close(self) -> None:
        """After the workers are gone: what the frontier owes its store is written."""
        ...


class MemoryFrontier(asyncio.Queue[Pair]):
    """The chapter's asyncio.Queue, handing out leases; the frontier of one process."""

    async def get(self) -> Lease:  # type: ignore[override]
        return Lease(await super().get())

    def take_ready(self) -> Lease | None:
        # What get() would do without a suspension: take the first pair, even if a woken
        # getter has not run yet (it finds the queue empty and waits again, as in get()).
        return None if self.empty() else Lease(self.get_nowait())

    def put_back(self, lease: Lease) -> None:
        self.put_nowait(lease.pair)

    def task_done(self, lease: Lease) -> None:  # type: ignore[override]
        if lease.done:
            return
        lease.done = True
        super().task_done()

    def accounting(self) -> Accounting | None:
        return None  # this process's ledger holds the whole crawl's books

    def store_time(self) -> tuple[float, int]:
        return 0.0, 0

    async def close(self) -> None:
        """Nothing to let go of: the queue lives and dies with the crawl."""

    @property
    def unfinished(self) -> int:
        # asyncio.Queue keeps join()'s counter private; it is the very thing to show.
        return self._unfinished_tasks  # type: ignore[attr-defined]
