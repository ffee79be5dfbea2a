"""What the TUI is opened on, and how it starts: a live crawl (serving the demo site first
when no root is given) or a recording. The command line builds one of these; the app
only runs it and watches what it yields through the engine's observe protocols."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.contract import CrawlControls, ObservedCrawl
from crawlscope.engine.plan import STAND_IN_ROOT, CrawlPlan
from crawlscope.engine.report import unreachable_roots, write_report
from crawlscope.engine.sites.demo_config import DEMO_FOR_THE_EYE, DemoConfig
from crawlscope.engine.trace.flight_saver import FlightSaver
from crawlscope.engine.trace.replay import ReplayedCrawl

if TYPE_CHECKING:
    # Only a monitored crawl's plan makes one (and its aiohttp web server): 22 ms of the
    # TUI's start otherwise.
    from crawlscope.engine.remote.monitor import Monitor

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
    """Crawl `roots` (none: the built-in demo site, served in-process) on this loop.

    The command line hands over its whole `plan` (engine/plan.py); without one, the
    plan is made from the few fields below, as tests and benchmarks give them."""

    roots: tuple[str, ...] = ()
    make_config: ConfigMaker = default_config  # the config from the roots to crawl
    demo: DemoConfig = DEMO_FOR_THE_EYE
    paused: bool = False  # start with the crawl paused
    slowmo: float = 0.0
    record: str | None = None  # write the crawl's event trace to this file
    plan: CrawlPlan | None = None
    crawler: Crawler | None = field(default=None, init=False)
    monitor: Monitor | None = field(default=None, init=False)
    flight: FlightSaver | None = field(default=None, init=False)
    # (root, why) for each root, when the crawl ended with none of them reached.
    unreachable: list[tuple[str, str]] = field(default_factory=list, init=False)

    @property
    def monitored(self) -> bool:
        """Whether viewers can watch this crawl (`--monitor`)."""
        return self.plan is not None and self.plan.monitor is not None

    async def run(self, started: Started, ready: Ready | None = None) -> None:
        """Open the plan, tell `started`, await `ready`, crawl."""
        plan = self.plan or CrawlPlan(
            self.make_config(self.roots or (STAND_IN_ROOT,)), crawl_demo=not self.roots,
            demo=self.demo, paused=self.paused, slowmo=self.slowmo, record=self.record,
        )  # fmt: skip
        async with plan.open() as crawl:
            self.crawler, self.monitor, self.flight = crawl.crawler, crawl.monitor, crawl.flight
            if crawl.flight is not None:
                crawl.flight.ring.summarize = True  # this screen can rewind: see FlightRing
            started(crawl.observed, crawl.controls, crawl.demo_url)
            if ready is not None:
                await ready()
            await crawl.run()
            self.unreachable = unreachable_roots(crawl.crawler)
            if crawl.crawler.ledger.faults:
                raise crawl.crawler.ledger.faults[0]  # why it stopped: say --record's file

    def write_report(self, out: TextIO) -> bool:
        """Print the crawl's report (if it started); True if there was one."""
        crawler = self.crawler
        if crawler is None or crawler.t0 is None:
            return False
        write_report(crawler, out, flight=self.flight)
        return True


@dataclass(frozen=True)
class Recording:
    """A recording to play instead of a crawl: nothing is fetched, the keys move time."""

    replay: ReplayedCrawl
    name: str = ""  # how the status line names it (the file's name)
    paused: bool = False  # open paused at the start
