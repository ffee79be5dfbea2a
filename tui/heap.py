"""The garbage collector, set for a crawl.

Two settings, undone together when the crawl is over:

- What exists once a crawl starts (the modules: aiohttp, Rich, Textual; for the TUI its
  screen too) lives until the crawl ends, yet every full collection, which the crawl's
  allocations trigger again and again, walked all of it. Frozen, those objects sit in the
  collector's permanent generation: a 10,000-page headless crawl at 500 workers spends
  0.2 s in full collections instead of 0.5 s, and a TUI crawl at full speed gained about 4%.
- A young collection runs every YOUNG_COLLECTION allocations instead of Python's 700. A
  crawl makes short-lived containers by the thousand (a page's links, a request's
  headers; for the TUI, the lines of a frame: a Strip and its caches, Segments), and at
  700 a collection often ran in the middle of them: it walked them, and moved the ones
  still in use to the older generations, whose own collections then walked them again
  until they died. At 10,000 most are gone before the next collection looks. 10,000-page
  crawls at 100 workers, the collector's time over the crawl's (gc.callbacks, medians of
  four): headless 7.4% to 4.4%, under the TUI in a terminal 8.4% to 4.5%. 50,000 saved no
  more: each young collection then walks more of what is still alive.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

YOUNG_COLLECTION = 10_000


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
