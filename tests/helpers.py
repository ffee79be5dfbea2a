"""Helpers for crawling real servers in tests."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from aiohttp import web

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.records import FetchRecord
from crawlscope.engine.sites.demo import DemoConfig, expected_outcomes
from crawlscope.tui.waiting import wait_until

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def path(url: str) -> str:
    return urlsplit(url).path


def source_of(condition: Callable[..., object]) -> str:
    """The source line a condition is written on, for a wait that names no `what`."""
    try:
        return inspect.getsource(condition).strip()
    except (OSError, TypeError):
        return repr(condition)


async def until(
    condition: Callable[[], object],
    what: str = "",
    *,
    timeout: float = 60.0,
    poll: float = 0.01,
    seen: Callable[[], object] | None = None,
    pause: Callable[[float], Awaitable[object]] = asyncio.sleep,
) -> None:
    """Wait, letting the loop run (`pause`: asyncio.sleep, or a Textual pilot's pause),
    until `condition()` holds; at `timeout` fail naming `what` (else the condition's
    source) and the last value `seen()` gave. Every test's wait for a condition."""
    last = (lambda: f"last seen: {seen()}") if seen is not None else None
    await wait_until(
        condition, what or source_of(condition), timeout=timeout, pause=pause, poll=poll,
        describe=last,
    )  # fmt: skip


def outcome(record: FetchRecord) -> str:
    """A record in the vocabulary of demo_site.expected_outcomes."""
    if record.failed:
        return "error"
    if record.status in (301, 302, 303, 307, 308):
        return "redirect"
    if record.status == 200:
        return "html" if record.content_type == "text/html" else "other"
    return str(record.status)


def outcomes(crawler: Crawler) -> dict[str, str]:
    records = [*crawler.ledger.done.values(), *crawler.ledger.failed.values()]
    return {path(r.url): outcome(r) for r in records}


def whereabouts(crawler: Crawler) -> dict[str, set[str]]:
    """Each seen URL's category, by set membership rather than by counting."""
    return {
        "done": set(crawler.ledger.done),
        "failed": set(crawler.ledger.failed),
        "filtered": set(crawler.ledger.filtered),
        "queued": {url for url, _ in list(crawler.q._queue)},  # type: ignore[attr-defined]
        "held": {w.url for w in crawler.workers.values() if w.url is not None},
        "unfetched": set(crawler.ledger.unfetched),
    }


def assert_accounted(crawler: Crawler) -> None:
    """Every seen URL is in exactly one category, and nothing else is anywhere."""
    groups = whereabouts(crawler)
    total = sum(len(g) for g in groups.values())
    union = set().union(*groups.values())
    assert total == len(union), (
        f"a URL is in two categories: { {k: len(v) for k, v in groups.items()} }"
    )
    assert union == crawler.ledger.seen_urls
    assert crawler.accounting().balanced


async def run_crawl(root: str, **options: object) -> Crawler:
    crawler = Crawler(CrawlConfig(roots=(root,), **options))  # type: ignore[arg-type]
    await crawler.crawl()
    return crawler


def html(body: str) -> Handler:
    async def handler(_request: web.Request) -> web.Response:
        return web.Response(text=body, content_type="text/html")

    return handler


def expected(config: DemoConfig, robots: bool = True, **options: int) -> dict[str, str]:
    """The demo site's own prediction, less what its robots.txt forbids when obeyed."""
    outcomes = expected_outcomes(config, **options)
    if robots:
        del outcomes["/private/secret"]
    return outcomes


CLI = [sys.executable, "-m", "crawlscope"]


def run_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The `crawlscope` command as a user runs it, with no terminal and no input."""
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


@contextmanager
def demo_site_process(*options: str) -> Iterator[str]:
    """`crawlscope demo-site [options]` in its own process; yields the URL it announces."""
    proc = subprocess.Popen(
        [*CLI, "demo-site", "--port", "0", *options], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        yield next(word for word in line.split() if word.startswith("http://"))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
