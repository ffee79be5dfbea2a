"""Kept-alive connections that fall out of step with their requests (issue 10, item 8), and
the Content-Type a record gives (item 12): raw servers over real sockets.

A server that writes past its Content-Length, or writes when nobody asked, leaves bytes on
a pooled connection; none of them may become another URL's answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import aiohttp
import pytest
from aiohttp import web

from crawlscope.engine.crawler import Crawler
from crawlscope.engine.records import media_type
from crawlscope.engine.sites.hostile import HOSTILE_CASES, build_hostile_app
from crawlscope.engine.sites.hostile_conn import (
    CONN_ORIGINS,
    CONN_REQUESTS,
    HIJACKED,
    KEEPALIVE_INDEX,
    PAGES,
    STALE_DELAY,
    TYPE_FOO,
    CaseServer,
    serve_case,
)
from helpers import assert_accounted, run_crawl

Raw = Callable[[bytes], bytes]  # a request head -> the bytes to answer it with


@asynccontextmanager
async def case_server(name: str, stale_delay: float = STALE_DELAY) -> AsyncIterator[CaseServer]:
    server = await serve_case(name, stale_delay=stale_delay)
    try:
        yield server
    finally:
        await server.close()


def records_by_path(crawler: Crawler, root: str) -> dict[str, tuple[int | None, str | None]]:
    base = root.rstrip("/")
    return {
        record.url.removeprefix(base): (record.status, record.exception)
        for record in [*crawler.ledger.done.values(), *crawler.ledger.failed.values()]
    }


# ---- stale bytes ----------------------------------------------------------------------


async def test_bytes_past_content_length_do_not_become_the_next_pages_answer() -> None:
    # The footer "/" owes comes exactly when the next request arrives on its connection:
    # that request is in flight and reads it first, as its status line.
    async with case_server("stale-bytes", stale_delay=3600) as server:
        crawler = await run_crawl(server.url, max_tasks=1)
    answers = records_by_path(crawler, server.url)
    assert answers == {"/": (200, None), **{page: (200, None) for page in PAGES}}
    for page in PAGES:
        assert crawler.ledger.done[server.url.rstrip("/") + page].tries == 1
    # It did happen: the first page was asked twice, once on the connection "/" came on
    # (where it met the footer) and once more on a connection of its own.
    assert server.requests[PAGES[0]] == 2
    assert sum(server.requests[page] for page in PAGES) == len(PAGES) + 1
    assert_accounted(crawler)


async def test_stale_bytes_as_the_hostile_site_sends_them() -> None:
    # 0.1 s late, as `demo-site --hostile` serves it, with many workers: whichever request
    # meets them, every page ends with its own answer.
    async with case_server("stale-bytes") as server:
        crawler = await run_crawl(server.url, max_tasks=4)
    answers = records_by_path(crawler, server.url)
    assert answers == {"/": (200, None), **{page: (200, None) for page in PAGES}}


async def test_a_protocol_error_on_a_new_connection_counts_at_once(
    serve_raw: Callable[[Raw], Awaitable[str]],
) -> None:
    # Not a reused connection: nothing to blame but the server, so no second request.
    asked: list[bytes] = []

    def answer(head: bytes) -> bytes:
        asked.append(head)
        return b"<p>not HTTP at all</p>\r\n\r\n"

    root = await serve_raw(answer)
    crawler = await run_crawl(root, obey_robots=False)
    record = crawler.ledger.failed[root]
    assert record.exception is not None and record.exception.startswith("ClientResponseError")
    assert record.tries == 1
    assert len(asked) == 1


# ---- a late 302 -----------------------------------------------------------------------


async def test_an_unsolicited_302_on_an_idle_connection_is_not_the_next_pages_answer() -> None:
    # robots.txt asks for a Crawl-delay longer than the server waits before its 302, so
    # the 302 lands while the connection "/" came on sits idle in the pool.
    async with case_server("late-302") as server:
        crawler = await run_crawl(server.url, max_tasks=1)
    answers = records_by_path(crawler, server.url)
    assert answers == {"/": (200, None), **{page: (200, None) for page in PAGES}}
    assert not any(record.next_url for record in crawler.ledger.done.values())
    assert server.url.rstrip("/") + HIJACKED not in crawler.ledger.seen_urls
    assert server.requests[HIJACKED] == 0
    assert_accounted(crawler)


# ---- Content-Type ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (b"foo", "foo"),
        (b"Foo; charset=latin-1", "foo"),
        (b"TEXT/HTML; charset=UTF-8", "text/html"),
        (b"text/plain", "text/plain"),
        (b"", None),
        (None, None),
    ],
)
async def test_content_type_is_the_media_type_the_server_sent(
    serve_raw: Callable[[Raw], Awaitable[str]], header: bytes | None, expected: str | None
) -> None:
    line = b"" if header is None else b"Content-Type: " + header + b"\r\n"

    def answer(_head: bytes) -> bytes:
        return b"HTTP/1.1 200 OK\r\n" + line + b"Content-Length: 2\r\n\r\nhi"

    root = await serve_raw(answer)
    crawler = await run_crawl(root, obey_robots=False)
    assert crawler.ledger.done[root].content_type == expected


def test_media_type_keeps_what_it_cannot_parse() -> None:
    assert media_type("foo") == "foo"
    assert media_type(" a/b/c ;x=y") == "a/b/c"
    assert media_type(";charset=utf-8") is None
    assert media_type(None) is None


# ---- the hostile site ----------------------------------------------------------------


@pytest.mark.slow
async def test_the_hostile_site_serves_the_connection_cases() -> None:
    for path in (KEEPALIVE_INDEX, TYPE_FOO):
        assert path in HOSTILE_CASES
    app = build_hostile_app()
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        origins = app[CONN_ORIGINS]
        assert set(origins) == {"stale-bytes", "late-302"}
        async with (
            aiohttp.ClientSession() as session,
            session.get(base + KEEPALIVE_INDEX) as response,
        ):
            index = await response.text()
        for url in origins.values():
            assert f'href="{url}"' in index
        crawler = await run_crawl(base + TYPE_FOO)
        assert crawler.ledger.done[base + TYPE_FOO].content_type == "foo"
        for name, root in origins.items():
            crawler = await run_crawl(root, max_tasks=2)
            answers = records_by_path(crawler, root)
            assert answers == {"/": (200, None), **{p: (200, None) for p in PAGES}}, name
            assert app[CONN_REQUESTS][name]["/"] == 1
    finally:
        await runner.cleanup()
    assert app[CONN_ORIGINS] == {}


# ---- a raw server for the odd answers -------------------------------------------------


@pytest.fixture
async def serve_raw() -> AsyncIterator[Callable[[Raw], Awaitable[str]]]:
    """Serve `answer(request head)` for every request on 127.0.0.1; returns the root URL."""
    servers: list[asyncio.Server] = []
    writers: list[asyncio.StreamWriter] = []

    async def start(answer: Raw) -> str:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writers.append(writer)
            try:
                while head := await reader.readuntil(b"\r\n\r\n"):
                    if head.startswith(b"GET /robots.txt "):
                        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                    else:
                        writer.write(answer(head))
                    await writer.drain()
            except (asyncio.IncompleteReadError, ConnectionError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/"

    yield start
    for server in servers:
        server.close()
    for writer in writers:
        writer.close()
    for server in servers:
        await server.wait_closed()
