"""Turns at the event loop for parsing, the crawl's one CPU-heavy step.

Parsing a page takes about a millisecond, and on a fast site hundreds of answers arrive
together. Parsed in the one pass of the loop that wakes their workers, they hold the loop
for a third of a second, and every timer waits that long: a retry's backoff, a lag probe,
the screen's next frame. So a worker takes a turn before it parses. While the parses of
this pass add up to less than a slice, the turn is given at once, with no await, and a
quiet crawl never notices. Past the slice the worker waits in line, and each later pass
lets through as many as fit in a slice, going by how long the pass before took.

Nothing is lost by waiting: the same parses run, in more and shorter passes.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

# How long the parses in one pass of the loop may run before the rest wait for the next.
SLICE = 0.02


class Turns:
    def __init__(self, slice_seconds: float = SLICE) -> None:
        self.slice = slice_seconds
        self._line: deque[asyncio.Future[None]] = deque()
        # When this pass's first turn was given; None until one is. While it is set, a
        # call of _next_pass is pending: it marks the start of the next pass.
        self._began: float | None = None
        self._batch = 1  # how many in line the next pass lets through
        self._let_at = 0.0  # when the last batch was let through; 0 with nobody in line
        self.waited = 0  # turns that were not given at once: how much the line was used

    async def take(self) -> None:
        """Return when the caller may parse: at once, or after waiting in line."""
        now = time.perf_counter()
        if not self._line:
            if self._began is None:
                self._began = now
                asyncio.get_running_loop().call_soon(self._next_pass)
                return
            if now - self._began < self.slice:
                return
        waiting = asyncio.get_running_loop().create_future()
        self._line.append(waiting)
        self.waited += 1
        await waiting  # cancelled (the worker or the crawl was): skipped in the line

    def _next_pass(self) -> None:
        # call_soon runs this early in the next pass, before that pass's new I/O: the
        # callbacks the loop had ready when it was scheduled come first.
        now = time.perf_counter()
        self._began = None
        line = self._line
        if not line:
            self._let_at = 0.0
            return
        if self._let_at:
            # The last batch ran in the pass that just ended; size this one by it. Growth
            # is capped so that one short pass (the line's start) cannot overshoot.
            took = max(now - self._let_at, 1e-6)
            self._batch = max(1, min(round(self._batch * self.slice / took), 2 * self._batch))
        self._let_at = now
        let = 0
        while line and let < self._batch:
            waiting = line.popleft()
            if not waiting.done():
                waiting.set_result(None)
                let += 1
        # This pass belongs to the batch: anyone who comes now joins the line behind it.
        self._began = now
        asyncio.get_running_loop().call_soon(self._next_pass)
