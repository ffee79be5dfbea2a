"""The cluster's recent past, for the view's timeline, waterfalls and rewind.

While a view watches (its `want:` entry is there), each process sends the flight
recorder's events of the last PUBLISH_EVERY seconds to one capped stream in Redis
(`events`), with the wall-clock moment its own clock started (`epoch`) and the moment of
its clock the batch covers up to (`until`). The view reads the stream from where it last
stopped and keeps the events in a FlightRing of its own, as a recording's: a worker is
renumbered as the cluster view numbers it (process number * ID_STRIDE + its id), a time
moved onto the view's clock (seconds since the first process it knew of began), and the
processes' batches merged in time order. A batch arrives up to PUBLISH_EVERY late, so an
event is kept only once every running process has sent what comes before it (or
HOLD_MOST seconds have passed: a process that stops sending does not stop the view).

An entry in Redis is another process's word: each is checked as a recording's line is
(engine/trace/validation.py), and one that is not what a process of ours writes is left
out and counted, never a crash. The parts that only one process can say (its hosts, its
end) are left out: the view writes the cluster's hosts from its own merged figures.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from ..config import CrawlConfig
from ..exchange.config_json import config_to_plain
from ..exchange.plain import BadMessage
from ..observe.snapshot import Snapshot
from ..remote.protocol import record_from_plain
from ..trace.events import COUNT_KEYS, FETCH, OTHER, PAUSED, RETIRING, STATE, Item, to_event
from ..trace.flight import COUNTS_BYTES, FETCH_BYTES, STATE_BYTES, FlightRing, event_bytes
from ..trace.validation import BadEvent, check_event

ID_STRIDE = 100_000  # observe.py's: a worker's id in the view is number * ID_STRIDE + its own
STREAM_KEPT = 32  # batches the stream keeps (about): the view reads every 0.25 s
EVENTS_SENT = 20_000  # events in one batch at most: a faster process leaves a gap
# Seconds an event waits for a late process before it is kept anyway (a process that
# stops publishing leaves the view after observe.PUBLISHED_FOR, 3 s).
HOLD_MOST = 5.0
HOSTS_EVERY = 0.5  # seconds of the view's clock between two hosts events it writes
# Kinds only a process can say of itself, not of the crawl: not sent, not kept.
OWN_KINDS = frozenset({"hosts", "end"})


def batch_fields(
    name: str, items: list[Item], epoch: float, until: float, gap: bool
) -> dict[str, str]:
    """A stream entry for one process's events since its last one."""
    events = [to_event(i) for i in items if i[0] != OTHER or i[2].get("kind") not in OWN_KINDS]
    return {
        "name": name,
        "epoch": repr(epoch),
        "until": repr(until),
        "gap": "1" if gap else "0",
        "events": json.dumps(events, ensure_ascii=True),
    }


class ClusterPast:
    """The events of every process, merged into `ring` on one clock."""

    def __init__(self, config: CrawlConfig, epoch: float) -> None:
        self.epoch = epoch  # the wall-clock moment the view's 0:00 stands for
        self.ring = FlightRing()
        self.ring.start = {"kind": "start", "wall": epoch, "config": config_to_plain(config)}
        self._pending: dict[int, list[tuple[float, dict[str, Any]]]] = {}
        self._covered: dict[int, float] = {}  # view time each process has sent up to
        self._own_t: dict[int, float] = {}  # each process's last event time, its clock
        self._last_t = 0.0  # the newest time kept: the ring's times may not go back
        self._hosts_at = -HOSTS_EVERY
        self._hosts: list[dict[str, Any]] | None = None
        self.gaps = 0  # batches that said events were left out before them
        self.bad = 0  # batches left out: not what a process of ours sends
        self.problem = ""  # what was wrong with the last of them

    def take(self, number: int, fields: dict[bytes, bytes], phase: str) -> None:
        """Check one stream entry of process `number`, and hold its events until their
        turn. A bad one is counted and left out."""
        try:
            epoch, until, gap, events = _batch(fields)
            offset = epoch - self.epoch
            t_own = self._own_t.get(number, 0.0)
            held = self._pending.setdefault(number, [])
            checked = []
            for i, event in enumerate(events):
                try:
                    t_own = check_event(event, t_own)
                except BadEvent as exc:
                    raise BadMessage(f"events[{i}]: {exc}") from None
                if event["kind"] in OWN_KINDS:
                    continue
                _renumber(event, number)
                if "phase" in event:
                    event["phase"] = phase  # the crawl's, not this process's alone
                checked.append((max(event["t"] + offset, 0.0), event))
        except BadMessage as exc:
            self.bad += 1
            self.problem = str(exc)
            return
        self._own_t[number] = t_own
        held.extend(checked)
        self.gaps += gap
        self._covered[number] = max(self._covered.get(number, 0.0), until + offset)

    def release(self, running: Iterable[int], now: float, snap: Snapshot | None = None) -> None:
        """Keep every held event that no running process can still send one before:
        the earliest `covered` of the running processes, or `now` - HOLD_MOST."""
        # One yet to send its first batch holds the rest back too: its first events
        # are as old as anyone's.
        covered = [self._covered.get(n, -math.inf) for n in running]
        upto = max(min(covered, default=math.inf), now - HOLD_MOST)
        ready: list[list[tuple[float, dict[str, Any]]]] = []
        for number, held in self._pending.items():
            cut = _first_after(held, upto)
            if cut:
                ready.append(held[:cut])
                self._pending[number] = held[cut:]
        ring, last = self.ring, self._last_t
        for t, event in heapq.merge(*ready, key=lambda pair: pair[0]):
            last = max(last, t)
            event["t"] = last
            item = _item(event)
            ring.add(item, _size(item, event))
        self._last_t = last
        if snap is not None and (covered or ready):
            self._note_hosts(snap, last)

    def _note_hosts(self, snap: Snapshot, t: float) -> None:
        if t - self._hosts_at < HOSTS_EVERY:
            return
        rows = [asdict(row) for row in snap.hosts]
        if rows == self._hosts:
            return
        self._hosts, self._hosts_at = rows, t
        event = {"t": t, "kind": "hosts", "rows": rows, "count": snap.host_count,
                 "depths": list(snap.depths)}  # fmt: skip
        self.ring.add((OTHER, t, event), event_bytes(event))


def _batch(fields: dict[bytes, bytes]) -> tuple[float, float, bool, list[Any]]:
    try:
        epoch = float(fields[b"epoch"])
        until = float(fields[b"until"])
        gap = fields[b"gap"] == b"1"
        events = json.loads(fields[b"events"])
    except (KeyError, ValueError, TypeError, RecursionError):
        raise BadMessage("not a batch of events") from None
    if not (math.isfinite(epoch) and math.isfinite(until) and until >= 0):
        raise BadMessage("its epoch or until is not a time")
    if not isinstance(events, list) or len(events) > EVENTS_SENT:
        raise BadMessage(f"events is not a list of at most {EVENTS_SENT}")
    return epoch, until, gap, events


def _renumber(event: dict[str, Any], number: int) -> None:
    """A process's worker ids as the view numbers them (checked events only)."""
    kind = event["kind"]
    if kind == "state":
        event["worker"] = _cluster_id(event["worker"], number)
    elif kind == "fetch" and event["record"].get("worker") is not None:
        event["record"]["worker"] = _cluster_id(event["record"]["worker"], number)
    elif kind == "lint" and event["lint"].get("worker") is not None:
        event["lint"]["worker"] = _cluster_id(event["lint"]["worker"], number)
    elif kind == "health":
        for hold in event["holds"]:
            hold["worker"] = _cluster_id(hold["worker"], number)


def _cluster_id(worker: object, number: int) -> int:
    if type(worker) is not int or not 0 <= worker < ID_STRIDE:
        raise BadMessage(f"a worker id out of range: {worker!r:.40}")
    return number * ID_STRIDE + worker


def _first_after(held: list[tuple[float, dict[str, Any]]], upto: float) -> int:
    """How many of `held` (in time order) are at or before `upto`."""
    lo, hi = 0, len(held)
    while lo < hi:
        mid = (lo + hi) // 2
        if held[mid][0] <= upto:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _item(event: dict[str, Any]) -> Item:
    """A checked event as the recorder's compact tuple where it has one (events.py), so
    the view's past costs what a crawl's own does; any other kind stays an object."""
    kind, t = event["kind"], event["t"]
    counts = tuple(event[k] for k in COUNT_KEYS) if all(k in event for k in COUNT_KEYS) else None
    if kind == "state":
        flags = (PAUSED if event.get("paused") else 0) | (RETIRING if event.get("retiring") else 0)
        timing = tuple(event["timing"]) if "timing" in event else None
        return (STATE, t, event["worker"], event["state"], event.get("url"),
                event.get("pages", 0), flags, timing, counts)  # fmt: skip
    if kind == "fetch" and counts is not None:
        try:
            record = record_from_plain(event["record"])
        except BadMessage:
            return (OTHER, t, event)
        extra = {k: event[k] for k in ("budget_left", "target") if k in event}
        return (FETCH, t, record, extra or None, counts)
    return (OTHER, t, event)


def _size(item: Item, event: dict[str, Any]) -> int:
    if item[0] == STATE:
        url = item[4]
        return STATE_BYTES + (len(url) if url else 0) + (COUNTS_BYTES if item[8] else 0)
    if item[0] == FETCH:
        # The record is the ring's alone here (a crawl's ledger shares its own).
        return FETCH_BYTES + 2 * len(item[2].url) + 300
    return event_bytes(event)
