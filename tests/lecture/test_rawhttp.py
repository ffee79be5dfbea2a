"""The lecture engines' HTTP client against hostile framing, over real sockets.

The cases are the hostile site's own (engine/sites/hostile_http.py), served raw by
aiohttp on a loop in a background thread while a lecture engine crawls them blocking.
Each bad answer must become that URL's failure, with a clear reason and one try (the
server would only send the same bytes again), and the crawl must go on and balance.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from aiohttp import web

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.lecture.rawhttp import (
    BadResponse,
    PayloadIncomplete,
    ResponseReader,
)
from crawlscope.engine.lecture.stages import run_blocking
from crawlscope.engine.politeness import ROBOTS_MAX_BYTES
from crawlscope.engine.sites.hostile_http import HTTP_CASES, HTTP_INDEX, HTTP_RESPONSES, http_routes

LECTURE = ("callbacks", "generators")

# What each case's record must say: the reason, in the parser's words.
REASONS = {
    "/hostile/http/negative-chunk": "BadResponse: bad chunk size b'-6'",
    "/hostile/http/hex-prefix-chunk": "BadResponse: bad chunk size b'0x10'",
    "/hostile/http/superscript-length": "BadResponse: bad Content-Length '²'",
    "/hostile/http/long-length": "BadResponse: Content-Length of 5000 digits (at most 18)",
    "/hostile/http/conflicting-length": "BadResponse: Content-Length headers disagree (5, ",
    "/hostile/http/superscript-status": "BadResponse: bad status line 'HTTP/1.1 ²00 OK'",
}

# A robots.txt longer than the 500 KiB a crawler reads, sent chunked: its rules come
# first, the padding after them is cut off.
ROBOTS_RULES = b"User-agent: *\nDisallow: /secret\n"
ROBOTS_CHUNK = 64 * 1024


def _chunked_robots() -> bytes:
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
        b"Connection: close\r\n\r\n"
    )
    text = ROBOTS_RULES + b"#" * (ROBOTS_MAX_BYTES + ROBOTS_CHUNK)
    chunks = [text[at : at + ROBOTS_CHUNK] for at in range(0, len(text), ROBOTS_CHUNK)]
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for chunk in chunks)
    return head + body + b"0\r\n\r\n"


async def _robots(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    transport = request.transport
    if transport is not None:
        transport.write(_chunked_robots())
        transport.close()
    return response


async def _page(request: web.Request) -> web.Response:
    links = '<a href="/secret">secret</a> <a href="/open">open</a>'
    return web.Response(text=f"<html><body>{links}</body></html>", content_type="text/html")


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    """The hostile framing cases, plus a page and a long chunked robots.txt, served on a
    loop in a thread (the lecture engines block while they crawl)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="hostile-http", daemon=True)
    thread.start()
    app = web.Application()
    for path, handler in http_routes(app).items():
        app.router.add_get(path, handler)
    app.router.add_get("/robots.txt", _robots)
    for path in ("/", "/secret", "/open"):
        app.router.add_get(path, _page)
    runner = web.AppRunner(app, access_log=None)

    async def start() -> str:
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        return f"http://127.0.0.1:{runner.addresses[0][1]}"

    base = asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    yield base
    asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def config(root: str, **options: object) -> CrawlConfig:
    return CrawlConfig(roots=(root,), max_tries=3, backoff=0.01, **options)  # type: ignore[arg-type]


def test_every_bad_case_has_a_reason() -> None:
    assert set(REASONS) == set(HTTP_RESPONSES) == set(HTTP_CASES) - {HTTP_INDEX}


@pytest.mark.parametrize("path", sorted(REASONS))
@pytest.mark.parametrize("engine", LECTURE)
def test_bad_framing_is_that_urls_failure_tried_once(site: str, engine: str, path: str) -> None:
    crawl = run_blocking(engine, config(site + path, obey_robots=False))
    record = crawl.ledger.failed[site + path]
    assert record.exception is not None and record.exception.startswith(REASONS[path])
    assert record.tries == 1 and record.status is None
    assert crawl.accounting().balanced and crawl.accounting().held == 0


@pytest.mark.parametrize("engine", LECTURE)
def test_a_crawl_of_all_the_cases_goes_on_past_each_one(site: str, engine: str) -> None:
    crawl = run_blocking(engine, config(site + HTTP_INDEX, obey_robots=False))
    books = crawl.ledger
    assert books.done[site + HTTP_INDEX].status == 200
    assert {url.removeprefix(site) for url in books.failed} == set(REASONS)
    accounting = crawl.accounting()
    assert accounting.balanced and accounting.queued == accounting.held == 0


@pytest.mark.parametrize("engine", LECTURE)
def test_a_chunked_robots_txt_past_the_limit_is_read_as_far_as_the_limit(
    site: str, engine: str
) -> None:
    # Cut off at 500 KiB in the middle of a chunk, as RFC 9309 allows: its rules still
    # count (before, the cut chunk made it "unreachable": everything disallowed).
    crawl = run_blocking(engine, config(site + "/"))
    books = crawl.ledger
    assert books.done[site + "/"].status == 200 and books.done[site + "/open"].status == 200
    assert "robots.txt" in books.filtered[site + "/secret"]
    assert crawl.accounting().balanced


# ---- the reader alone: what it still accepts ------------------------------------------


def read(raw: bytes, max_size: int = 1000, truncate: bool = False) -> bytes:
    reader = ResponseReader(max_size, truncate)
    for at in range(0, len(raw), 7):  # in pieces, as recv() gives them
        reader.feed(raw[at : at + 7])
        if reader.complete:
            break
    reader.feed(b"")
    return reader.response().body


def test_lawful_framing_is_still_read() -> None:
    ok = b"HTTP/1.0 200\r\nContent-Length: 5, 5\r\n\r\nhello"
    assert read(ok) == b"hello"
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    assert read(chunked + b"A;name=value\r\n0123456789\r\n1 \r\n!\r\n0\r\n\r\n") == (b"0123456789!")


CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b"HTTP/1.1 +20 OK\r\n\r\n", BadResponse),
        (b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", BadResponse),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1_0\r\n\r\nhello", BadResponse),
        (CHUNKED + b"1_0\r\n", BadResponse),  # int("1_0", 16) is 16
        (CHUNKED + b"2\r\nabc\r\n0\r\n\r\n", BadResponse),  # a chunk longer than its size
        (CHUNKED + b"f" * 16 + b"\r\n", BadResponse),
        (CHUNKED + b"5\r\nab", PayloadIncomplete),
    ],
)
def test_what_int_would_take_and_http_does_not_is_refused(
    raw: bytes, error: type[Exception]
) -> None:
    with pytest.raises(error):
        read(raw)
