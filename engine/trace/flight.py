"""The flight recorder: the recent past of a crawl, always kept, in memory.

Every event the Recorder makes (recording.py: one writer, one format) lands here first,
whether or not `--record` also writes it to a file. The ring is bounded twice, by age
(`seconds`) and by an estimate of its bytes (`max_bytes`), whichever bites first; what it
lets go is folded into `base`, the state of the crawl just before the oldest event kept,
so that any moment still in the ring can be shown whole: rewind (a KeptPast over the
ring), the timeline, a fetch's waterfall, and a saved flight that `crawlscope replay`
plays.

Events are kept in chunks so that letting go of the oldest costs one pop per chunk and
the bounds are looked at once per chunk, not per event: the always-on cost is a tuple
appended to a list (bench/recorder_cost.py measures it).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .events import FETCH, STATE, Item, to_event
from .kept_past import ChunkSummary, KeptPast, state_at, summarize, uncollected
from .replay import CrawlState

DEFAULT_SECONDS = 600.0
DEFAULT_MB = 64
DEFAULT_KEEP = 20  # saved flights kept in the folder
CHUNK = 1024  # events in a chunk: the grain of letting go
# What a kept event costs beyond the dict's own table (sys.getsizeof): its float time and
# the boxed numbers and short strings it holds, measured on a crawl of the demo site
# (bench/recorder_cost.py prints bytes per event, measured against this estimate).
EVENT_OVERHEAD = 600
# The last minute: what a flight file keeps by default.
FLIGHT_SECONDS = 60.0


@dataclass(frozen=True)
class FlightOptions:
    """The recorder's bounds, and where and how many saved flights go."""

    seconds: float = DEFAULT_SECONDS
    mb: int = DEFAULT_MB
    folder: str | None = None  # None: default_flight_dir()
    keep: int = DEFAULT_KEEP

    def ring(self) -> FlightRing:
        return FlightRing(self.seconds, self.mb << 20)


# What an item holds beyond what the crawl keeps anyway (events.py), by kind, as the
# writer estimates it without a look at the item: a state item's tuple, its time and
# numbers (its URL is the string its fetch's item counts); a counts tuple and a timing
# tuple where there is one; for a fetch, its tuple, time and URL but not the record, which
# the ledger keeps for the whole crawl. bench/recorder_cost.py measures them against these.
STATE_BYTES = 220
COUNTS_BYTES = 400
TIMING_BYTES = 160
FETCH_BYTES = 250


def event_bytes(event: dict[str, Any]) -> int:
    """The estimate of what an event kept as an object holds: the rare kinds (phase,
    hosts, lint, health, end)."""
    return (
        sys.getsizeof(event)
        + EVENT_OVERHEAD
        + sum(len(v) for v in event.values() if isinstance(v, str | list))
    )


class FlightRing:
    """The last `seconds` (or `max_bytes`) of a crawl's events, and the state before them."""

    def __init__(self, seconds: float = DEFAULT_SECONDS, max_bytes: int = DEFAULT_MB << 20) -> None:
        self.seconds = seconds
        self.max_bytes = max_bytes
        self.start: dict[str, Any] = {}  # the recording's start line (config, wall clock)
        self.filled: list[Item] = []  # the chunk being filled
        self._chunks: deque[list[Item]] = deque([self.filled])
        self._chunk_bytes: deque[int] = deque()  # each whole chunk's bytes
        # And what it does to the state, if `summarize`: a screen that rewinds sets it, so
        # that opening a rewind passes over whole chunks in a few dict updates each (some
        # 0.4 us an item, paid as each chunk closes, where a headless crawl pays nothing).
        self.summarize = False
        self._summaries: deque[ChunkSummary | None] = deque()
        self._closed = 0  # items in the chunks filled so far (kept or let go)
        self._closed_bytes = 0  # the bytes of the whole chunks kept
        self.bytes = 0  # the estimate of what the kept items hold
        self.base = CrawlState()  # the crawl as the events let go left it
        self.dropped = 0  # items let go
        self.chunk = CHUNK  # items a chunk holds (the recorder fills the open one itself)
        # Of the chunk being filled, the items add() counted the bytes of; the others, the
        # state items the recorder puts in itself, are counted as it closes.
        self._sized = 0

    def __len__(self) -> int:
        return self.added - self.dropped

    def add(self, item: Item, size: int) -> None:
        """Keep `item` (events.py), which holds about `size` bytes."""
        chunk = self.filled
        chunk.append(item)
        self.bytes += size
        self._sized += 1
        if len(chunk) >= CHUNK:
            self.close_chunk(item[1])

    def close_chunk(self, now: float) -> None:
        self.bytes += (len(self.filled) - self._sized) * STATE_BYTES
        self._sized = 0
        summary = summarize(self.filled) if self.summarize else None
        self._summaries.append(summary)
        if summary is not None:
            self.bytes += summary.size()
        self._chunk_bytes.append(self.bytes - self._closed_bytes)
        self._closed_bytes = self.bytes
        self.filled = []
        self._chunks.append(self.filled)
        self._closed += CHUNK
        self._trim(now)

    @property
    def added(self) -> int:
        """Items ever added: `added - dropped` are kept."""
        return self._closed + len(self.filled)

    def _trim(self, now: float) -> None:
        """Let go of the oldest whole chunks while over a bound (the newest stays)."""
        while len(self._chunk_bytes) > 1:
            oldest = self._chunks[0]
            too_old = oldest[-1][1] < now - self.seconds
            if not too_old and self.bytes <= self.max_bytes:
                return
            self._chunks.popleft()
            size = self._chunk_bytes.popleft()
            summary = self._summaries.popleft()
            self.bytes -= size
            self._closed_bytes -= size
            self.dropped += len(oldest)
            state_at(self.base, oldest, len(oldest), copy=False, summaries=(summary,),
                     chunk=len(oldest))  # fmt: skip

    @property
    def filling(self) -> int:
        """The bytes of the chunk being filled: the bound is looked at as each chunk fills,
        so the ring holds at most `max_bytes` plus these."""
        return self.bytes - self._closed_bytes

    def items(self, since: int = 0) -> list[Item]:
        """The kept items, oldest first; with `since`, those added after the first
        `since` ever added (the ones a viewer has not seen yet)."""
        skip = max(since - self.dropped, 0)
        out: list[Item] = []
        for chunk in self._chunks:
            if skip >= len(chunk):
                skip -= len(chunk)
                continue
            out.extend(chunk[skip:] if skip else chunk)
            skip = 0
        return out

    def events(self, since: int = 0) -> list[dict[str, Any]]:
        """The kept events as the recording's objects (made now), oldest first."""
        return [to_event(item) for item in self.items(since)]

    def new_points(
        self, seen: int
    ) -> tuple[list[tuple[float, int, str, str | None]], list[tuple[float, int, int, int]], int]:
        """A timeline's feed (engine/observe/timeline.py), read from the items as they are
        kept, without making them objects: each state change, and the counts."""
        states: list[tuple[float, int, str, str | None]] = []
        counts: list[tuple[float, int, int, int]] = []
        added = self.added
        for item in self.items(since=seen):
            kind = item[0]
            if kind == STATE:
                states.append((item[1], item[2], item[3], item[4]))
                c = item[8]
            elif kind == FETCH:
                continue
            else:  # an object already: a rare kind, or any kind a viewer got over a monitor
                event = item[2]
                if event["kind"] == "state":
                    states.append((item[1], event["worker"], event["state"], event.get("url")))
                if "queued" in event:
                    counts.append((item[1], event["queued"], event["unfinished"],
                                   event["done"] + event.get("failed", 0)))  # fmt: skip
                continue
            if c is not None:  # COUNT_KEYS' order: queued 1, unfinished 2, done 4, failed 5
                counts.append((item[1], c[1], c[2], c[4] + c[5]))
        return states, counts, added

    def new_events(self, seen: int) -> tuple[list[dict[str, Any]], int]:
        """A timeline's feed (engine/observe/timeline.py): the events after the first
        `seen`, and how many there have been."""
        added = self.added
        return self.events(since=seen), added

    def events_for(self, url: str) -> list[dict[str, Any]]:
        """What a waterfall of `url`'s last kept fetch is cut from (observe/waterfall.py),
        found from the newest item back and made objects alone: its record, its worker's
        state changes while holding it, and its referrer's last record before its own
        (kept in the stream's order, which a state change's time, stamped when the worker
        entered it, may not follow to the microsecond)."""
        items = self.items()
        i = len(items) - 1
        while i >= 0 and _fetch_url(items[i]) != url:
            i -= 1
        if i < 0:
            return []
        record = _record(items[i])
        worker, referrer = record.get("worker"), record.get("referrer")
        picked = [i]
        j = i - 1
        while j >= 0:
            held = _state_of(items[j])
            if held is not None and held[0] == worker:
                if held[1] != url:
                    break  # before the worker took it
                picked.append(j)
            j -= 1
        j = i - 1
        while referrer is not None and j >= 0:
            if _fetch_url(items[j]) == referrer:
                picked.append(j)
                break
            j -= 1
        return [to_event(items[k]) for k in sorted(picked)]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for chunk in self._chunks:
            for item in chunk:
                yield to_event(item)

    @property
    def first_t(self) -> float:
        for chunk in self._chunks:
            if chunk:
                return float(chunk[0][1])
        return 0.0

    @property
    def last_t(self) -> float:
        for chunk in reversed(self._chunks):
            if chunk:
                return float(chunk[-1][1])
        return 0.0

    def replay(self) -> KeptPast:
        """The kept past as a recording, from the state before its first event: its own
        copy, which the ring's going on does not change."""
        with uncollected():
            return KeptPast(self.start, self.items(), self.base.copy(), self.summaries(), CHUNK)

    def summaries(self) -> list[ChunkSummary | None]:
        """What each whole chunk kept does to the state: the first CHUNK items, the next..."""
        return list(self._summaries)


def _fetch_url(item: Item) -> str | None:
    if item[0] == FETCH:
        return str(item[2].url)
    if item[0] == STATE:
        return None
    event = item[2]
    return str(event["record"]["url"]) if event["kind"] == "fetch" else None


def _record(item: Item) -> dict[str, Any]:
    return item[2].to_dict() if item[0] == FETCH else dict(item[2]["record"])


def _state_of(item: Item) -> tuple[int, str | None] | None:
    """(worker, URL) of a state change; None for any other event."""
    if item[0] == STATE:
        return item[2], item[4]
    if item[0] == FETCH:
        return None
    event = item[2]
    return (event["worker"], event.get("url")) if event["kind"] == "state" else None


# ---- a saved flight: the last minute as a recording file -----------------------------


def prelude(state: CrawlState, t: float) -> list[dict[str, Any]]:
    """Events that put a fresh replay where `state` is, all at time `t`: each worker's
    state, the last host rows and loop health, the warnings on show, and the counts."""
    counts = dict(state.counts)
    out: list[dict[str, Any]] = [{"t": t, "kind": "phase", **counts}]
    for w in state.workers.values():
        out.append({
            "t": t, "kind": "state", "worker": w.id, "state": w.state.value, "url": w.url,
            "pages": w.pages, "paused": w.paused, "retiring": w.retiring,
            "timing": list(w.timing), **counts,
        })  # fmt: skip
    if state.hosts:
        out.append({"t": t, "kind": "hosts", "rows": [asdict(row) for row in state.hosts],
                    "count": state.host_count, "depths": list(state.depths)})  # fmt: skip
    for lint in state.warnings:
        out.append({"t": t, "kind": "lint", "lint": asdict(lint)})
    out.append({"t": t, "kind": "health", "lag_p50": state.lag[0], "lag_p99": state.lag[1],
                "holds": [asdict(hold) for hold in state.holds],
                "verdict": state.verdict})  # fmt: skip
    return out


def flight_lines(ring: FlightRing, seconds: float = FLIGHT_SECONDS) -> Iterator[str]:
    """The last `seconds` of `ring` as a recording's lines: a start line, the prelude that
    sets the scene at the first moment, then the events. Times start at 0 (the start line
    says where in the crawl they were: "offset")."""
    items = ring.items()
    cut = ring.last_t - seconds
    first = next((i for i, item in enumerate(items) if float(item[1]) >= cut), len(items))
    state = state_at(ring.base, items, first, summaries=ring.summaries(), chunk=CHUNK)
    events = [to_event(item) for item in items[first:]]
    offset = float(events[0]["t"]) if events else ring.last_t
    start = dict(ring.start, wall=float(ring.start.get("wall", 0.0)) + offset, offset=offset)
    yield json.dumps(start, ensure_ascii=True)
    for event in prelude(state, 0.0):
        yield json.dumps(event, ensure_ascii=True)
    for event in events:
        shifted = dict(event, t=max(float(event["t"]) - offset, 0.0))
        yield json.dumps(shifted, ensure_ascii=True)


def save_flight(ring: FlightRing, folder: str | Path, why: str, keep: int) -> Path:
    """Write the last minute of `ring` to a new file in `folder` (made if missing), keep
    only the newest `keep` flight files there, and return its path. OSError if it cannot."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    slug = "".join(c if c.isalnum() else "-" for c in why)[:40].strip("-") or "flight"
    path = folder / f"flight-{stamp}-{slug}.jsonl"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"flight-{stamp}-{slug}-{n}.jsonl"
    partial = path.with_name(path.name + ".part")
    with open(partial, "w", encoding="utf-8") as out:
        for line in flight_lines(ring):
            out.write(line + "\n")
    os.replace(partial, path)
    flights = sorted(folder.glob("flight-*.jsonl"), key=lambda p: p.stat().st_mtime)
    for old in flights[: max(len(flights) - keep, 0)]:
        old.unlink(missing_ok=True)
    return path


def default_flight_dir() -> Path:
    """Where saved flights go unless told: the user's cache (XDG_CACHE_HOME honoured)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "crawlscope" / "flights"
