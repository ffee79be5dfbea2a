"""The hostile site's kept-alive connection cases, and a Content-Type that is no media type.

A server that is out of step with its own connection can only be written in raw HTTP, and
it must own every request on that connection, so each such case is a small server of its
own (asyncio, no HTTP library) on another port of 127.0.0.1, started and stopped with the
hostile site's application; /hostile/keepalive/ links to them.

- stale-bytes: "/" sends a body that runs 48 bytes past its Content-Length, the last 48
  bytes 0.1 s late (sooner if the next request on that connection comes first). Its other
  pages answer 0.3 s after they are asked, so that request is in flight when the stale
  bytes come: a client that reads them as its status line records a failure that is not
  that page's.
- late-302: after each answer, once the connection has been idle for 0.1 s, the server
  writes a 302 nobody asked for. Its robots.txt asks for a Crawl-delay, so a polite
  crawler leaves the connection idle that long: a client that reuses it takes the 302 as
  the next page's answer. (Sent only while the connection is idle: a response sent while
  a request is in flight is, for any HTTP/1.1 client, the answer to that request.)

/hostile/content/type-foo answers with `Content-Type: foo`, which names no media type: a
crawler records it as sent, not as a library's substitute.
"""

from __future__ import annotations

import asyncio
import html
import select
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from aiohttp import web

from .origins_page import origins_page

__all__ = [
    "CONN_CASES",
    "CONN_ORIGINS",
    "CONN_REQUESTS",
    "FOOTER",
    "HIJACKED",
    "KEEPALIVE_INDEX",
    "LATE_302_DELAY",
    "PAGES",
    "STALE_DELAY",
    "TYPE_FOO",
    "CaseServer",
    "conn_origin_lines",
    "conn_routes",
    "serve_case",
]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

KEEPALIVE_INDEX = "/hostile/keepalive/"
TYPE_FOO = "/hostile/content/type-foo"
STALE_DELAY = 0.1  # seconds before the stale bytes follow their answer
LEAF_LATENCY = 0.3  # seconds before stale-bytes answers a page other than "/"
LATE_302_DELAY = 0.1  # seconds of idleness before late-302 sends its unsolicited 302
LATE_302_CRAWL_DELAY = 0.3  # the Crawl-delay late-302's robots.txt asks for
LATE_302_GIVE_UP = 10.0  # seconds after which an answer's late 302 is not sent at all
PAGES = ("/page-1", "/page-2", "/page-3")  # what each case's "/" links to
HIJACKED = "/hijacked"  # where the unsolicited 302 points
FOOTER = b"<p>footer of the page before, 48 bytes late</p>\n"  # 48 bytes


@dataclass(frozen=True)
class ConnCase:
    name: str
    about: str


CASES = (
    ConnCase(
        "stale-bytes",
        f'"/" has a body {len(FOOTER)} bytes longer than its Content-Length, the rest'
        f" {STALE_DELAY:g} s late, as the start of the next answer on that connection"
        f" (the next pages take {LEAF_LATENCY:g} s)",
    ),
    ConnCase(
        "late-302",
        f"after each answer, an unsolicited 302 to {HIJACKED} once the connection has"
        f" been idle {LATE_302_DELAY:g} s (robots.txt asks for Crawl-delay"
        f" {LATE_302_CRAWL_DELAY:g})",
    ),
)

CONN_CASES: dict[str, str] = {
    KEEPALIVE_INDEX: "kept-alive connection cases, each on an origin of its own (another"
    " port): " + "; ".join(f"{case.name}: {case.about}" for case in CASES),
    TYPE_FOO: "Content-Type: foo, which names no media type (to be recorded as sent)",
}
"""path -> description, for the hostile site's table of cases."""

CONN_ORIGINS: web.AppKey[dict[str, str]] = web.AppKey("crawlscope_conn_origins", dict)
"""App key of case name -> root URL of its server, filled in when the hostile app starts."""

CONN_REQUESTS: web.AppKey[dict[str, Counter[str]]] = web.AppKey("crawlscope_conn_requests", dict)
"""App key of case name -> its server's request counter (path -> requests)."""


# --------------------------------------------------------------------------------------
# Raw HTTP/1.1, one connection at a time.


def _page(title: str, links: tuple[str, ...] = ()) -> bytes:
    items = "".join(f'<li><a href="{href}">{href}</a></li>\n' for href in links)
    return (
        f"<!DOCTYPE html>\n<html><head><title>{html.escape(title)}</title></head>\n"
        f"<body>\n<h1>{html.escape(title)}</h1>\n<ul>\n{items}</ul>\n</body></html>\n"
    ).encode()


def _head(status: str, content_type: bytes | None, length: int, extra: bytes = b"") -> bytes:
    kind = b"Content-Type: " + content_type + b"\r\n" if content_type is not None else b""
    return (
        f"HTTP/1.1 {status}\r\n".encode()
        + kind
        + f"Content-Length: {length}\r\n".encode()
        + extra
        + b"\r\n"
    )


def _html(body: bytes) -> bytes:
    return _head("200 OK", b"text/html; charset=utf-8", len(body)) + body


def _unread(transport: asyncio.Transport) -> bool:
    """Bytes (or the peer's close) waiting on the socket that the loop has not read yet."""
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    poller = select.poll()
    poller.register(sock.fileno(), select.POLLIN)
    return bool(poller.poll(0))


class _Connection(asyncio.Protocol):
    """One client connection: requests are read as they come and answered in order."""

    def __init__(self, server: CaseServer) -> None:
        self.server = server
        self.case = server.name
        self.requests = server.requests
        self.transport: asyncio.Transport | None = None
        self.loop = asyncio.get_running_loop()
        self._buffer = b""
        self.heard = 0  # reads so far: a late write checks nothing came since its answer
        self._busy_until = 0.0  # loop time the last answer already promised goes out
        self._owed = b""  # the rest of the last body, past its Content-Length, not sent yet

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
        self.server.connections.discard(self)

    def data_received(self, data: bytes) -> None:
        self.heard += 1
        self._buffer += data
        while b"\r\n\r\n" in self._buffer:
            head, self._buffer = self._buffer.split(b"\r\n\r\n", 1)
            parts = head.split(b"\r\n", 1)[0].split()
            path = parts[1].decode("latin-1") if len(parts) >= 2 else "/"
            self.requests[path] += 1
            self.answer(path)

    def send(self, data: bytes, delay: float = 0.0) -> None:
        """Write `data` in `delay` seconds, and never before what was sent before it."""
        now = self.loop.time()
        at = max(now + delay, self._busy_until)
        self._busy_until = at
        if at <= now:
            self._write(data)
        else:
            self.loop.call_at(at, self._write, data)

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def answer(self, path: str) -> None:
        if self.case == "stale-bytes":
            self._answer_stale(path)
        else:
            self._answer_late_302(path)

    # -- stale-bytes ---------------------------------------------------------------

    def _answer_stale(self, path: str) -> None:
        # The rest of the last body comes when it is due or when the next request does,
        # whichever is first: before that request's answer, as if it were its start.
        self._pay_owed()
        if path == "/robots.txt":
            self.send(_head("404 Not Found", b"text/plain", 0))
        elif path == "/":
            body = _page("stale-bytes: the next answer starts with my footer", PAGES)
            self.send(_html(body))
            self._owed = FOOTER
            self.loop.call_later(self.server.stale_delay, self._pay_owed)
        else:
            body = _page(f"stale-bytes: {path}, answered {LEAF_LATENCY:g} s late")
            self.send(_html(body), self.server.leaf_latency)

    def _pay_owed(self) -> None:
        owed, self._owed = self._owed, b""
        if owed:
            self.send(owed)

    # -- late-302 ----------------------------------------------------------------------

    def _answer_late_302(self, path: str) -> None:
        if path == "/robots.txt":
            body = f"User-agent: *\nCrawl-delay: {LATE_302_CRAWL_DELAY:g}\n".encode()
            self.send(_head("200 OK", b"text/plain", len(body)) + body)
        elif path == "/":
            body = _page("late-302: each answer is followed by a 302 nobody asked for", PAGES)
            self.send(_html(body))
        else:
            body = _page(f"late-302: {path}")
            self.send(_html(body))
        self._late_302(self.heard, self.loop.time() + LATE_302_GIVE_UP)

    def _late_302(self, heard: int, give_up: float) -> None:
        # Checked again until the connection has been idle a whole delay, or until the
        # next request's own answer arms a late 302 of its own.
        def check() -> None:
            transport = self.transport
            if transport is None or self.heard != heard or self.loop.time() > give_up:
                return
            if _unread(transport) or transport.get_write_buffer_size():
                self._late_302(heard, give_up)
                return
            self.send(_head("302 Found", None, 0, f"Location: {HIJACKED}\r\n".encode()))

        self.loop.call_later(self.server.late_302_delay, check)


@dataclass(eq=False)
class CaseServer:
    """One case's raw server: its root URL, requests counted per path, and its clients."""

    name: str
    stale_delay: float = STALE_DELAY
    leaf_latency: float = LEAF_LATENCY
    late_302_delay: float = LATE_302_DELAY
    requests: Counter[str] = field(default_factory=Counter)
    connections: set[_Connection] = field(default_factory=set)
    url: str = ""
    _server: asyncio.Server | None = None

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for connection in list(self.connections):
                connection.close()  # Python 3.11's Server leaves its clients open
            await self._server.wait_closed()


async def serve_case(
    name: str,
    *,
    stale_delay: float = STALE_DELAY,
    leaf_latency: float = LEAF_LATENCY,
    late_302_delay: float = LATE_302_DELAY,
) -> CaseServer:
    """Start one case's raw server on 127.0.0.1 and a free port (a test may change its
    delays from the cases' own)."""
    case = CaseServer(
        name, stale_delay=stale_delay, leaf_latency=leaf_latency, late_302_delay=late_302_delay
    )
    loop = asyncio.get_running_loop()
    case._server = await loop.create_server(lambda: _Connection(case), "127.0.0.1", 0)
    case.url = f"http://127.0.0.1:{case._server.sockets[0].getsockname()[1]}/"
    return case


# --------------------------------------------------------------------------------------
# Wiring into the hostile site.


async def _serve_origins(app: web.Application) -> AsyncIterator[None]:
    """Start every case's server with the hostile app, and stop them with it."""
    servers: list[CaseServer] = []
    try:
        for case in CASES:
            server = await serve_case(case.name)
            servers.append(server)
            app[CONN_ORIGINS][case.name] = server.url
            app[CONN_REQUESTS][case.name] = server.requests
        yield
    finally:
        app[CONN_ORIGINS].clear()
        for server in servers:
            await server.close()


async def _index(request: web.Request) -> web.Response:
    origins: dict[str, str] = request.app[CONN_ORIGINS]
    return origins_page(
        "kept-alive connection cases",
        "Each case owns every request on its connections, so it is a server of its own.",
        ((case.name, case.about) for case in CASES),
        origins,
    )


async def _type_foo(request: web.Request) -> web.Response:
    body = _page("Content-Type: foo", ())
    return web.Response(body=body, headers={"Content-Type": "foo"})


def conn_routes(app: web.Application) -> dict[str, Handler]:
    """Have `app` (not yet started) start the cases' servers, and give its routes."""
    if CONN_ORIGINS not in app:
        app[CONN_ORIGINS] = {}
        app[CONN_REQUESTS] = {}
        app.cleanup_ctx.append(_serve_origins)
    return {KEEPALIVE_INDEX: _index, TYPE_FOO: _type_foo}


def conn_origin_lines(app: web.Application) -> list[str]:
    """One line per running case: its URL and what it shows (for `demo-site` to print)."""
    origins = app.get(CONN_ORIGINS, {})
    return [
        f"  {case.name} on {origins[case.name]}  {case.about}"
        for case in CASES
        if case.name in origins
    ]
