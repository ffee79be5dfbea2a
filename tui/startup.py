"""What the TUI is opened on, and how it starts: a live crawl (serving the demo site first
when no root is given) or a recording. The command line builds one of these; the app
only runs it and watches what it yields through the engine's observe protocols."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from crawlscope.engine.cluster.sqlite_state import keep_state
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.feeds import FeedWriter
from crawlscope.engine.observe import CrawlControls, ObservedCrawl
from crawlscope.engine.remote.monitor import DEFAULT_LIMITS, Monitor, ViewerLimits
from crawlscope.engine.report import unreachable_roots, write_report
from crawlscope.engine.sites.demo import DemoServer
from crawlscope.engine.sites.demo_config import DEMO_FOR_THE_EYE, DemoConfig
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl

ConfigMaker = Callable[[Sequence[str]], CrawlConfig]
# Told once the crawl is built: what to draw, how to steer it, and the demo site's URL
# (None when the crawl has roots of its own).
Started = Callable[[ObservedCrawl, CrawlControls, str | None], None]
# Awaited after that and before the crawl starts: what watches it gets ready.
Ready = Callable[[], Awaitable[None]]


def default_config(roots: Sequence[str]) -> CrawlConfig:
    return CrawlConfig(roots=tuple(roots))


@dataclass
class LiveCrawl:
    """Crawl `roots` (none: the built-in demo site, served in-process) on this loop."""

    roots: tuple[str, ...] = ()
    make_config: ConfigMaker = default_config  # the config from the roots to crawl
    demo: DemoConfig = DEMO_FOR_THE_EYE
    paused: bool = False  # start with the crawl paused
    slowmo: float = 0.0
    record: str | None = None  # write the crawl's event trace to this file
    state: str | None = None  # keep the frontier in this SQLite file (resumed if it exists)
    # --output files, opened already (so a bad path failed before the screen opened);
    # each gets a line per record and per filtered URL, and is closed when the crawl ends.
    feeds: Sequence[FeedWriter] = ()
    # Serve the crawl to viewers (`--monitor`) on this listening socket, with this token.
    monitor_socket: socket.socket | None = None
    monitor_token: str | None = None
    monitor_limits: ViewerLimits = DEFAULT_LIMITS
    crawler: Crawler | None = field(default=None, init=False)
    monitor: Monitor | None = field(default=None, init=False)
    # (root, why) for each root, when the crawl ended with none of them reached.
    unreachable: list[tuple[str, str]] = field(default_factory=list, init=False)

    async def run(self, started: Started, ready: Ready | None = None) -> None:
        """Serve the demo site if needed, build the crawler, tell `started`, await
        `ready`, crawl."""
        async with contextlib.AsyncExitStack() as stack:
            roots, demo_url = self.roots, None
            if not roots:
                server = await stack.enter_async_context(DemoServer(self.demo))
                roots, demo_url = (server.url,), server.url
            crawler = Crawler(self.make_config(roots))
            if self.state:
                keep_state(crawler, self.state)
            crawler.set_slowmo(self.slowmo)
            for feed in self.feeds:
                crawler.ledger.record_listeners.append(feed)
                crawler.ledger.filtered_listeners.append(feed)
                stack.callback(feed.close)
            if self.record:
                # Closed on the way out however the crawl ends, so the file has its end
                # line and replays to the last state shown.
                stack.callback(Recorder(crawler, self.record).close)
            if self.paused:
                crawler.pause_all()
            if self.monitor_socket is not None:
                monitor = Monitor(
                    crawler, crawler, self.monitor_socket, token=self.monitor_token,
                    limits=self.monitor_limits,
                )  # fmt: skip
                self.monitor = await stack.enter_async_context(monitor)
            self.crawler = crawler
            started(crawler, crawler, demo_url)
            if ready is not None:
                await ready()
            await crawler.crawl()
            self.unreachable = unreachable_roots(crawler)
            if crawler.ledger.faults:
                raise crawler.ledger.faults[0]  # why it stopped: a listener failed, say --record's

    def write_report(self, out: TextIO) -> bool:
        """Print the crawl's report (if it started); True if there was one."""
        crawler = self.crawler
        if crawler is None or crawler.t0 is None:
            return False
        write_report(crawler, out)
        return True


@dataclass(frozen=True)
class Recording:
    """A recording to play instead of a crawl: nothing is fetched, the keys move time."""

    replay: ReplayedCrawl
    name: str = ""  # how the status line names it (the file's name)
    paused: bool = False  # open paused at the start
