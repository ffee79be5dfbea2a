"""The garbage collector's pace while a crawl runs, whoever runs it.

A crawl makes and drops a few hundred container objects a page (requests, responses,
futures, records) and almost never a cycle: in a 20,000-page crawl of the demo site at
Python's pace the young collections ran 470 times, found 27 objects to free in all, and
cost 0.85 ms each, about a twentieth of the crawl's CPU (bench/per_core.py). The command
line and the TUI settle the heap before a crawl (tui/heap.py, which also freezes what
exists, and measured this threshold against 10,000); a Crawler run by any other program
(a benchmark, a library user) gets the same young pace from here, and no freeze.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 100_000  # net new container objects between young collections (CPython: 700)

_crawls = 0  # crawls running in this process, each holding the pace up
_before: tuple[int, ...] | None = None  # the thresholds to put back when the last one ends


def crawl_started() -> None:
    """Slow the young collections for a crawl (never speeds them up)."""
    global _crawls, _before
    _crawls += 1
    if _crawls > 1:
        return
    thresholds = gc.get_threshold()
    if thresholds[0] >= YOUNG_THRESHOLD or thresholds[0] == 0:
        return  # the program has chosen a slower pace, or none at all
    _before = thresholds
    gc.set_threshold(YOUNG_THRESHOLD, *thresholds[1:])


def crawl_ended() -> None:
    """The last crawl running puts back the thresholds it found, unless they were
    changed since (then the program's choice stands)."""
    global _crawls, _before
    _crawls -= 1
    if _crawls or _before is None:
        return
    if gc.get_threshold()[0] == YOUNG_THRESHOLD:
        gc.set_threshold(*_before)
    _before = None
