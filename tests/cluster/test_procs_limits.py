"""Limits of a crawl over processes hold for the whole crawl, not each process: counted
where the pages are served."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest
from aiohttp import web
from redis_support import fetched
from site_thread import SiteThread
from test_procs import accounting_line, procs_crawl


class CountingSite(SiteThread):
    """Linked pages, counting page GETs, the most it answered at once, and when each
    began. `tree`: page n links to pages n*links+1 ... n*links+links, so each page has
    one depth."""

    first_path = "/page/0"

    def __init__(
        self, pages: int = 2000, links: int = 8, tree: bool = False, linger: float = 0.0
    ) -> None:
        super().__init__()
        self.pages, self.links, self.tree, self.linger = pages, links, tree, linger
        self.gets = 0
        self.now = self.most = 0
        self.starts: list[float] = []

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/page/{n}", self.page)

    async def page(self, request: web.Request) -> web.Response:
        self.gets += 1
        self.starts.append(time.monotonic())
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(self.linger)
        finally:
            self.now -= 1
        n = int(request.match_info["n"])
        if self.tree:
            targets = [n * self.links + k for k in range(1, self.links + 1)]
        else:
            targets = [(n * 7 + k) % self.pages for k in range(1, self.links + 1)]
        hrefs = [f"/page/{t}" for t in targets]
        body = "".join(f'<a href="{h}">{h}</a>' for h in hrefs)
        return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")


def serving(site: CountingSite) -> Iterator[CountingSite]:
    site.start()
    assert site.ready.wait(10)
    try:
        yield site
    finally:
        site.stop()


@pytest.fixture
def site() -> Iterator[CountingSite]:
    yield from serving(CountingSite())


def crawled(site: CountingSite, out: Path, *options: str) -> str:
    """The report of `crawl --procs 3` of `site`, all went well."""
    proc = procs_crawl(site.url, "--procs", "3", "--ignore-robots", "-o", str(out), *options)
    report, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    return report


def test_max_pages_holds_for_the_whole_crawl(site: CountingSite, tmp_path: Path) -> None:
    out = tmp_path / "all.jsonl"
    report = crawled(site, out, "--max-pages", "100")
    assert site.gets == 100  # counted where the pages are served
    assert len(fetched(out)) == 100
    last = accounting_line(report)
    assert last.endswith("(all accounted for)") and " 100 done + " in last


def test_max_depth_holds_for_the_whole_crawl(tmp_path: Path) -> None:
    for site in serving(CountingSite(links=3, tree=True)):
        crawled(site, tmp_path / "all.jsonl", "--max-depth", "3")
        assert site.gets == 1 + 3 + 9 + 27  # depths 0 to 3, each page once


def test_per_host_and_delay_hold_for_the_whole_crawl(tmp_path: Path) -> None:
    for site in serving(CountingSite(pages=60, links=4, linger=0.02)):
        crawled(site, tmp_path / "all.jsonl", "--per-host", "2", "--max-tasks", "10")
        assert site.gets == 60 and site.most <= 2
    for site in serving(CountingSite(pages=8, links=2)):
        crawled(site, tmp_path / "slow.jsonl", "--delay", "0.2", "--max-tasks", "10")
        assert site.gets == 8
        starts = site.starts
        gaps = [b - a for a, b in pairwise(starts)]
        # Redis hands the host's URLs out 0.2 s apart; each request then leaves when its
        # process gets the CPU, so one late sender narrows the gap after it by as much
        # (35 ms seen with four processes loading two cores). Over the crawl the delay
        # holds whole: without it, three processes would fetch the 8 pages at once.
        assert starts[-1] - starts[0] >= 0.2 * (len(starts) - 1) - 0.05, gaps
        assert min(gaps) >= 0.1, gaps
