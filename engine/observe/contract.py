"""The contract between a crawl and whoever watches or steers it.

A viewer depends on these protocols, never on a class: the live `Crawler` satisfies the
first two; a recording played back (`trace.replay.ReplayedCrawl`) satisfies the first,
and `PlayedBack`, which moves it in time; and so will a crawl in another process or a
whole cluster, with controls where steering is allowed. A source that cannot be steered
simply offers no `CrawlControls`, and a screen greys out the keys by asking for them,
not by checking what class it has.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from typing import Protocol

from ..config import CrawlConfig
from ..records import FetchRecord
from ..redirects import Chain
from .snapshot import Snapshot
from .worker_detail import WorkerDetail


class ObservedCrawl(Protocol):
    """What every panel reads: one snapshot a frame, the newest fetches, the chains."""

    @property
    def config(self) -> CrawlConfig: ...

    def snapshot(self, where_for: Container[int] | None = None, rows: bool = True) -> Snapshot:
        """The crawl now. `where_for` names the workers whose "suspended at" to read
        (None: every worker); reading it costs a walk of the task, so a screen asks only
        for the rows it shows, and for none in a frame that leaves its rows as they were
        (a source that reads it in another process keeps the last rows asked for). With
        `rows` False the workers may be left out (`workers` empty; the counts are all
        there): for a frame that draws only the counts."""
        ...

    def recent_fetches(self) -> Sequence[FetchRecord]:
        """The latest records, oldest first (a bounded window, not the whole crawl)."""
        ...

    def chain_preview(self, limit: int, hops: int) -> tuple[list[Chain], int]:
        """The first `limit` redirect chains, each cut to `hops` hops, and how many chains
        there are: what a panel can draw, at a cost that does not grow with the crawl."""
        ...


class WorkerDetails(Protocol):
    """A source that can show one worker in full: its whole await chain and histograms
    (the live crawler; a recording keeps only each worker's summary)."""

    def worker_detail(self, worker_id: int) -> WorkerDetail | None: ...


class CrawlControls(Protocol):
    """Steering a crawl: what the keys p, space, c, a, -, s and q do, and the hosts
    panel's."""

    def pause_all(self) -> None: ...

    def resume_all(self) -> None: ...

    def pause(self, worker_id: int) -> bool: ...

    def resume(self, worker_id: int) -> bool: ...

    def cancel_worker(self, worker_id: int) -> bool: ...

    def add_worker(self) -> object: ...

    def remove_worker(self, worker_id: int | None = None) -> object: ...

    def set_slowmo(self, seconds: float) -> None: ...

    def stop(self) -> None: ...

    # The hosts panel's keys, on one origin (a HostView's): its URLs wait while it is
    # blocked, counted as queued; a delay or a limit set here replaces --delay or
    # --per-host for that host alone (a robots.txt Crawl-delay still applies).

    def block_host(self, origin: str) -> bool: ...

    def unblock_host(self, origin: str) -> bool: ...

    def set_host_delay(self, origin: str, seconds: float) -> None: ...

    def set_host_limit(self, origin: str, limit: int) -> None: ...


class PlayedBack(ObservedCrawl, Protocol):
    """A crawl played back from a recording: watched like any other, and moved in time
    by the transport keys and the scrubber."""

    position: float  # seconds of the crawl's clock the screen shows
    duration: float  # the recording's length, on the same clock

    @property
    def events(self) -> Sequence[object]:
        """Everything recorded, in order: what goto's index counts."""
        ...

    @property
    def index(self) -> int:
        """How many events the screen shows the effect of."""
        ...

    def seek(self, t: float) -> None:
        """Show the crawl as it was at `t` seconds (clamped to the recording)."""
        ...

    def goto(self, index: int) -> None:
        """Show the crawl as it was after its first `index` events (clamped)."""
        ...
