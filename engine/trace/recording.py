"""Record a crawl as it happens: one event per state change, per fetch, per phase.

The one writer of the crawl's event stream. Its events go to the flight recorder's ring
(flight.py: the recent past, always kept in memory) and, with `--record`, to a file as one
JSON line each: one format, so a recording, a saved flight and a rewind are the same
thing. A recording holds everything the screen shows, so a crawl can be replayed later
with no server at all (replay.py). Times are seconds since the crawl started.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..exchange.config_json import config_to_plain
from ..hosts.figures import depth_histogram, host_rows_of
from ..lints.lint import Lint
from ..observe.snapshot import HOST_ROWS, HostView
from ..observe.workers import Worker
from ..records import FetchRecord, LineFile
from .events import COUNT_KEYS, FETCH, OTHER, STATE, Item, to_event
from .flight import COUNTS_BYTES, FETCH_BYTES, TIMING_BYTES, FlightRing, event_bytes

if TYPE_CHECKING:
    from ..crawler import Crawler

FORMAT_VERSION = 1
# Seconds of the crawl between two "hosts" lines at most: the rows move with every
# fetch, and a line for each would weigh more than the fetches themselves.
HOSTS_EVERY = 0.5
# Seconds of the crawl a worker's timing summary is kept before it is worked out again
# (and written): its quantiles walk every bucket, at each state change the recorder's
# largest cost; a replay keeps the last one written.
# The lines a recording keeps of URLs no worker fetched (filtered, unfetched), at most.
MAX_LEFT = 50_000
TIMING_EVERY = 0.25


class Lines(Protocol):
    """Where a recording's lines go: a file of its own (LineFile), or a lecture's
    recording, which keeps each stage-3 crawl inside it (engine/lecture/recording.py)."""

    @property
    def path(self) -> str: ...

    @property
    def closed(self) -> bool: ...

    def write_line(self, line: str) -> None: ...

    def close(self) -> None: ...


class Recorder:
    """Attach to a crawler before crawl(); `close()` after it, which writes the end line.

    Events go to `ring` (if given) and to the file at `path` (if given). Lines reach the
    file within LineFile's FLUSH_AFTER, whole. A write that fails raises OutputError from
    the listener, once (the crawler's listeners turn that into a fault that stops the
    crawl); the lines after it are dropped.
    """

    def __init__(
        self, crawler: Crawler, path: str | Path | Lines | None = None,
        ring: FlightRing | None = None,
    ) -> None:  # fmt: skip
        self.crawler = crawler
        self.ring = ring
        self._file: Lines | None = LineFile(path) if isinstance(path, str | Path) else path
        self._closed = False
        self._t0: float | None = None
        self._last_phase = ""
        self._hosts_at = -HOSTS_EVERY  # when the host rows were last looked at
        self._hosts: tuple[HostView, ...] = ()  # the rows it held (none, at first)
        self._held: dict[int, str | None] = {}  # the URL each worker's last event held
        self._timings: dict[int, float] = {}  # when each worker's timing was last written
        self._left = 0  # "unfetched" and "filtered" lines written (_write_left)
        start = {"kind": "start", "version": FORMAT_VERSION, "wall": time.time(),
                 "config": config_to_plain(crawler.config)}  # fmt: skip
        if ring is not None:
            ring.start = start
        if self._file is not None:
            self._file.write_line(json.dumps(start, ensure_ascii=True))
        self._read_counts = crawler.counts  # the counts a frame shows, in COUNT_KEYS' order
        # The crawler's own hook when it is free (one recorder a crawl, as a plan makes);
        # a second recorder listens as anyone else does.
        if crawler.tap is None:
            crawler.tap = self.on_state
        else:
            crawler.state_listeners.append(self.on_state)
        crawler.ledger.record_listeners.append(self.on_record)
        if self._file is not None:
            # URLs no worker fetched go to a file alone (_write_left): a ring-only recorder
            # that listened would have the ledger make a record of every filtered link
            # for nothing.
            crawler.ledger.unfetched_listeners.append(self.on_unfetched)
            crawler.ledger.filtered_listeners.append(self.on_filtered)
        crawler.health.lint_listeners.append(self.on_lint)
        crawler.health.check_listeners.append(self.on_check)

    def _origin(self) -> float:
        if self._t0 is None:
            self._t0 = self.crawler.t0 if self.crawler.t0 is not None else time.monotonic()
        return self._t0

    def _now(self) -> float:
        # The origin first: when this call sets it, a clock read before would be below it,
        # and a line with a time below 0 makes the recording unloadable.
        origin = self._origin()
        return time.monotonic() - origin

    def _counts_event(self) -> dict[str, Any]:
        """The counts a frame shows, by name."""
        return dict(zip(COUNT_KEYS, self._read_counts(), strict=True))

    @property
    def path(self) -> str:
        return self._file.path if self._file is not None else ""

    def _write(self, event: dict[str, Any]) -> None:
        """An event that is an object already (phase, hosts, lint, health, end)."""
        self._keep((OTHER, event["t"], event), event_bytes(event))

    def _keep(self, item: Item, size: int) -> None:
        if self.ring is not None:
            self.ring.add(item, size)
        if self._file is not None:
            # ensure_ascii: a hostile URL cannot break the line or the terminal that cats it.
            self._file.write_line(json.dumps(to_event(item), ensure_ascii=True))

    def on_state(self, w: Worker | None) -> None:
        if w is None:
            event: dict[str, Any] = {"t": self._now(), "kind": "phase"}
            event.update(self._counts_event())
            self._write(event)
            self._note_hosts(event["t"], True)
            return
        # This runs at every state change of every worker, always (the flight recorder),
        # so it is written flat, each lookup once: bench/recorder_cost.py measures it.
        # The time is when the crawler says the worker entered the state, not a second
        # reading of the clock: a parse thread can hold the GIL between the two for
        # milliseconds, and the replay's "for" column would be off by as much. (Before the
        # crawl's clock starts, the recording's own starts here: not below 0.)
        t0 = self._t0
        if t0 is None:
            t0 = self._origin()
        t = w.since - t0
        if t < 0.0:
            t = 0.0
        url = w.url
        wid = w.id
        # What a replay keeps from the event before when an event leaves it out: the
        # timing, and the counts. The counts move when a worker takes or lets go of a URL
        # (a fetch moves them too, and its worker's next event, in the same pass of the
        # loop, holds another URL or none): only then are they read, every time, so that
        # a replay shows the same counts at the same moment as the crawl did.
        ring = self.ring
        counts = None
        held = self._held
        if held.get(wid) is not url:
            held[wid] = url
            counts = self._read_counts()
            if ring is not None:
                ring.bytes += COUNTS_BYTES
        timing = None
        timings = self._timings
        if t - timings.get(wid, -TIMING_EVERY) >= TIMING_EVERY:
            timings[wid] = t
            timing = tuple(w.timing.summary())  # a plain tuple: the collector lets it be
            if ring is not None:
                ring.bytes += TIMING_BYTES
        # PAUSED | RETIRING as bits (events.py), from the two booleans.
        item = (STATE, t, wid, w.state._value_, url, w.pages, w.paused | w.retiring << 1,
                timing, counts)  # fmt: skip
        if ring is not None:
            # ring.add, written out; the item's own bytes are counted as its chunk closes.
            chunk = ring.filled
            chunk.append(item)
            if len(chunk) >= ring.chunk:
                ring.close_chunk(t)
        if self._file is not None:
            self._file.write_line(json.dumps(to_event(item), ensure_ascii=True))

    def _note_hosts(self, t: float, now: bool = False) -> None:
        """A "hosts" line with the snapshot's host rows, if they changed and HOSTS_EVERY
        passed (or `now`: at a change of phase and at the end)."""
        if not now and t - self._hosts_at < HOSTS_EVERY:
            return
        # Looked at now, written or not: rows that stay the same are not built again at
        # every fetch until they change.
        self._hosts_at = t
        rows, count = host_rows_of(self.crawler, HOST_ROWS)
        if rows == self._hosts:
            return
        self._hosts = rows
        plain = [asdict(row) for row in rows]
        depths = list(depth_histogram(self.crawler.host_book.depths))
        self._write({"t": t, "kind": "hosts", "rows": plain, "count": count, "depths": depths})

    def on_record(self, record: FetchRecord) -> None:
        t0 = self._t0
        if t0 is None:
            t0 = self._origin()  # before the crawl's clock starts
        t = time.monotonic() - t0
        extra: dict[str, Any] | None = None
        if record.next_url is not None:
            extra = {"budget_left": record.url not in self.crawler.ledger.redirects.limited}
            # What became of the target, if it will never have a record of its own.
            target = record.next_url
            if target in self.crawler.ledger.filtered:
                extra["target"] = "filtered"
            elif target in self.crawler.ledger.unfetched:
                extra["target"] = "unfetched"
        # The record itself, shared with the ledger that keeps it: made an object only
        # when read (events.py). No counts: the worker's next state change, in the same
        # pass of the loop, reads them (its URL differs from this one). Once a fetch,
        # always: written out as on_state is.
        item = (FETCH, t, record, extra)
        ring = self.ring
        if ring is not None:
            ring.add(item, FETCH_BYTES + len(record.url))
        if self._file is not None:
            self._file.write_line(json.dumps(to_event(item), ensure_ascii=True))
        if t - self._hosts_at >= HOSTS_EVERY:
            self._note_hosts(t)

    def on_unfetched(self, left: tuple[str, int, int, str | None]) -> None:
        """A URL left unfetched by --max-depth or --max-pages: what `crawlscope why` says."""
        url, _max_redirect, depth, referrer = left
        max_depth = self.crawler.config.max_depth
        why = "max-depth" if max_depth and depth > max_depth else "max-pages"
        self._write_left({"t": self._now(), "kind": "unfetched", "url": url, "depth": depth,
                          "referrer": referrer, "why": why})  # fmt: skip

    def on_filtered(self, record: FetchRecord) -> None:
        """A URL the rules leave alone (scope, --exclude, robots.txt), with the reason."""
        self._write_left({"t": self._now(), "kind": "filtered", "url": record.url,
                          "reason": record.filtered, "depth": record.depth,
                          "referrer": record.referrer})  # fmt: skip

    def _write_left(self, event: dict[str, Any]) -> None:
        """A URL no worker fetched, for `crawlscope why`: to the file alone, and the first
        MAX_LEFT of them. One page can link 200,000 URLs past --max-pages: in the flight
        recorder's ring they would push out the minutes it keeps, in a file grow it past
        what a replay loads."""
        if self._file is None or self._left >= MAX_LEFT:
            return  # (a ring-only recorder does not listen for these at all)
        self._left += 1
        self._file.write_line(json.dumps(event, ensure_ascii=True))

    def on_lint(self, lint: Lint) -> None:
        """A warning, at the moment it was raised: a replay shows it from then on."""
        self._write({"t": self._now(), "kind": "lint", "lint": dataclasses.asdict(lint)})

    def on_check(self, _: None) -> None:
        """Loop health, once a second: a replay shows the figures of the moment it shows."""
        p50, p99, holds = self.crawler.health.figures()
        self._write({"t": self._now(), "kind": "health", "lag_p50": p50, "lag_p99": p99,
                     "holds": [dataclasses.asdict(hold) for hold in holds],
                     "verdict": self.crawler.health.diagnosis.verdict.line})  # fmt: skip

    def close(self) -> None:
        """Write the end line and close; raises OutputError if a failure is still untold."""
        if self._closed or (self._file is not None and self._file.closed):
            return
        self._closed = True
        # The file is closing: nothing more to hear.
        if self.crawler.tap == self.on_state:
            self.crawler.tap = None
        if self.on_state in self.crawler.state_listeners:
            self.crawler.state_listeners.remove(self.on_state)
        if self.on_record in self.crawler.ledger.record_listeners:
            self.crawler.ledger.record_listeners.remove(self.on_record)
        if self.on_unfetched in self.crawler.ledger.unfetched_listeners:
            self.crawler.ledger.unfetched_listeners.remove(self.on_unfetched)
        if self.on_filtered in self.crawler.ledger.filtered_listeners:
            self.crawler.ledger.filtered_listeners.remove(self.on_filtered)
        for listeners, listener in (
            (self.crawler.health.lint_listeners, self.on_lint),
            (self.crawler.health.check_listeners, self.on_check),
        ):
            if listener in listeners:
                listeners.remove(listener)  # type: ignore[arg-type]
        try:
            if self.crawler.t0 is not None:
                self.on_check(None)  # loop health at the end, however short the crawl
            event: dict[str, Any] = {"t": self._now(), "kind": "end"}
            event.update(self._counts_event())
            self._note_hosts(event["t"], now=True)
            self._write(event)
        finally:
            if self._file is not None:
                self._file.close()
