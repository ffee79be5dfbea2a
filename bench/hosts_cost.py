"""What the per-host figures cost a crawl: the same headless crawl of the demo site with
the host book as the engine keeps it, and with one that keeps nothing, side by side in
one run (interleaved rounds, so a machine that slows down slows both).

    python -m bench.hosts_cost [--pages 3000] [--rounds 5] [--tasks 100]

Turning the figures off is this benchmark's doing alone (a HostBook whose counters do
nothing): no user option turns them off. Blocking still works with it (`take` parks),
so the crawl is the same crawl.
"""

from __future__ import annotations

import asyncio
import time

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.frontier import Lease
from crawlscope.engine.hosts.figures import HostBook
from crawlscope.engine.sites.demo import DemoConfig, DemoServer

from .common import median, parser


class NoFigures(HostBook):
    """The host book with every counter off: what a crawl would cost without it."""

    def queued(self, url: str) -> None:
        pass

    def take(self, lease: Lease) -> bool:
        return False

    def answered(self, origin: str, seconds: float) -> None:
        pass

    def no_answer(self, origin: str) -> None:
        pass

    def finished(self, url: str, failed: bool, depth: int = 0) -> None:
        pass


async def one_crawl(url: str, tasks: int, figures: bool) -> float:
    """Pages a second of one crawl, its snapshot taken 15 times a second as a screen would."""
    crawler = Crawler(CrawlConfig(roots=(url,), max_tasks=tasks))
    if not figures:
        crawler.host_book = NoFigures()
    crawling = asyncio.ensure_future(crawler.crawl())
    while not crawling.done():
        crawler.snapshot((), rows=False)
        await asyncio.sleep(1 / 15)
    await crawling
    pages = len(crawler.ledger.done) + len(crawler.ledger.failed)
    return pages / crawler.elapsed


async def run(pages: int, rounds: int, tasks: int) -> None:
    async with DemoServer(DemoConfig(pages=pages, latency=0.0)) as site:
        await one_crawl(site.url, tasks, True)  # warm up: imports, first connections
        rates: dict[bool, list[float]] = {True: [], False: []}
        started = time.monotonic()
        for n in range(rounds):
            for figures in (n % 2 == 0, n % 2 == 1):  # alternate which goes first
                rates[figures].append(await one_crawl(site.url, tasks, figures))
        ratios = [on / off for on, off in zip(rates[True], rates[False], strict=True)]
        print(
            f"{pages} pages, {tasks} workers, {rounds} rounds in {time.monotonic() - started:.0f} s"
        )
        print(f"with the host figures   : {median(rates[True]):8.1f} pages/s (median)")
        print(f"without                 : {median(rates[False]):8.1f} pages/s (median)")
        print(f"ratio (paired, median)  : {median(ratios):.3f}x  rounds: "
              + " ".join(f"{r:.3f}" for r in ratios))  # fmt: skip


def main() -> None:
    p = parser(__doc__ or "")
    p.add_argument("--pages", type=int, default=3000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--tasks", type=int, default=100)
    args = p.parse_args()
    if args.quick:
        args.pages, args.rounds = 200, 1
    asyncio.run(run(args.pages, args.rounds, args.tasks))


if __name__ == "__main__":
    main()
