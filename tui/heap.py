"""The garbage collector, set for a crawl.

Two settings, undone together when the crawl is over:

- What exists once a crawl starts (the modules: aiohttp, Rich, Textual; for the TUI its
  screen too) lives until the crawl ends, yet every full collection, which the crawl's
  allocations trigger again and again, walked all of it. Frozen, those objects sit in the
  collector's permanent generation: a 10,000-page headless crawl at 500 workers spends
  0.2 s in full collections instead of 0.5 s, and a TUI crawl at full speed gained about 4%.
- A young collection runs every YOUNG_COLLECTION allocations instead of Python's 700.
  What a young collection walks, and mostly keeps, is what is in flight: the requests,
  answers, coroutines and futures of every worker at work (about 20,000 objects at 100
  workers and no per-host limit; for the TUI, a frame's lines too). Each collection
  walked all of it again and moved it to the older generation, where most of it died
  soon after. Above that population, a collection comes only as the crawl's state
  really grows. Measured with gc.callbacks, crawls at full speed, 100,000 against
  10,000: 20,000 pages at 500 workers, the collector's time 20 ms headless and 36 ms
  under the TUI against 260 and 430 ms (what the TUI added, 170 ms, was 2% of it); a
  100,000-page headless crawl at 100 workers, 2 collections and 88 ms against 91 and
  679 ms, its longest pause 64 ms instead of 20. (While each parse left 30 objects in
  cycles, links.py, a higher threshold walked more of them and saved nothing.)
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

YOUNG_COLLECTION = 100_000


def settle_heap() -> Callable[[], None] | None:
    """Freeze what the process holds now and space out young collections; returns what
    undoes both, or None if the heap was settled already (its owner undoes it)."""
    if gc.get_freeze_count():
        return None
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(max(thresholds[0], YOUNG_COLLECTION), *thresholds[1:])

    def undo() -> None:
        gc.set_threshold(*thresholds)
        gc.unfreeze()

    return undo


@contextlib.contextmanager
def settled_heap() -> Iterator[None]:
    """The heap settled for the block, and given back to the collector after it (cycles
    among the frozen objects can be freed again, and a process running crawls one after
    another does not pile them up)."""
    undo = settle_heap()
    try:
        yield
    finally:
        if undo is not None:
            undo()
