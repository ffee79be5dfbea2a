"""The crawler against the hostile site, over real sockets: it ends, in bounded time and
memory, with a record for everything, and never passes hostile text on unescaped.

One whole-site crawl (about 2 s, bounded by the slow cases and the timeouts) is shared by
most tests: a module-scoped fixture on a module-scoped event loop runs it once, and the
(synchronous) tests only read the finished crawler. Tests that crawl one case alone, or
measure memory around one case, start their own server on their own loop.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import resource
import time
import unicodedata
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.records import FetchRecord
from crawlscope.engine.redirects import ChainEnd
from crawlscope.engine.report import write_report
from crawlscope.engine.sites.hostile import (
    HOSTILE_CASES,
    HOSTILE_REQUESTS,
    HOSTILE_TEXTS,
    LONG_URL_LENGTH,
    MANY_LINKS,
    ROBOTS_TXT,
    SAME_PAGE,
    SPACED_PAGE,
    add_hostile_routes,
    build_hostile_app,
    gzip_bomb,
    landing,
)
from helpers import assert_accounted

MAX_TRIES = 2
MAX_TASKS = 10
# The brief's crawl: short timeouts so the slow cases are cut off quickly, two tries.
OPTIONS: dict[str, object] = {
    "max_tasks": MAX_TASKS,
    "total_timeout": 3,
    "read_timeout": 1,
    "connect_timeout": 1,
    "max_tries": MAX_TRIES,
    "backoff": 0.01,
}
CRAWL_LIMIT = 60.0  # seconds: far past any expected crawl, so a hang fails, not stalls
MEMORY_LIMIT_MB = 200.0

# "TypeName" or "TypeName: message", the shape describe_exception and BadRedirect give.
EXCEPTION_SHAPE = re.compile(r"[A-Za-z_][\w.]*(: .*)?", re.DOTALL)

# How a record says that a read timed out (aiohttp's sock_read), and no other timeout.
READ_TIMED_OUT = re.compile(r"(Socket|Server)TimeoutError: Timeout on reading data from socket")

_STATM = Path("/proc/self/statm")


def _rss_bytes() -> int | None:
    """Resident memory now (Linux); None where /proc is not there to ask."""
    try:
        return int(_STATM.read_text().split()[1]) * resource.getpagesize()
    except (OSError, IndexError, ValueError):
        return None


def _maxrss_mb() -> float:
    # ru_maxrss is in KiB on Linux: the process's peak so far, never lower.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@dataclass
class Crawled:
    crawler: Crawler
    base: str  # "http://127.0.0.1:PORT", no trailing slash
    requests: Counter[str]  # path -> requests, copied when the crawl ended
    seconds: float
    maxrss_growth_mb: float  # ru_maxrss after minus before: a lower bound on the growth
    rss_peak_growth_mb: float  # sampled resident memory, peak minus start (Linux)

    def url(self, path: str) -> str:
        return self.base + path

    def record(self, path: str) -> FetchRecord:
        url = self.url(path)
        record = self.crawler.ledger.done.get(url) or self.crawler.ledger.failed.get(url)
        assert record is not None, f"no record for {path}"
        return record


@asynccontextmanager
async def serve(app: web.Application) -> AsyncIterator[str]:
    """Serve `app` on 127.0.0.1 and a free port; yields the base URL (no trailing slash)."""
    # No handler cancellation (aiohttp's default): the stalling cases must notice on
    # their own that the crawler hung up, as they would under any runner.
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


async def measured_crawl(app: web.Application, base: str, root: str, **options: object) -> Crawled:
    config = CrawlConfig(roots=(root,), **{**OPTIONS, **options})  # type: ignore[arg-type]
    crawler = Crawler(config)
    start_rss = _rss_bytes()
    peak = [start_rss or 0]

    async def sample() -> None:
        # Every 10 ms: a body held whole for longer than that would show up.
        while True:
            peak[0] = max(peak[0], _rss_bytes() or 0)
            await asyncio.sleep(0.01)

    sampler = asyncio.create_task(sample())
    before = _maxrss_mb()
    t0 = time.monotonic()
    try:
        await asyncio.wait_for(crawler.crawl(), CRAWL_LIMIT)
    finally:
        seconds = time.monotonic() - t0
        sampler.cancel()
    peak[0] = max(peak[0], _rss_bytes() or 0)
    sampled = (peak[0] - start_rss) / 2**20 if start_rss else _maxrss_mb() - before
    return Crawled(
        crawler=crawler,
        base=base,
        requests=Counter(app[HOSTILE_REQUESTS]),
        seconds=seconds,
        maxrss_growth_mb=_maxrss_mb() - before,
        rss_peak_growth_mb=sampled,
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def whole() -> AsyncIterator[Crawled]:
    """A crawl of the whole hostile site from "/", with the brief's settings."""
    app = build_hostile_app()
    async with serve(app) as base:
        yield await measured_crawl(app, base, base + "/")


async def crawl_one(path: str, **options: object) -> Crawled:
    """A fresh server and a crawl rooted at one case, so its counts are its own."""
    app = build_hostile_app()
    async with serve(app) as base:
        return await measured_crawl(app, base, base + path, **options)


def records(crawler: Crawler) -> list[FetchRecord]:
    return [*crawler.ledger.done.values(), *crawler.ledger.failed.values()]


def report_of(crawler: Crawler) -> str:
    out = io.StringIO()
    write_report(crawler, out)
    return out.getvalue()


def unsafe_characters(text: str) -> list[str]:
    """Characters a terminal could act on: controls (but newline), format and bidi ones,
    line and paragraph separators. The report must escape every one."""
    return [
        ch
        for ch in text
        if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs")
    ]


def assert_workers_ended_normally(crawler: Crawler) -> None:
    for w in crawler.workers.values():
        assert w.state.value in ("stopped",), f"worker {w.id} ended {w.state.value}"
        task = w.task
        assert task is not None and task.done()
        assert task.cancelled() or task.exception() is None, f"worker {w.id} died"


# --------------------------------------------------------------------------------------
# The crawl as a whole.


def test_the_whole_crawl_ends(whole: Crawled) -> None:
    # It ends at all (the fixture's own deadline guards against a hang); how long it
    # takes is a figure for the benchmarks, not an assertion on a shared machine.
    c = whole.crawler
    assert c.phase is Phase.FINISHED
    assert c.unfinished == 0


def test_the_whole_crawl_keeps_memory_bounded(whole: Crawled) -> None:
    # 20 MB bodies, a 100 MB gzip bomb and a 50 MB promise pass through; none is held.
    assert whole.maxrss_growth_mb < MEMORY_LIMIT_MB
    assert whole.rss_peak_growth_mb < MEMORY_LIMIT_MB


def test_nothing_is_lost_and_the_accounting_balances(whole: Crawled) -> None:
    assert_accounted(whole.crawler)
    assert whole.crawler.accounting().balanced


def test_no_worker_died(whole: Crawled) -> None:
    assert len(whole.crawler.workers) == MAX_TASKS
    assert_workers_ended_normally(whole.crawler)


def test_every_case_is_reached_from_the_index_and_has_a_record(whole: Crawled) -> None:
    for path in HOSTILE_CASES:
        record = whole.record(path)
        assert record.referrer == whole.url("/hostile/"), path


def test_robots_txt_is_fetched_once_and_allows_everything(whole: Crawled) -> None:
    assert whole.requests["/robots.txt"] == 1
    assert not any("robots" in reason for reason in whole.crawler.ledger.filtered.values())
    assert "Crawl-delay: 0" in ROBOTS_TXT


def test_every_failure_is_a_record_naming_its_exception(whole: Crawled) -> None:
    c = whole.crawler
    assert c.ledger.failed, "the hostile site must make some fetches fail"
    for record in c.ledger.failed.values():
        assert record.status is None
        assert record.exception and EXCEPTION_SHAPE.fullmatch(record.exception), record
    for record in c.ledger.done.values():
        if record.exception is not None:
            assert EXCEPTION_SHAPE.fullmatch(record.exception), record


def test_every_record_is_one_valid_json_line(whole: Crawled) -> None:
    for record in records(whole.crawler):
        line = record.to_json()
        assert "\n" not in line and line.isascii()
        assert json.loads(line) == record.to_dict()


# --------------------------------------------------------------------------------------
# Limits.


@pytest.mark.parametrize(
    "path",
    ["/hostile/limits/big-body", "/hostile/limits/lying-length", "/hostile/limits/gzip-bomb"],
)
def test_oversize_bodies_are_cut_off_and_not_retried(whole: Crawled, path: str) -> None:
    record = whole.record(path)
    assert record.exception is not None and record.exception.startswith("TooLarge"), record
    assert record.size == 0  # a body cut short has no links anyone should trust
    assert record.num_urls == 0
    assert whole.requests[path] == 1


@pytest.mark.parametrize("path", ["/hostile/limits/slow-drip", "/hostile/limits/silent"])
def test_slow_and_silent_servers_are_cut_off_by_the_timeouts(whole: Crawled, path: str) -> None:
    record = whole.crawler.ledger.failed[whole.url(path)]
    # The read timeout's own words, as aiohttp raises it (ServerTimeoutError before 3.10):
    # the total timeout, which would also end these tries but three times later, is a bare
    # "TimeoutError".
    assert record.exception is not None
    assert READ_TIMED_OUT.fullmatch(record.exception), record.exception
    assert record.tries == MAX_TRIES
    assert whole.requests[path] <= MAX_TRIES
    # Each try ends at the read timeout (1 s), well before the total (3 s).
    assert record.t_end - record.t_start < MAX_TRIES * 3 + 1


def test_twenty_thousand_links_are_capped_at_max_links(whole: Crawled) -> None:
    c = whole.crawler
    cap = c.config.max_links
    assert cap < MANY_LINKS
    record = whole.record("/hostile/limits/many-links")
    assert record.status == 200 and record.num_urls == cap
    many = [url for url in c.ledger.seen_urls if urlsplit(url).path.startswith("/hostile/many/")]
    assert len(many) == cap
    # The first `cap` links, in page order: the rest were never looked at.
    assert whole.url(f"/hostile/many/{cap - 1}") in c.ledger.seen_urls
    assert whole.url(f"/hostile/many/{cap}") not in c.ledger.seen_urls


def test_a_too_long_url_is_filtered_not_fetched(whole: Crawled) -> None:
    long_urls = [url for url in whole.crawler.ledger.seen_urls if len(url) > 2083]
    assert len(long_urls) == 1
    (url,) = long_urls
    assert len(urlsplit(url).path) == LONG_URL_LENGTH
    assert "URL longer than" in whole.crawler.ledger.filtered[url]
    assert not any(path.startswith("/hostile/long/") for path in whole.requests)


def test_idn_and_ipv6_links_are_filtered_out_of_scope(whole: Crawled) -> None:
    filtered = whole.crawler.ledger.filtered
    assert filtered["http://xn--bcher-kva.example/"] == "out of scope"
    assert filtered["http://[::1]:1/"] == "out of scope"


def test_percent_encoding_variants_are_one_url_fetched_once(whole: Crawled) -> None:
    same = [
        url for url in whole.crawler.ledger.seen_urls if unquote(urlsplit(url).path) == SAME_PAGE
    ]
    assert same == [whole.url(SAME_PAGE)]
    # One request a try: a try cut short by a read timeout (a loaded machine) is retried.
    assert whole.requests[SAME_PAGE] == whole.crawler.ledger.done[same[0]].tries


def test_whitespace_and_newlines_in_hrefs_are_removed(whole: Crawled) -> None:
    record = whole.crawler.ledger.done[whole.url(SPACED_PAGE)]
    assert record.status == 200
    # One URL, asked for once a try: a try cut by the 1 s read timeout on a loaded machine
    # is tried again, and counted in the record.
    assert whole.requests[SPACED_PAGE] == record.tries


def test_non_http_empty_and_fragment_links_are_dropped(whole: Crawled) -> None:
    c = whole.crawler
    for url in c.ledger.seen_urls:
        assert urlsplit(url).scheme in ("http", "https"), url
        assert "#" not in url
    odd = whole.record("/hostile/limits/odd-links")
    # same-page, spaced-page, the IDN and IPv6 hosts, and "" and "#" (the page itself).
    assert odd.num_urls == 5
    assert odd.num_new_urls == 2


# --------------------------------------------------------------------------------------
# Redirects.

# path -> (where it should lead, or None; how its chain should end, or None if no chain)
REDIRECTS: dict[str, tuple[str | None, ChainEnd | None]] = {
    "/hostile/redirect/no-location": (None, None),
    "/hostile/redirect/invalid": (None, None),
    "/hostile/redirect/ftp": (None, None),
    "/hostile/redirect/javascript": (None, None),
    "/hostile/text/redirect": (None, None),
    "/hostile/redirect/relative": (landing("relative"), ChainEnd.FETCHED),
    "/hostile/redirect/scheme-relative": (landing("scheme-relative"), ChainEnd.FETCHED),
    "/hostile/redirect/with-body": (landing("with-body"), ChainEnd.FETCHED),
    "/hostile/redirect/out-of-scope": ("http://elsewhere.invalid/", ChainEnd.FILTERED),
    "/hostile/redirect/self-loop": ("/hostile/redirect/self-loop", ChainEnd.LOOP),
}


@pytest.mark.parametrize("path", list(REDIRECTS))
def test_bad_and_odd_redirects_are_recorded(whole: Crawled, path: str) -> None:
    target, end = REDIRECTS[path]
    record = whole.crawler.ledger.done[whole.url(path)]
    assert record.status in (301, 302)
    assert whole.requests[path] == 1
    if target is None:
        assert record.next_url is None
        assert record.exception is not None and record.exception.startswith("BadRedirect")
        assert not any(chain.urls[0] == record.url for chain in whole.crawler.ledger.chains())
        return
    expected = target if target.startswith("http:") else whole.url(target)
    assert record.next_url == expected
    assert record.exception is None
    (chain,) = [chain for chain in whole.crawler.ledger.chains() if chain.urls[0] == record.url]
    assert chain.end is end
    if end is ChainEnd.FETCHED:
        assert chain.status == 200
        assert whole.crawler.ledger.done[expected].referrer == record.url


def test_a_redirect_body_is_read_but_its_links_are_not_followed(whole: Crawled) -> None:
    record = whole.record("/hostile/redirect/with-body")
    assert record.status == 301 and record.size > 0
    assert whole.url(landing("redirect-body-link")) not in whole.crawler.ledger.seen_urls


# --------------------------------------------------------------------------------------
# Content.

# path -> the landing link each page carries (None: the page has no link to find).
CONTENT: dict[str, str | None] = {
    "/hostile/content/malformed": landing("malformed"),
    "/hostile/content/binary": None,
    "/hostile/content/wrong-charset": landing("wrong-charset"),
    "/hostile/content/unknown-charset": landing("unknown-charset"),
    "/hostile/content/utf8-bom": landing("utf8-bom"),
    "/hostile/content/utf16-bom": landing("utf16-bom"),
    "/hostile/content/nul-bytes": landing("nul-bytes"),
    "/hostile/content/deep-nesting": landing("deep-nesting"),
    "/hostile/text/title": landing("title"),
}


@pytest.mark.parametrize("path", list(CONTENT))
def test_hostile_content_is_parsed_and_its_links_found(whole: Crawled, path: str) -> None:
    record = whole.crawler.ledger.done[whole.url(path)]
    assert record.status == 200 and record.exception is None
    assert record.content_type == "text/html"
    assert record.encoding
    link = CONTENT[path]
    if link is not None:
        found = whole.crawler.ledger.done[whole.url(link)]
        assert found.referrer == record.url
        assert record.num_urls >= 1


def test_the_second_link_of_the_malformed_page_survives_too(whole: Crawled) -> None:
    assert whole.url(landing("malformed-2")) in whole.crawler.ledger.done


@pytest.mark.parametrize(
    ("path", "encoding"),
    [("/hostile/content/utf16-bom", "utf-16"), ("/hostile/content/utf8-bom", "utf-8")],
)
def test_a_bom_decides_the_encoding(whole: Crawled, path: str, encoding: str) -> None:
    record = whole.record(path)
    assert (record.encoding or "").replace("_", "-").lower().startswith(encoding)


# --------------------------------------------------------------------------------------
# Connection faults.

FAULTS = ["/hostile/conn/reset", "/hostile/conn/short-body", "/hostile/conn/close-after-headers"]


@pytest.mark.parametrize("path", FAULTS)
def test_connection_faults_are_retried_then_recorded(whole: Crawled, path: str) -> None:
    record = whole.crawler.ledger.failed[whole.url(path)]
    assert record.tries == MAX_TRIES
    assert record.exception is not None and record.exception.startswith("Client")
    # aiohttp itself retries once when a pooled keep-alive connection turns out dead, so
    # a try can be two requests; more than that would be a retry loop.
    assert MAX_TRIES <= whole.requests[path] <= 2 * MAX_TRIES


# --------------------------------------------------------------------------------------
# Untrusted text.


@pytest.mark.parametrize("name", list(HOSTILE_TEXTS))
def test_hostile_text_in_a_url_is_kept_percent_encoded(whole: Crawled, name: str) -> None:
    pages = [
        url
        for url in whole.crawler.ledger.done
        if urlsplit(url).path == f"/hostile/text/page/{name}"
    ]
    assert len(pages) == 1, pages
    (url,) = pages
    # Stored as printable ASCII, so a URL is safe to print as it is ...
    assert url.isascii() and url.isprintable()
    # ... and nothing of the text is lost on the way.
    assert unquote(urlsplit(url).query) == HOSTILE_TEXTS[name]


def test_a_header_rejected_by_the_http_parser_is_a_failure_record(whole: Crawled) -> None:
    record = whole.crawler.ledger.failed[whole.url("/hostile/text/bad-header")]
    assert record.exception is not None and record.exception.startswith("ClientResponseError")


def test_a_hostile_location_is_reported_in_escaped_form(whole: Crawled) -> None:
    record = whole.record("/hostile/text/redirect")
    assert record.exception is not None and "[bold]x[/bold]" in record.exception
    line = next(x for x in report_of(whole.crawler).splitlines() if x.startswith(record.url))
    assert unsafe_characters(line) == []


def test_the_report_escapes_exceptions_and_urls(whole: Crawled) -> None:
    # The fields the report already escapes: a multi-line exception quoting a header full
    # of escapes, and every URL.
    report = report_of(whole.crawler)
    bad_header = whole.url("/hostile/text/bad-header")
    (line,) = [x for x in report.splitlines() if x.startswith(bad_header + " ")]
    assert "ClientResponseError" in line and unsafe_characters(line) == []
    for name in HOSTILE_TEXTS:
        lines = [x for x in report.splitlines() if f"/hostile/text/page/{name}?" in x]
        assert lines and all(unsafe_characters(x) == [] for x in lines)


def test_the_report_has_no_raw_escape_control_or_bidi_character(whole: Crawled) -> None:
    report = report_of(whole.crawler)
    assert "\x1b" not in report
    assert "\u202e" not in report
    assert unsafe_characters(report) == []


def test_the_report_can_be_written_as_utf8(whole: Crawled) -> None:
    report_of(whole.crawler).encode("utf-8")  # no lone surrogates from undecodable bytes


def test_the_report_names_every_records_exception(whole: Crawled) -> None:
    lines = report_of(whole.crawler).splitlines()
    for record in records(whole.crawler):
        if record.exception is None:
            continue
        name = record.exception.split(":", 1)[0]
        line = next(x for x in lines if x.startswith(record.url + " "))
        assert name in line, line


# --------------------------------------------------------------------------------------
# Each case alone: crawled as the root, with nothing else around it.


@pytest.mark.parametrize("path", list(HOSTILE_CASES))
async def test_each_case_crawled_alone_ends_with_a_record(path: str) -> None:
    crawled = await crawl_one(path, max_tasks=4, max_pages=20)
    c = crawled.crawler
    assert c.phase is Phase.FINISHED and c.unfinished == 0
    assert_accounted(c)
    assert_workers_ended_normally(c)
    record = crawled.record(path)
    if record.failed:
        assert record.exception
    for r in records(c):
        json.loads(r.to_json())
    assert unsafe_characters(report_of(c)) == []
    assert crawled.requests[path] <= 2 * MAX_TRIES


async def test_a_gzip_bomb_alone_keeps_memory_bounded() -> None:
    # Compressed before measuring: the server's 0.3 s of zlib is not the crawler's memory.
    await asyncio.to_thread(gzip_bomb)
    crawled = await crawl_one("/hostile/limits/gzip-bomb")
    record = crawled.record("/hostile/limits/gzip-bomb")
    assert record.exception is not None and record.exception.startswith("TooLarge")
    assert crawled.maxrss_growth_mb < MEMORY_LIMIT_MB
    assert crawled.rss_peak_growth_mb < MEMORY_LIMIT_MB
    assert crawled.requests["/hostile/limits/gzip-bomb"] == 1


# --------------------------------------------------------------------------------------
# The site itself.


async def test_the_routes_can_be_added_to_another_app() -> None:
    app = web.Application()
    add_hostile_routes(app)
    async with serve(app) as base, aiohttp.ClientSession() as session:
        async with session.get(base + "/hostile/") as response:
            index = await response.text()
        async with session.get(base + landing("by-hand")) as response:
            assert response.status == 200
    for path in HOSTILE_CASES:
        assert f'href="{path}"' in index
    assert app[HOSTILE_REQUESTS] == Counter({"/hostile/": 1, "/hostile/landing": 1})


def test_every_case_has_a_description() -> None:
    for path, description in HOSTILE_CASES.items():
        assert path.startswith("/hostile/") and description.strip()
        assert description.isprintable()
