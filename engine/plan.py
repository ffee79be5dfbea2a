"""One crawl, described once and opened in one place.

A `CrawlPlan` says what a crawl is made of: its roots (none: the demo site, served on
this loop), its config, where its frontier lives (in memory, a SQLite state file, or a
Redis shared with other processes), the files it writes (outputs, a recording), a
monitor for viewers, and how it starts (paused, in slow motion). Every command that
crawls builds one and opens it:

    async with plan.open() as crawl:
        await crawl.run()

`open()` hands back the crawler (what a screen observes and steers) with everything
attached, and closes all it opened on every way out: the crawl's end, an error, a
cancel, Ctrl-C. The command line turns options into a plan; the engine knows no options.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .config import CrawlConfig
from .exchange.feeds import FeedWriter, check_formats, open_feed
from .observe.contract import CrawlControls, ObservedCrawl
from .records import STDOUT, OutputError
from .remote.spot import MonitorSpot
from .sites.demo_config import DemoConfig
from .trace.flight import FlightOptions
from .trace.flight_saver import FlightSaver
from .trace.recording import Recorder

if TYPE_CHECKING:
    # Imported where a crawl is opened, and only when it needs them: a --procs parent
    # makes a plan but never opens it, and the crawler (aiohttp, BeautifulSoup) would cost
    # it a quarter of a second; a crawl without a monitor or the demo site never serves.
    from .crawler import Crawler
    from .remote.monitor import Monitor

# A root that stands in while the demo site's own URL is not known yet (its port is the
# kernel's choice): the config is checked with it before anything is served.
STAND_IN_ROOT = "http://127.0.0.1/"


class PlanError(Exception):
    """A plan that cannot be opened; the message is one line for the user."""


class CrawlEnded(PlanError):
    """The shared crawl the plan would join has finished already: nothing to do."""


@dataclass(frozen=True)
class SharedFrontier:
    """The frontier of crawl `crawl_id` in the Redis at `url`, shared by every process
    that names it (engine/cluster)."""

    url: str
    crawl_id: str
    lease: float
    patience: float
    fresh: bool = False  # forget what Redis holds of this crawl first


@dataclass
class CrawlPlan:
    """What to crawl and with what; `open()` builds it."""

    config: CrawlConfig  # with no roots of the plan's own, its roots are STAND_IN_ROOT
    crawl_demo: bool = False  # serve the demo site and crawl it instead of config's roots
    demo: DemoConfig = field(default_factory=DemoConfig)
    state: str | None = None  # keep the frontier in this SQLite file (resumed if it exists)
    shared: SharedFrontier | None = None
    outputs: Sequence[str] = ()  # a record per fetch and per filtered URL; "-" is stdout
    feed_format: str | None = None
    record: str | None = None  # the event trace, for a replay
    monitor: MonitorSpot | None = None
    paused: bool = False
    slowmo: float = 0.0
    flight: FlightOptions = field(default_factory=FlightOptions)

    def check(self) -> None:
        """PlanError, in one line, for what can be known wrong before anything opens:
        the parts that cannot go together, output formats, files that cannot be
        written, a state file that is not one or that another process has."""
        if self.state and self.shared:
            raise PlanError("--state keeps a crawl of one process; with --redis, Redis keeps it")
        try:
            check_formats(list(self.outputs), self.feed_format)
        except ValueError as exc:
            raise PlanError(str(exc)) from None
        for path in (*self.outputs, *([self.record] if self.record else [])):
            if path != STDOUT:
                check_writable(path)
        if self.state:
            from .cluster.sqlite_state import StateError, check_state_file

            try:
                check_state_file(self.state)
            except StateError as exc:
                raise PlanError(str(exc)) from None

    async def look(self) -> None:
        """With a shared frontier: PlanError now if its Redis cannot be used, CrawlEnded
        if its crawl (or the --state file's) is over (and not to be started afresh).
        Nothing there is changed: for a command that must know before it draws; open()
        looks again, and acts."""
        if self.state:
            from .cluster.sqlite_state import state_finished

            ended = state_finished(self.state, self.config.root_urls)
            if ended is not None:
                raise CrawlEnded(ended)
        if self.shared is None:
            return
        from .cluster.lookup import look_up
        from .cluster.problems import RedisProblem

        shared = self.shared
        try:
            found = await look_up(shared.url, shared.crawl_id, self.config.root_urls)
        except RedisProblem as exc:
            raise PlanError(str(exc)) from None
        if found.finished and found.roots_seen and not shared.fresh:
            raise CrawlEnded(found.finished_line(shared.crawl_id))

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[OpenCrawl]:
        """The crawl, built and ready to run; everything it opened closed on leaving."""
        async with contextlib.AsyncExitStack() as stack:
            if self.monitor is not None:
                stack.callback(self.monitor.sock.close)  # ours even if no Monitor takes it
            config, demo_url = self.config, None
            if self.crawl_demo:
                from .sites.demo import DemoServer  # aiohttp's web server: only for the demo

                server = await stack.enter_async_context(DemoServer(self.demo))
                demo_url = server.url
                config = dataclasses.replace(config, roots=(demo_url,))
            crawler = await self._crawler(config)
            crawl = OpenCrawl(crawler, demo_url)
            # The frontier is closed by crawl(); one never run is closed here (a state
            # file's lock, a Redis connection).
            stack.push_async_callback(crawl.close_frontier)
            stack.callback(crawl.close_files)
            crawl.files.extend(self._files(crawl))
            flushes = getattr(crawler.q, "before_send", None)
            if flushes is not None:
                # Each output's lines on disk before the frontier counts their pages done.
                flushes.extend(flush for f in crawl.files if (flush := getattr(f, "flush", None)))
            crawler.set_slowmo(self.slowmo)
            if self.paused:
                crawler.pause_all()
            if self.monitor is not None:
                from .remote.monitor import Monitor  # aiohttp's web server: only when asked

                spot = self.monitor
                monitor = Monitor(
                    crawler, crawler, spot.sock, token=spot.token, limits=spot.limits,
                    past=crawl.flight.ring if crawl.flight is not None else None,
                )  # fmt: skip
                crawl.monitor = await stack.enter_async_context(monitor)
            # First on the way out: a crawl still running stops before what it uses closes.
            stack.push_async_callback(crawl.stop_and_wait)
            yield crawl

    async def _crawler(self, config: CrawlConfig) -> Crawler:
        if self.shared is not None:
            from .cluster.lookup import before_crawling
            from .cluster.node import redis_crawler
            from .cluster.problems import RedisProblem

            shared = self.shared
            # One look first: a Redis that cannot be used, or a crawl that has ended, is
            # one line now, not a crawl that waits for ever or crawls nothing.
            try:
                ended = await before_crawling(
                    shared.url, shared.crawl_id, config.root_urls, shared.fresh
                )
            except RedisProblem as exc:
                raise PlanError(str(exc)) from None
            if ended is not None:
                raise CrawlEnded(ended)
            return redis_crawler(config, shared.url, shared.crawl_id, shared.lease, shared.patience)
        from .crawler import Crawler

        crawler = Crawler(config)
        if self.state:
            from .cluster.sqlite_state import StateError, StateFinished, keep_state

            try:
                keep_state(crawler, self.state)
            except StateFinished as exc:  # run again after it finished: nothing to do
                raise CrawlEnded(str(exc)) from None
            except StateError as exc:  # another process took it since it was checked
                raise PlanError(str(exc)) from None
        return crawler

    def _files(self, crawl: OpenCrawl) -> list[FeedWriter | Recorder]:
        """The outputs and the recorder, listening; none left open if one cannot be.
        The recorder is always there: it keeps the flight (engine/trace/flight.py), and with
        --record writes the same events to the file too."""
        crawler = crawl.crawler
        files: list[FeedWriter | Recorder] = []
        try:
            for path in self.outputs:
                writer = open_feed(path, self.feed_format)
                files.append(writer)
                crawler.ledger.record_listeners.append(writer)
                crawler.ledger.filtered_listeners.append(writer)  # one line per URL seen
            ring = self.flight.ring()
            for tell in getattr(crawler.q, "on_ring", ()):
                tell(ring)
            files.append(Recorder(crawler, self.record, ring))
            crawl.flight = FlightSaver(ring, self.flight)
            crawler.health.lint_listeners.append(crawl.flight.on_lint)
        except OSError as exc:
            for opened in files:
                with contextlib.suppress(OutputError):
                    opened.close()
            raise PlanError(f"cannot write output: {exc}") from None
        return files


def check_writable(path: str, what: str = "output") -> None:
    """PlanError if `path` cannot be opened for writing. Opened to append, so a file that
    is there is not emptied by the look (the crawl empties it when it starts)."""
    try:
        with open(path, "a", encoding="utf-8"):
            pass
    except OSError as exc:
        raise PlanError(f"cannot write {what}: {exc}") from None


@dataclass
class OpenCrawl:
    """A plan opened: the crawler, with its files, frontier and monitor attached."""

    crawler: Crawler
    demo_url: str | None = None  # the demo site's URL, when it is the crawl's root
    monitor: Monitor | None = None
    files: list[FeedWriter | Recorder] = field(default_factory=list)
    flight: FlightSaver | None = None  # the flight recorder's ring, and its saves
    _running: asyncio.Task[None] | None = field(default=None, init=False)

    @property
    def observed(self) -> ObservedCrawl:
        return self.crawler

    @property
    def controls(self) -> CrawlControls:
        return self.crawler

    async def run(self) -> None:
        """Crawl to the end or to a stop; the files are closed when it returns, so the
        report that follows can say whether their last lines went."""
        try:
            await self.crawler.crawl()
        finally:
            self.close_files()

    def start(self) -> asyncio.Task[None]:
        """run() as a task of its own, for a caller that does other things meanwhile;
        leaving the plan's block stops it and waits for it."""
        self._running = asyncio.create_task(self.run(), name="crawl")
        return self._running

    async def stop_and_wait(self) -> None:
        if self._running is None:
            return
        self.crawler.stop()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._running

    def close_files(self) -> None:
        """Close the outputs and the recorder (once). A last write that fails is a fault
        of the crawl, as one during it is."""
        files, self.files = self.files, []
        for file in files:
            try:
                file.close()
            except OutputError as exc:
                self.crawler.ledger.report_fault(exc)

    async def close_frontier(self) -> None:
        if self.crawler.t0 is None:  # crawl() never ran, so never closed it
            await self.crawler.q.close()
