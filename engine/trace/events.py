"""The crawl's events as the recorder keeps them in memory: a compact tuple each, made into
the recording's JSON object (the one format: replay.py, validation.py) only when something
reads it (a rewind, the timeline, a saved flight, --record's file).

A tuple costs a fraction of the object it stands for, in time and in memory, and the
flight recorder makes one at every state change of every worker, always (flight.py).

    (STATE, t, worker, state, url, pages, flags, timing | None, counts | None)
    (FETCH, t, record, extra | None)
    (OTHER, t, event)             phase, hosts, lint, health, end: already objects

A fetch's item has no counts: the state change its worker makes next, in the same pass of
the loop (its next URL's first state, "waiting" or "stopped"), reads them, and no screen,
frame or rewind can see a moment between the two.
"""

from __future__ import annotations

from typing import Any

STATE, FETCH, OTHER = 0, 1, 2
PAUSED, RETIRING = 1, 2  # a state item's flags
# The counts an event carries, in the order a counts tuple holds them.
COUNT_KEYS = (
    "phase", "queued", "unfinished", "seen", "done", "failed", "filtered", "unfetched", "held",
)  # fmt: skip

Item = tuple[Any, ...]


def to_event(item: Item) -> dict[str, Any]:
    """The recording's object for `item`: a new one each call (the reader may keep it)."""
    kind = item[0]
    if kind == OTHER:
        return dict(item[2])
    if kind == STATE:
        _, t, worker, state, url, pages, flags, timing, counts = item
        event = {"t": t, "kind": "state", "worker": worker, "state": state, "url": url,
                 "pages": pages}  # fmt: skip
        if flags & PAUSED:
            event["paused"] = True
        if flags & RETIRING:
            event["retiring"] = True
        if timing is not None:
            event["timing"] = list(timing)
        if counts is not None:
            event.update(zip(COUNT_KEYS, counts, strict=True))
        return event
    _, t, record, extra = item
    event = {"t": t, "kind": "fetch", "record": record.to_dict()}
    if extra:
        event.update(extra)
    return event
