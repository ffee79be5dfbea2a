"""Where one URL's time went: its waterfall, folded from the event stream.

A URL's time runs from when it was put on the queue to when its record was kept. The
parts are the states its worker went through holding it (robots.txt, the host's gate,
connecting and sending the request, awaiting headers, reading the body, parsing,
backing off before a retry, paused), and before them the wait in the queue. They are
cut from one clock at the moments the worker changed state, so they add up to the whole,
exactly.

When it was queued: the moment its referrer's record was kept (links are put on the
queue as the page that holds them is parsed, just before its record), or the crawl's
start for a root. When the referrer's record is older than the events at hand (a flight
recorder's window), the queue's part is unknown and the whole starts when a worker took it.

Scheduling delay (ready, but waiting for the loop) is inside each part, not a part of
its own: the per-worker histograms (engine/timing/per_worker.py) measure it, per step.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..urls import origin_of

# The parts in the order a fetch goes through them, with the words shown for each.
PARTS: tuple[tuple[str, str], ...] = (
    ("queue", "waiting in the queue"),
    ("robots", "robots.txt"),
    ("throttled", "the host's gate (limit, delay, Crawl-delay)"),
    ("connecting", "connecting and sending the request"),
    ("headers", "awaiting the status line and headers"),
    ("body", "reading the body"),
    ("parsing", "parsing the links"),
    ("backoff", "backing off before a retry"),
    ("paused", "paused"),
)
PART_NAMES = tuple(name for name, _words in PARTS)


@dataclass(frozen=True, slots=True)
class Waterfall:
    url: str
    worker: int
    status: int | None
    exception: str | None
    queued_at: float | None  # crawl seconds; None when not known (see the module's note)
    taken_at: float  # when its worker took it from the queue
    ended_at: float  # when its record was kept
    parts: tuple[tuple[str, float], ...]  # (part, seconds), in PARTS order, nonzero ones

    @property
    def started_at(self) -> float:
        return self.taken_at if self.queued_at is None else self.queued_at

    @property
    def total(self) -> float:
        return self.ended_at - self.started_at

    def part(self, name: str) -> float:
        return dict(self.parts).get(name, 0.0)


@dataclass(slots=True)
class _Holding:
    url: str
    taken_at: float
    state: str
    since: float
    spent: dict[str, float] = field(default_factory=dict)

    def close(self, t: float) -> None:
        self.spent[self.state] = self.spent.get(self.state, 0.0) + max(t - self.since, 0.0)
        self.since = t


def waterfalls(events: Iterable[dict[str, Any]]) -> list[Waterfall]:
    """Every fetch whose whole time the events hold, in the order their records came."""
    kept_at: dict[str, float] = {}  # URL -> when its record was kept
    holding: dict[int, _Holding] = {}
    out: list[Waterfall] = []
    for event in events:
        kind = event["kind"]
        if kind == "state":
            worker, url, t = event["worker"], event.get("url"), float(event["t"])
            held = holding.get(worker)
            if held is not None:
                held.close(t)
                if url != held.url:
                    del holding[worker]
                    held = None
            if url is not None:
                if held is None:
                    holding[worker] = _Holding(url, t, event["state"], t)
                else:
                    held.state = event["state"]
        elif kind == "fetch":
            record = event["record"]
            t = float(event["t"])
            url = record["url"]
            kept_at[url] = t
            worker = record.get("worker")
            held = holding.pop(worker, None) if worker is not None else None
            if held is None or held.url != url:
                continue  # taken before these events began
            held.close(t)
            out.append(_waterfall(record, held, t, kept_at))
    return out


def _waterfall(
    record: dict[str, Any], held: _Holding, t: float, kept_at: dict[str, float]
) -> Waterfall:
    referrer = record.get("referrer")
    if referrer is None and record.get("depth") == 0:
        queued_at: float | None = 0.0  # a root: queued as the crawl began
    else:
        queued_at = kept_at.get(referrer) if referrer is not None else None
    if queued_at is not None and queued_at > held.taken_at:
        queued_at = None  # a record kept again later (a retry of a redirect): no order to trust
    spent = dict(held.spent)
    if queued_at is not None:
        spent["queue"] = held.taken_at - queued_at
    known = [(name, spent.pop(name)) for name in PART_NAMES if spent.get(name)]
    # Any other state held with the URL (none today): kept, after the known ones.
    parts = tuple(known + sorted((k, v) for k, v in spent.items() if v))
    return Waterfall(
        record["url"], record["worker"], record.get("status"), record.get("exception"),
        queued_at, held.taken_at, t, parts,
    )  # fmt: skip


def waterfall_of(events: Iterable[dict[str, Any]], url: str) -> Waterfall | None:
    """The last fetch of `url` the events hold whole, or None."""
    found = None
    for fall in waterfalls(events):
        if fall.url == url:
            found = fall
    return found


def slowest(falls: Sequence[Waterfall], n: int = 10) -> list[Waterfall]:
    return sorted(falls, key=lambda f: f.total, reverse=True)[:n]


def host_parts(falls: Sequence[Waterfall]) -> dict[str, dict[str, tuple[float, float]]]:
    """Per origin, per part: its (p50, p99) over the fetches, a part not gone through
    counting as 0."""
    by_host: dict[str, list[Waterfall]] = {}
    for fall in falls:
        by_host.setdefault(origin_of(fall.url), []).append(fall)
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for host, group in sorted(by_host.items()):
        names = [n for n in PART_NAMES if any(f.part(n) for f in group)]
        out[host] = {n: _p50_p99([f.part(n) for f in group]) for n in names}
    return out


def _p50_p99(values: list[float]) -> tuple[float, float]:
    if len(values) == 1:
        return values[0], values[0]
    cuts = statistics.quantiles(values, n=100, method="inclusive")
    return statistics.median(values), cuts[98]


def bar(fall: Waterfall, width: int) -> list[tuple[str, int, int]]:
    """(part, first column, columns) for each part, laid along `width` columns in order;
    a part too short for a column still gets one, so none is hidden."""
    total = fall.total or 1e-9
    out: list[tuple[str, int, int]] = []
    col = 0
    elapsed = 0.0
    for name, seconds in fall.parts:
        elapsed += seconds
        end = max(round(elapsed / total * width), col + 1)
        end = min(end, width)
        if end > col:
            out.append((name, col, end - col))
        col = end
    return out
