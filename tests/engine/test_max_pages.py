"""`--max-pages N`: N pages fetched, however many URLs robots.txt filters on the way.

A page fetched is a URL a request was made for, whatever came back: a redirect hop is
one (its target is another), a 404 is one, a failure after its tries is one. A URL
robots.txt refuses, or the scope leaves, is filtered and is none.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from redis_support import crawl, finish, records

from crawlscope.engine.cluster.sqlite_state import keep_state
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import CLI, Handler, assert_accounted, demo_site_process, html, run_cli, run_crawl

Serve = Callable[[dict[str, Handler]], Awaitable[str]]
ROBOTS_TXT = "User-agent: *\nDisallow: /private/\n"


def fetched(crawler: Crawler) -> int:
    return len(crawler.ledger.done) + len(crawler.ledger.failed)


async def robots(_request: web.Request) -> web.Response:
    return web.Response(text=ROBOTS_TXT)


@pytest.mark.parametrize("pages", [1, 20, 50])
async def test_max_pages_fetches_that_many_pages_of_the_demo_site(
    demo: DemoServer, pages: int
) -> None:
    crawler = await run_crawl(demo.url, max_pages=pages, max_tasks=5)
    assert fetched(crawler) == pages
    refused = [u for u, why in crawler.ledger.filtered.items() if "robots.txt" in why]
    if pages > 1:
        # The page robots.txt forbids was found among the first pages, and did not count.
        assert refused == [demo.url + "private/secret"]
    assert len([p for p in demo.requests if p != "/robots.txt"]) == pages  # paths asked for
    assert crawler.ledger.unfetched
    assert_accounted(crawler)


async def test_max_pages_counts_no_page_robots_txt_forbids(serve: Serve) -> None:
    # Every other link of the root is one robots.txt forbids: half of all the URLs
    # admitted first are refused, and their places go to the next ones found.
    links = "".join(f'<a href="/private/{i}">x</a><a href="/page/{i}">y</a>' for i in range(30))
    routes: dict[str, Handler] = {"/": html(links), "/robots.txt": robots}
    routes.update({f"/page/{i}": html("<p>leaf</p>") for i in range(30)})
    root = await serve(routes)
    for workers in (1, 4):
        crawler = await run_crawl(root, max_pages=12, max_tasks=workers)
        assert fetched(crawler) == 12
        refused = [u for u, why in crawler.ledger.filtered.items() if "robots.txt" in why]
        assert len(refused) >= 6  # the first twelve links found hold six of them
        assert crawler.ledger.unfetched
        assert_accounted(crawler)


@pytest.mark.parametrize("engine", ["asyncio", "callbacks", "generators"])
async def test_every_engine_fetches_max_pages_pages(serve: Serve, engine: str) -> None:
    links = "".join(f'<a href="/page/{i}">y</a><a href="/private/{i}">x</a>' for i in range(9))
    routes: dict[str, Handler] = {"/": html(links), "/robots.txt": robots}
    routes.update({f"/page/{i}": html("<p>leaf</p>") for i in range(9)})
    root = await serve(routes)
    proc = await asyncio.create_subprocess_exec(
        *CLI, "crawl", root, "--max-pages", "8", "--engine", engine, "-q", "-o", "-",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err
    lines = [json.loads(line) for line in out.decode().splitlines()]
    assert len([r for r in lines if not r.get("filtered")]) == 8
    # The root and the first of its links hold places, robots.txt refuses the second:
    # its place goes to the next link found, and so on.
    assert len([r for r in lines if "robots.txt" in str(r.get("filtered"))]) >= 3


async def test_each_redirect_hop_is_a_page_fetched(serve: Serve) -> None:
    async def hop(request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        raise web.HTTPFound(f"/hop/{n + 1}" if n < 9 else "/end")

    routes: dict[str, Handler] = {
        "/": html('<a href="/hop/0">chain</a><a href="/private/x">no</a>'),
        "/robots.txt": robots,
        "/hop/{n}": hop,
        "/end": html("<p>end</p>"),
    }
    root = await serve(routes)
    crawler = await run_crawl(root, max_pages=5)
    assert fetched(crawler) == 5
    statuses = sorted(r.status or 0 for r in crawler.ledger.done.values())
    assert statuses == [200, 302, 302, 302, 302]  # the root, then four hops of the chain
    assert root + "hop/4" in crawler.ledger.unfetched  # the fifth hop's target waits
    assert_accounted(crawler)


@pytest.mark.slow
def test_the_cli_fetches_max_pages_pages_and_says_what_that_means(tmp_path: Path) -> None:
    with demo_site_process() as root:
        for pages in (1, 20, 50):
            out = tmp_path / f"{pages}.jsonl"
            report, _err = finish(crawl(root, None, out, "--max-pages", str(pages)))
            books = re.search(r"Accounting: .*", report)
            assert books is not None
            assert f"= {pages} done + 0 failed + " in books.group(0), books.group(0)
            assert "(all accounted for)" in books.group(0)
            lines = records(out)
            assert len([r for r in lines if not r.get("filtered")]) == pages
            if pages > 1:
                assert any("robots.txt" in str(r.get("filtered")) for r in lines)
    usage = run_cli("crawl", "--help").stdout
    said = " ".join(usage[usage.index("--max-pages N  ") :].split()[:40])
    assert "fetch at most N pages" in said and "redirect" in said and "robots.txt" in said
    assert "earlier runs' pages count too" in said


async def test_a_resumed_crawl_counts_the_pages_earlier_runs_fetched(tmp_path: Path) -> None:
    state = tmp_path / "crawl.db"
    async with DemoServer(DemoConfig(pages=80)) as site:
        config = CrawlConfig(roots=(site.url,), max_tasks=4, max_pages=40)
        first = keep_state(Crawler(config), state)
        first.ledger.record_listeners.append(lambda _r: fetched(first) >= 15 and first.stop())
        await first.crawl()
        second = keep_state(Crawler(config), state)
        await second.crawl()
    assert fetched(first) + fetched(second) == 40
    assert not set(first.ledger.done) & set(second.ledger.done)
    assert second.accounting().balanced


@pytest.mark.slow
def test_a_crawl_left_by_max_pages_goes_on_when_run_again_with_more(tmp_path: Path) -> None:
    state = str(tmp_path / "crawl.db")
    with demo_site_process() as root:

        def run(pages: int, name: str) -> tuple[str, list[str]]:
            out = tmp_path / name
            report, _err = finish(
                crawl(root, None, out, "--max-pages", str(pages), "--state", state)
            )
            return report, [str(r["url"]) for r in records(out) if not r.get("filtered")]

        report, first = run(20, "1.jsonl")
        assert len(first) == 20 and "(all accounted for)" in report
        report, again = run(20, "2.jsonl")  # the same command: the crawl is done already
        assert again == [] and "= 20 done + 0 failed + " in report
        assert "(all accounted for)" in report
        report, more = run(45, "3.jsonl")  # what the first run found and left is taken up
        assert len(more) == 25 and not set(more) & set(first)
        assert "= 45 done + 0 failed + " in report and "(all accounted for)" in report
