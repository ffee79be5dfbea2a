"""Hostile HTTP framing: numbers in the status line and the framing headers that a
loose parser takes for something they are not.

Each case answers with raw bytes (aiohttp's writer would refuse to write them) and
closes the connection. They are aimed at the lecture engines' own HTTP client
(engine/lecture/rawhttp.py), the one crawlscope parser that reads these numbers by hand:
`str.isdigit()` is true for "²" while `int()` refuses it, and `int(text, 16)` accepts
"-6" and "0x10". A crawler must record each of these URLs as failed, with a clear
reason, and go on with the rest.

/hostile/http/ links to every case, so a lecture can crawl just these:
`crawlscope crawl --engine callbacks http://HOST:PORT/hostile/http/`.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable

from aiohttp import web

__all__ = ["HTTP_CASES", "HTTP_INDEX", "HTTP_RESPONSES", "http_routes"]

HTTP_INDEX = "/hostile/http/"
LONG_LENGTH_DIGITS = 5_000  # past int()'s default limit of 4,300 digits

_BODY = b"<html><body><p>If you read this, a bad frame was taken as good.</p></body></html>\n"


def _head(status: bytes, *headers: bytes) -> bytes:
    return b"\r\n".join([b"HTTP/1.1 " + status, *headers, b"Connection: close"]) + b"\r\n\r\n"


def _chunked(size_line: bytes, data: bytes) -> bytes:
    # One chunk whose size line is `size_line`, then a proper last chunk.
    head = _head(b"200 OK", b"Content-Type: text/html", b"Transfer-Encoding: chunked")
    return head + size_line + b"\r\n" + data + b"\r\n0\r\n\r\n"


def _with_length(*lengths: bytes, status: bytes = b"200 OK") -> bytes:
    headers = [b"Content-Length: " + length for length in lengths]
    return _head(status, b"Content-Type: text/html", *headers) + _BODY


HTTP_RESPONSES: dict[str, bytes] = {
    # int(b"-6", 16) is -6: a parser that steps on by the size walks back, for ever.
    "/hostile/http/negative-chunk": _chunked(b"-6", b"abcdef"),
    "/hostile/http/hex-prefix-chunk": _chunked(b"0x10", b"0123456789abcdef"),
    "/hostile/http/superscript-length": _with_length("²".encode()),
    "/hostile/http/long-length": _with_length(b"9" * LONG_LENGTH_DIGITS),
    "/hostile/http/conflicting-length": _with_length(b"5", str(len(_BODY)).encode()),
    "/hostile/http/superscript-status": _with_length(
        str(len(_BODY)).encode(), status="²00 OK".encode()
    ),
}
"""path -> the whole answer, as sent."""

HTTP_CASES: dict[str, str] = {
    HTTP_INDEX: "an index of the hostile framing cases below, to crawl them alone",
    "/hostile/http/negative-chunk": "chunked, with a chunk size of -6",
    "/hostile/http/hex-prefix-chunk": "chunked, with a chunk size written 0x10",
    "/hostile/http/superscript-length": "Content-Length: ² (isdigit() says yes, int() no)",
    "/hostile/http/long-length": f"a Content-Length of {LONG_LENGTH_DIGITS:,} digits",
    "/hostile/http/conflicting-length": "two Content-Length headers that disagree",
    "/hostile/http/superscript-status": "the status line HTTP/1.1 ²00 OK",
}
"""path -> one-line description (the /hostile/ index and /hostile/http/ list them)."""

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _send_and_close(request: web.Request, data: bytes) -> web.Response:
    """Write `data` as the whole answer and close (the transport flushes first)."""
    transport = request.transport
    if transport is not None:
        transport.write(data)
        transport.close()
    # aiohttp finds the transport closing and drops this response quietly.
    return web.Response()


def _raw_handler(data: bytes) -> Handler:
    async def handler(request: web.Request) -> web.Response:
        return _send_and_close(request, data)

    return handler


async def _index(request: web.Request) -> web.Response:
    items = "".join(
        f'<li><a href="{path}">{path}</a>: {html.escape(description)}</li>\n'
        for path, description in HTTP_CASES.items()
        if path != HTTP_INDEX
    )
    body = f"<html><head><title>Hostile HTTP framing</title></head><body><ul>\n{items}</ul>"
    return web.Response(text=body + "</body></html>\n", content_type="text/html")


def http_routes(app: web.Application) -> dict[str, Handler]:
    """path -> handler for every case in HTTP_CASES (the app needs no setup)."""
    routes: dict[str, Handler] = {HTTP_INDEX: _index}
    routes.update({path: _raw_handler(data) for path, data in HTTP_RESPONSES.items()})
    return routes
