"""The per-page path's cost (issue 32, item 4), counted rather than timed: which Python
functions a crawl of a real site calls, per page, with the demo site in a process of its
own so that only the crawler's calls are counted.

Counts of calls are the same from run to run where timings are not, and each cost taken
off the path shows as functions no longer called.
"""

from __future__ import annotations

import asyncio
import gc
import sys
from collections import Counter
from itertools import pairwise
from types import FrameType
from typing import Any

from crawlscope.engine import links as links_module
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.links import parse_links
from crawlscope.engine.observe.workers import Worker, WorkerState
from crawlscope.engine.politeness import HostGate
from crawlscope.engine.timing.collector import YOUNG_THRESHOLD
from crawlscope.engine.urls import normalize
from helpers import assert_accounted

PAGES = 300


# The options of this module's demo site (conftest.py's `site` fixture).
DEMO_SITE = ("--pages", str(PAGES), "--latency", "0")


class CallCount:
    """Python function calls made while counting, by the file each function is in."""

    def __init__(self) -> None:
        self.by_file: Counter[str] = Counter()
        self.by_function: Counter[str] = Counter()  # "file.py:Class.method"

    def __enter__(self) -> CallCount:
        sys.setprofile(self._event)
        return self

    def __exit__(self, *_exc: object) -> None:
        sys.setprofile(None)

    def _event(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            code = frame.f_code
            self.by_file[code.co_filename] += 1
            self.by_function[f"{code.co_filename.rpartition('/')[2]}:{code.co_qualname}"] += 1

    def in_files(self, *suffixes: str) -> int:
        return sum(n for name, n in self.by_file.items() if name.endswith(suffixes))

    @property
    def total(self) -> int:
        return sum(self.by_file.values())


async def counted_crawl(root: str, workers: int = 4) -> tuple[Crawler, CallCount]:
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=workers, per_host=0))
    with CallCount() as calls:
        await crawler.crawl()
    assert_accounted(crawler)
    assert len(crawler.ledger.done) >= PAGES and not crawler.ledger.failed
    return crawler, calls


async def test_requests_send_no_trace_signals_yet_workers_show_every_state(site: str) -> None:
    # aiohttp builds a Trace per request and sends a signal per step once a session has
    # a TraceConfig; the two facts they gave (head sent, connection reused) come another way.
    seen: dict[int, list[WorkerState]] = {}
    waited_with_work: list[int] = []

    def note(w: Worker | None) -> None:
        if w is not None:
            states = seen.setdefault(w.id, [])
            # (A worker is announced as it is added, before its task runs: in "waiting".)
            if states and w.state is WorkerState.WAITING and crawler.q.qsize():
                waited_with_work.append(crawler.q.qsize())
            states.append(w.state)

    crawler = Crawler(CrawlConfig(roots=(site,), max_tasks=4, per_host=0))
    crawler.state_listeners.append(note)
    with CallCount() as calls:
        await crawler.crawl()
    assert calls.in_files("aiohttp/tracing.py", "aiosignal/__init__.py") == 0
    answered = 0
    for states in seen.values():
        for before, state in pairwise(states):
            # Sent, then answered: the states a screen shows. Sent again when aiohttp
            # retries on a new connection after the server closed a pooled one.
            if state is WorkerState.HEADERS:
                assert before in (WorkerState.CONNECTING, WorkerState.HEADERS), states
            if state is WorkerState.BODY:
                assert before is WorkerState.HEADERS, states
            # Answered: a body still to come ("body"), or one that came whole with the
            # headers, whose page is parsed next or whose worker goes on.
            if before is WorkerState.HEADERS and state is not WorkerState.HEADERS:
                answered += 1
    assert answered >= len(crawler.ledger.done)
    # "waiting" is where get() suspends: never entered with URLs ready on the queue.
    assert not waited_with_work


async def test_an_origin_is_parsed_once_per_host_not_once_per_url(site: str) -> None:
    # robots.txt, the host gate and the host figures each want a URL's origin; yarl
    # builds a URL to tell it, which cost a twentieth of a page.
    crawler, calls = await counted_crawl(site)
    assert len(crawler.host_book.hosts) == 1
    assert calls.by_function["_url.py:URL.origin"] <= 5, calls.by_function["_url.py:URL.origin"]


def test_plain_path_links_resolve_without_filling_the_cache() -> None:
    # Most hrefs of a big site are pages met once: string work resolves them, and the
    # cache (up to 50,000 entries) is kept for the hrefs it saves work on.
    base = "http://127.0.0.1:8000/dir/page/1"
    hrefs = [f"/p/{n}" for n in range(500)] + [f"../q/{n}#top" for n in range(500)]
    body = "".join(f'<a href="{href}">x</a>' for href in hrefs).encode()
    links_module._resolved.clear()
    _, found = parse_links(body, base, "utf-8")
    assert found == [normalize(href, base) for href in hrefs]
    assert len(links_module._resolved) == 0


def test_a_link_to_the_page_itself_or_another_scheme_costs_no_cache_entry_per_page() -> None:
    # "#top" and "mailto:" are on every page of many sites: keyed on each page's URL,
    # they missed the cache on every page and were resolved in full each time.
    hrefs = ["#top", "#", "mailto:demo@example.invalid", "javascript:void(0)"]
    links_module._resolved.clear()
    for n in range(200):
        base = f"http://127.0.0.1:8000/page/{n}"
        body = "".join(f'<a href="{href}">x</a>' for href in hrefs).encode()
        _, found = parse_links(body, base, "utf-8")
        expected = [normalize(href, base) for href in hrefs]
        assert found == list(dict.fromkeys(url for url in expected if url is not None))
    assert len(links_module._resolved) == 2, links_module._resolved  # one per scheme

    # The base's own scheme ("HTTP:g") resolves as a path against the base: still right.
    _, found = parse_links(b'<a href="HTTP:g">x</a>', "http://127.0.0.1:8000/a/b", None)
    assert found == ["http://127.0.0.1:8000/a/g"]


async def test_young_collections_run_less_often_while_a_crawl_runs(site: str) -> None:
    # At Python's pace: 0.85 ms each, 470 times in a 20,000-page crawl, freeing 27 objects.
    before = gc.get_threshold()
    assert before[0] < YOUNG_THRESHOLD  # CPython's 700, unless a test changed it
    during: list[tuple[int, ...]] = []
    crawler = Crawler(CrawlConfig(roots=(site,), max_tasks=4, per_host=0, max_pages=20))
    crawler.ledger.record_listeners.append(lambda _record: during.append(gc.get_threshold()))
    await crawler.crawl()
    assert during and all(t == (YOUNG_THRESHOLD, *before[1:]) for t in during)
    assert gc.get_threshold() == before  # put back when the crawl ends


async def test_a_pace_the_program_chose_is_left_alone(site: str) -> None:
    before = gc.get_threshold()
    gc.set_threshold(200_000, *before[1:])
    try:
        during: list[int] = []
        crawler = Crawler(CrawlConfig(roots=(site,), max_tasks=2, per_host=0, max_pages=5))
        crawler.ledger.record_listeners.append(lambda _r: during.append(gc.get_threshold()[0]))
        await crawler.crawl()
        assert set(during) == {200_000}
        assert gc.get_threshold()[0] == 200_000
    finally:
        gc.set_threshold(*before)


async def test_a_free_host_slot_is_taken_without_a_coroutine_and_a_busy_one_is_not() -> None:
    gate = HostGate(limit=1, delay=0.0)
    assert gate.enter_now("http://a")
    assert gate.in_flight["http://a"] == 1
    assert not gate.enter_now("http://a")  # full: nothing changed
    assert gate.in_flight["http://a"] == 1
    waiting = asyncio.ensure_future(gate.enter("http://a"))
    await asyncio.sleep(0)
    assert not waiting.done()
    gate.leave("http://a")  # handed to the waiter, first come first served
    await asyncio.wait_for(waiting, 30)
    assert not gate.enter_now("http://a")
    gate.leave("http://a")
    assert gate.enter_now("http://a")
    gate.leave("http://a")
    # A delay: the next start is reserved, and until then the way in is enter().
    spaced = HostGate(limit=0, delay=3600.0)
    assert spaced.enter_now("http://b")
    spaced.leave("http://b")
    assert not spaced.enter_now("http://b")
    assert spaced.in_flight["http://b"] == 0


async def test_a_request_arms_one_read_timer_however_its_bytes_arrive(site: str) -> None:
    # aiohttp made a new sock_read timer each time bytes came (and left the old one
    # cancelled in the loop's heap); a timer moved on lazily is one per request. The
    # other is the total timeout's. That a silent server is still cut off is
    # tests/hostile/test_hostile.py's slow and silent cases.
    crawler, calls = await counted_crawl(site)
    pages = len(crawler.ledger.done)
    timers = calls.by_function["events.py:TimerHandle.__init__"]
    assert timers / pages < 2.5, (timers, pages)
