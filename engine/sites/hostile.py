"""A hostile demo website: every way a server can be slow, broken, huge or malicious.

Each case is one tiny route under /hostile/, usable from tests (over real sockets) and
by hand. A crawler that survives a crawl of this site must end in bounded time with
bounded memory, record every failure, and never show the site's text as anything but
text. `HOSTILE_CASES` lists the entry points; /hostile/ links to all of them.

Some cases need bytes that aiohttp's response writer refuses to produce (control
characters in headers, a body cut short, a connection reset), so they write raw HTTP
to the transport and close it. A handler that has done so still returns a response
object: aiohttp then finds the transport closing and drops the request quietly, where
raising an exception would log a traceback for something done on purpose.
"""

from __future__ import annotations

import asyncio
import html
import random
import socket
import struct
import threading
import zlib
from collections import Counter
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from aiohttp import web

from .hostile_comb import COMB_CASES, comb_routes
from .hostile_conn import CONN_CASES, conn_routes
from .hostile_dense import DENSE_CASES, dense_routes
from .hostile_http import HTTP_CASES, http_routes
from .hostile_robots import ROBOTS_CASES, robots_routes

__all__ = [
    "HOSTILE_CASES",
    "HOSTILE_REQUESTS",
    "HOSTILE_TEXTS",
    "ROBOTS_TXT",
    "add_hostile_routes",
    "build_hostile_app",
    "gzip_bomb",
    "landing",
]

# --------------------------------------------------------------------------------------
# Sizes and timings. Where CrawlConfig has a matching limit (max_size 10 MB, max_links
# 5000, max_url_length 2083, read_timeout), the case goes well past its default, so the
# limit, not luck, is what stops a crawler.

BIG_BODY_SIZE = 20 * 1024 * 1024  # streamed without Content-Length
BIG_BODY_CHUNK = 64 * 1024
LYING_LENGTH = 50 * 1024 * 1024  # what Content-Length claims
LYING_SENT = 4 * 1024  # what is actually sent before the server stalls
BOMB_SIZE = 100 * 1024 * 1024  # zeros before gzip; about 100 KB on the wire
DRIP_INTERVAL = 2.0  # seconds between the slow-drip page's bytes
MANY_LINKS = 20_000
LONG_URL_LENGTH = 5_000
NESTING_DEPTH = 10_000
BINARY_SIZE = 64 * 1024
SHORT_DECLARED = 1000  # Content-Length of the truncated body
SHORT_SENT = 10  # bytes actually sent before the connection closes
WIDE_TITLE_CHARS = 5_000  # CJK characters in the wide <title>
GONE_POLL = 0.25  # how often a stalling handler checks whether its client has left

_HTML = "text/html"

# --------------------------------------------------------------------------------------
# Untrusted text: what a page or a header may say to a crawler's screen and report.

HOSTILE_TEXTS: dict[str, str] = {
    "markup": "[bold]x[/bold]",
    "click": "[@click=app.quit]quit[/]",
    "link": "[link=http://evil.invalid/]click me[/link]",
    "ansi": "\x1b[31mred\x1b[0m",
    "osc8": "\x1b]8;;http://evil.invalid/\x07hyperlink\x1b]8;;\x07",
    "control": "a\x00b\x07c\x08d\x7fe\x9bf",  # \x9b is the one-byte (C1) form of ESC [
    "bidi": "abc\u202edcba\u202c",
    "wide": "漢字" * 75,
}
"""name -> hostile string. Each becomes a link, a <title> and a header value."""

# Characters left literal in the hostile hrefs: whatever Rich or Textual markup is made
# of. Everything else (controls, spaces, non-ASCII) is percent-encoded, as an href must.
_MARKUP_SAFE = "[]@=/:;,!$'()*+"

# One value holding every hostile string, for a header or a title.
_ALL_HOSTILE = " ".join(HOSTILE_TEXTS.values())


# --------------------------------------------------------------------------------------
# The cases. Paths are the entry points a crawl starts from; each handler is below.

HOSTILE_CASES: dict[str, str] = {
    # Limits
    "/hostile/limits/big-body": f"{BIG_BODY_SIZE >> 20} MB of HTML streamed, no Content-Length",
    "/hostile/limits/lying-length": (
        f"Content-Length says {LYING_LENGTH >> 20} MB; a few KB come, then nothing"
    ),
    "/hostile/limits/gzip-bomb": (
        f"gzip: about 100 KB on the wire, {BOMB_SIZE >> 20} MB of zeros decompressed"
    ),
    "/hostile/limits/slow-drip": f"headers, then one byte every {DRIP_INTERVAL:g} s, forever",
    "/hostile/limits/silent": "accepts the connection and never sends the headers",
    "/hostile/limits/many-links": f"a page with {MANY_LINKS:,} links",
    "/hostile/limits/long-url": f"a link whose URL is {LONG_URL_LENGTH:,} characters long",
    "/hostile/limits/odd-links": (
        "IDN host, IPv6 literal, percent-encoding variants, whitespace in hrefs, "
        "javascript:, mailto:, data:, tel:, empty and '#' hrefs"
    ),
    # Redirects
    "/hostile/redirect/no-location": "302 without a Location header",
    "/hostile/redirect/invalid": "Location: http://[broken",
    "/hostile/redirect/relative": "a relative Location (../landing)",
    "/hostile/redirect/scheme-relative": "a scheme-relative Location (//host:port/...)",
    "/hostile/redirect/ftp": "a redirect to ftp://",
    "/hostile/redirect/javascript": "a redirect to javascript:alert(1)",
    "/hostile/redirect/out-of-scope": "a redirect to another host (elsewhere.invalid)",
    "/hostile/redirect/self-loop": "a redirect to itself",
    "/hostile/redirect/with-body": "a 301 with an HTML body (and a link in it)",
    # Content
    "/hostile/content/malformed": "malformed HTML: unclosed tags, stray brackets, garbage",
    "/hostile/content/binary": f"{BINARY_SIZE >> 10} KB of random bytes labelled text/html",
    "/hostile/content/wrong-charset": "says charset=utf-8, is latin-1",
    "/hostile/content/unknown-charset": "charset=x-no-such",
    "/hostile/content/utf8-bom": "UTF-8 with a byte order mark, no charset in the header",
    "/hostile/content/utf16-bom": "UTF-16 LE with a byte order mark, no charset in the header",
    "/hostile/content/nul-bytes": "HTML with NUL bytes in it",
    "/hostile/content/deep-nesting": f"{NESTING_DEPTH:,} levels of nested tags",
    # Connection faults
    "/hostile/conn/reset": "the connection is reset before any response",
    "/hostile/conn/short-body": (
        f"Content-Length {SHORT_DECLARED}, {SHORT_SENT} bytes sent, then the connection closes"
    ),
    "/hostile/conn/close-after-headers": "chunked headers, then the connection closes",
    # Untrusted text
    "/hostile/text/links": "links whose URLs hold markup, escapes, bidi and wide text",
    "/hostile/text/title": "a <title> of markup, ANSI and OSC escapes, controls, bidi, CJK",
    "/hostile/text/header": "header values (X-Hostile, the Content-Type's charset) likewise",
    "/hostile/text/redirect": "a Location header likewise (unusable, so it must be reported)",
    "/hostile/text/bad-header": "a header name of markup and ESC: the client's parser rejects it",
    **ROBOTS_CASES,  # robots.txt cases, on servers of their own (engine/sites/hostile_robots.py)
    **CONN_CASES,  # kept-alive connection cases and Content-Type: foo (hostile_conn.py)
    **HTTP_CASES,  # numbers in the status line and framing headers (hostile_http.py)
    **DENSE_CASES,  # 10 MB pages of nothing but links (hostile_dense.py)
    **COMB_CASES,  # thousands of redirects into one long chain (hostile_comb.py)
}
"""path -> one-line description of the case (the /hostile/ index lists them)."""

HOSTILE_REQUESTS: web.AppKey[Counter[str]] = web.AppKey("crawlscope_hostile_requests", Counter)
"""App key of the per-path request counter (decoded path -> requests received), so a test
can check that a page was fetched at most so many times."""

ROBOTS_TXT = "User-agent: *\nAllow: /\nCrawl-delay: 0\n"

LANDING = "/hostile/landing"  # where redirects and the content cases' links lead
SAME_PAGE = "/hostile/same-page"  # the one page behind three percent-encoding spellings
SPACED_PAGE = "/hostile/spaced-page"  # reached through an href full of whitespace
MANY_PREFIX = "/hostile/many/"  # the many-links page's targets
LONG_PREFIX = "/hostile/long/"
TEXT_PAGE_PREFIX = "/hostile/text/page/"  # the hostile-text links' targets


def landing(via: str) -> str:
    """The landing URL path for one case, so each case's link or redirect is its own URL."""
    return f"{LANDING}?via={via}"


# The hrefs of the odd-links page, with what a crawler must make of each.
ODD_LINKS: dict[str, str] = {
    "http://bücher.example/": "IDN host: out of scope, filtered (as xn--bcher-kva.example)",
    "http://[::1]:1/": "IPv6 literal: out of scope, filtered",
    "/hostile/same%2Dpage": "same page as /hostile/same-page (%2D is '-')",
    SAME_PAGE: "the plain spelling",
    "/hostile/%73ame-page": "same page again (%73 is 's')",
    " \n\t/hostile/spaced\n-page\t \n": "whitespace and newlines around and inside",
    "javascript:alert(1)": "not http: dropped",
    " JavaScript:alert(2)": "not http, odd case and a leading space: dropped",
    "mailto:someone@example.invalid": "not http: dropped",
    "data:text/html,<a href=/hostile/landing?via=data>x</a>": "not http: dropped",
    "tel:+15555550100": "not http: dropped",
    "": "empty: this page itself",
    "#": "a fragment only: this page itself",
}


def text_href(name: str) -> str:
    """The href of one hostile string's link: markup literal, the rest percent-encoded."""
    return f"{TEXT_PAGE_PREFIX}{name}?{quote(HOSTILE_TEXTS[name], safe=_MARKUP_SAFE)}"


# --------------------------------------------------------------------------------------
# Page bodies: cheap to make per request, except the few big ones _Hostile keeps.


def _document(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n<html><head>"
        f"<title>{html.escape(title)}</title></head>\n"
        f"<body>\n<h1>{html.escape(title)}</h1>\n{body}</body></html>\n"
    )


def _anchor(href: str, text: str | None = None) -> str:
    label = href if text is None else text
    return f'<a href="{html.escape(href)}">{html.escape(label)}</a>'


def _index_html() -> str:
    items = "".join(
        f"<li>{_anchor(path)}: {html.escape(description)}</li>\n"
        for path, description in HOSTILE_CASES.items()
    )
    intro = "<p>Each link is a way for a web server to be slow, broken or malicious.</p>\n"
    return _document("crawlscope hostile site", f"{intro}<ul>\n{items}</ul>\n")


def _many_links_html() -> str:
    # 20,000 list items of about 40 bytes: 800 KB, built once rather than per request.
    items = "".join(f'<li><a href="{MANY_PREFIX}{n}">{n}</a></li>\n' for n in range(MANY_LINKS))
    return _document(f"{MANY_LINKS} links", f"<ul>\n{items}</ul>\n")


def _odd_links_html() -> str:
    items = "".join(
        f'<li><a href="{html.escape(href)}">{html.escape(note)}</a></li>\n'
        for href, note in ODD_LINKS.items()
    )
    return _document("Hostile spellings of links", f"<ul>\n{items}</ul>\n")


def _malformed_html() -> bytes:
    # Unclosed and misnested tags, stray "<" and ">", an attribute and a comment that
    # never end, bad entities, bytes that are not UTF-8: lxml must recover, and the links
    # before the damage must survive. (The title is closed: an unclosed <title> makes the
    # rest of any document title text, in browsers too, so it would hide every link.)
    return (
        b"<html><head><title>malformed</title><body><div><p><b><i>unclosed"
        b'<a href="' + landing("malformed").encode() + b'">first link</a>'
        b"<table><tr><td>cell<td><p>< not a tag > </b></i></table></span></div></div>"
        b"<<<>>> <a href='/hostile/landing?via=malformed-2'>second</a><a href=\"unterminated"
        b"<!-- a comment that never ends <p>\x01\x02garbage \xff\xfe\x80 &bogus; &#99999999;"
    )


def _binary_body() -> bytes:
    # Seeded, so the "page" is the same bytes on every run and a failure is repeatable.
    return random.Random(20_000).randbytes(BINARY_SIZE)


def _wrong_charset_body() -> bytes:
    text = _document(
        "Café crème brûlée: latin-1 bytes labelled utf-8",
        f"<p>Naïve résumé {_anchor(landing('wrong-charset'), 'café')}</p>\n",
    )
    return text.encode("latin-1")


def _unknown_charset_body() -> bytes:
    return _document(
        "An unknown charset", f"<p>{_anchor(landing('unknown-charset'), 'onward')}</p>\n"
    ).encode("utf-8")


def _utf8_bom_body() -> bytes:
    return b"\xef\xbb\xbf" + _document(
        "UTF-8 with a BOM: été ☃",
        f"<p>{_anchor(landing('utf8-bom'), 'onward ☃')}</p>\n",
    ).encode("utf-8")


def _utf16_bom_body() -> bytes:
    text = _document(
        "UTF-16 LE with a BOM: été ☃",
        f"<p>{_anchor(landing('utf16-bom'), 'onward ☃')}</p>\n",
    )
    return b"\xff\xfe" + text.encode("utf-16-le")


def _nul_bytes_body() -> bytes:
    return (
        b"<html><head><title>NUL\x00in the title</title></head><body>\x00\x00"
        b"<p>before\x00after</p>"
        b'<a href="' + landing("nul-bytes").encode() + b'">onward\x00</a>\x00'
        b"</body></html>\x00"
    )


def _deep_nesting_body() -> bytes:
    # The link sits at the bottom, so a parser that gives up on depth loses it.
    return (
        b"<html><body>"
        + b"<div>" * NESTING_DEPTH
        + b'<a href="'
        + landing("deep-nesting").encode()
        + b'">deep down</a>'
        + b"</div>" * NESTING_DEPTH
        + b"</body></html>"
    )


def _title_body() -> bytes:
    # Raw, not HTML-escaped: the title's characters reach the parser as they are.
    title = _ALL_HOSTILE + " " + "\u5bbd" * WIDE_TITLE_CHARS
    body = f"<p>{_anchor(landing('title'), 'onward')}</p>"
    return f"<html><head><title>{title}</title></head><body>{body}</body></html>".encode()


def _header_value(text: str) -> bytes:
    """`text` as raw header bytes: UTF-8, without CR and LF (they would end the header line)
    or NUL (HTTP parsers reject the whole response for it; /hostile/text/bad-header does
    that on purpose, and the other cases want their text to reach the crawler)."""
    return text.replace("\r", "").replace("\n", "").replace("\x00", "").encode("utf-8")


def _text_links_html() -> str:
    items = "".join(
        f'<li><a href="{html.escape(text_href(name))}">{html.escape(name)}</a></li>\n'
        for name in HOSTILE_TEXTS
    )
    return _document("Links to hostile text", f"<ul>\n{items}</ul>\n")


class _Bomb:
    """The gzip bomb's bytes, compressed on first use (about 0.3 s), then kept."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # callers run it in threads; compress only once
        self._data: bytes | None = None

    def get(self) -> bytes:
        with self._lock:
            if self._data is None:
                self._data = _gzip_zeros(BOMB_SIZE)
            return self._data


def _gzip_zeros(size: int) -> bytes:
    # wbits 31: the gzip container, which is what Content-Encoding: gzip promises.
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = bytes(1024 * 1024)
    parts: list[bytes] = []
    left = size
    while left > 0:
        parts.append(compressor.compress(block[: min(left, len(block))]))
        left -= len(block)
    parts.append(compressor.flush())
    return b"".join(parts)


_BOMB = _Bomb()


def gzip_bomb() -> bytes:
    """The gzip bomb's body, as served (compressed on the first call, about 0.3 s)."""
    return _BOMB.get()


# --------------------------------------------------------------------------------------
# Raw HTTP, for the cases aiohttp's writer would refuse or tidy up.


def _client_gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


async def _wait_while_connected(request: web.Request, seconds: float | None = None) -> bool:
    """Sleep `seconds` (None: for ever) or until the client hangs up; True if it is still there.

    Polled rather than relying on handler cancellation, which an embedding runner may not
    turn on: a stalling handler must end soon after its client does, whoever serves it,
    or the server's shutdown waits for it.
    """
    loop = asyncio.get_running_loop()
    deadline = None if seconds is None else loop.time() + seconds
    while not _client_gone(request):
        left = GONE_POLL if deadline is None else min(GONE_POLL, deadline - loop.time())
        if left <= 0:
            return True
        await asyncio.sleep(left)
    return False


def _raw_head(status: str, headers: list[tuple[bytes, bytes]]) -> bytes:
    lines = [f"HTTP/1.1 {status}".encode()]
    lines.extend(name + b": " + value for name, value in headers)
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _send_raw_and_close(request: web.Request, data: bytes) -> web.Response:
    """Write `data` as the whole answer and close the connection (close flushes first)."""
    transport = request.transport
    if transport is not None:
        transport.write(data)
        transport.close()
    return web.Response()  # aiohttp sees the closed transport and drops it silently


def _raw_response(
    request: web.Request,
    body: bytes,
    content_type: bytes,
    extra: list[tuple[bytes, bytes]] | None = None,
) -> web.Response:
    headers = [
        (b"Content-Type", content_type),
        *(extra or []),
        (b"Content-Length", str(len(body)).encode()),
        (b"Connection", b"close"),
    ]
    return _send_raw_and_close(request, _raw_head("200 OK", headers) + body)


# --------------------------------------------------------------------------------------
# Handlers.

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _html_response(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type=_HTML, charset="utf-8")


def _bytes_response(body: bytes, content_type: str = _HTML) -> web.Response:
    # A ready Content-Type header, so aiohttp adds no charset the case did not ask for.
    return web.Response(body=body, headers={"Content-Type": content_type})


class _Hostile:
    """Handlers and the few bodies big enough to be worth building once."""

    def __init__(self) -> None:
        self.index_body = _index_html()
        self.odd_links_body = _odd_links_html()
        self.text_links_body = _text_links_html()
        self.many_links_body: str | None = None  # 800 KB: only built if someone asks

    # -- the index and the pages links lead to ----------------------------------------

    async def index(self, request: web.Request) -> web.Response:
        return _html_response(self.index_body)

    async def leaf(self, request: web.Request) -> web.Response:
        # Landing pages, the same page, the many-links targets: small and link-free, so
        # they end the crawl's walk instead of growing it.
        return _html_response(_document(f"Leaf: {request.path_qs}", "<p>Nothing more.</p>\n"))

    # -- limits ----------------------------------------------------------------------

    async def big_body(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": _HTML})
        await response.prepare(request)  # no Content-Length: aiohttp streams it chunked
        chunk = b"<p>" + b"x" * (BIG_BODY_CHUNK - 9) + b"</p>\n\n"  # exactly BIG_BODY_CHUNK
        try:
            for _ in range(BIG_BODY_SIZE // len(chunk)):
                await response.write(chunk)
            await response.write_eof()
        except ConnectionError:
            pass  # the crawler cut it off, as it should
        return response

    async def lying_length(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": _HTML})
        response.content_length = LYING_LENGTH
        await response.prepare(request)
        try:
            await response.write(b"<p>" + b"x" * (LYING_SENT - 3))
            await _wait_while_connected(request)
        except ConnectionError:
            pass
        return response

    async def gzip_bomb(self, request: web.Request) -> web.Response:
        # Ready since startup; in a thread all the same, in case an app skipped on_startup.
        body = await asyncio.to_thread(gzip_bomb)
        return web.Response(body=body, headers={"Content-Type": _HTML, "Content-Encoding": "gzip"})

    async def slow_drip(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": _HTML})
        await response.prepare(request)
        try:
            while not _client_gone(request):
                await response.write(b".")
                await _wait_while_connected(request, DRIP_INTERVAL)
        except ConnectionError:
            pass
        return response

    async def silent(self, request: web.Request) -> web.Response:
        await _wait_while_connected(request)
        return web.Response()  # nobody is left to read it

    async def many_links(self, request: web.Request) -> web.Response:
        if self.many_links_body is None:
            self.many_links_body = _many_links_html()
        return _html_response(self.many_links_body)

    async def long_url(self, request: web.Request) -> web.Response:
        tail = "a" * (LONG_URL_LENGTH - len(LONG_PREFIX))
        body = f"<p>{_anchor(LONG_PREFIX + tail, 'a very long URL')}</p>\n"
        return _html_response(_document(f"A {LONG_URL_LENGTH}-character link", body))

    async def odd_links(self, request: web.Request) -> web.Response:
        return _html_response(self.odd_links_body)

    # -- redirects ---------------------------------------------------------------------

    async def redirect(self, request: web.Request) -> web.Response:
        name = request.path.rsplit("/", 1)[1]
        if name == "no-location":
            return web.Response(status=302, text="302 with no Location\n")
        locations = {
            "invalid": "http://[broken",
            "relative": "../landing?via=relative",
            "scheme-relative": f"//{request.host}{landing('scheme-relative')}",
            "ftp": "ftp://ftp.example.invalid/pub/file.txt",
            "javascript": "javascript:alert(1)",
            "out-of-scope": "http://elsewhere.invalid/",
            "self-loop": request.path,
        }
        if name == "with-body":
            body = (
                "<p>Moved. A redirect's body is not a page: "
                f"{_anchor(landing('redirect-body-link'), 'not to be followed')}</p>\n"
            )
            return web.Response(
                status=301,
                text=_document("Moved Permanently", body),
                content_type=_HTML,
                headers={"Location": "../landing?via=with-body"},
            )
        return web.Response(status=302, headers={"Location": locations[name]})

    # -- content ------------------------------------------------------------------------

    async def malformed(self, request: web.Request) -> web.Response:
        return _bytes_response(_malformed_html(), "text/html; charset=utf-8")

    async def binary(self, request: web.Request) -> web.Response:
        return _bytes_response(_binary_body())

    async def wrong_charset(self, request: web.Request) -> web.Response:
        return _bytes_response(_wrong_charset_body(), "text/html; charset=utf-8")

    async def unknown_charset(self, request: web.Request) -> web.Response:
        return _bytes_response(_unknown_charset_body(), "text/html; charset=x-no-such")

    async def utf8_bom(self, request: web.Request) -> web.Response:
        return _bytes_response(_utf8_bom_body())

    async def utf16_bom(self, request: web.Request) -> web.Response:
        return _bytes_response(_utf16_bom_body())

    async def nul_bytes(self, request: web.Request) -> web.Response:
        return _bytes_response(_nul_bytes_body())

    async def deep_nesting(self, request: web.Request) -> web.Response:
        return _bytes_response(_deep_nesting_body())

    # -- connection faults -------------------------------------------------------------

    async def reset(self, request: web.Request) -> web.Response:
        transport = request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                # Linger on, timeout 0: closing sends RST rather than FIN, a true reset.
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        return web.Response()

    async def short_body(self, request: web.Request) -> web.Response:
        head = _raw_head(
            "200 OK",
            [(b"Content-Type", _HTML.encode()), (b"Content-Length", str(SHORT_DECLARED).encode())],
        )
        return _send_raw_and_close(request, head + b"<p>" + b"x" * (SHORT_SENT - 3))

    async def close_after_headers(self, request: web.Request) -> web.Response:
        # Chunked, so the body's end must be marked: closing without the last chunk is a
        # fault, unlike a body with no length at all, which legally ends at the close.
        head = _raw_head(
            "200 OK", [(b"Content-Type", _HTML.encode()), (b"Transfer-Encoding", b"chunked")]
        )
        return _send_raw_and_close(request, head)

    # -- untrusted text ---------------------------------------------------------------

    async def text_links(self, request: web.Request) -> web.Response:
        return _html_response(self.text_links_body)

    async def text_page(self, request: web.Request) -> web.Response:
        # One hostile string, by name, as the page's <title> and an X-Hostile header.
        text = HOSTILE_TEXTS.get(request.match_info["name"], _ALL_HOSTILE)
        body = f"<html><head><title>{text}</title></head><body><p>{text}</p></body></html>"
        extra = [(b"X-Hostile", _header_value(text))]
        return _raw_response(request, body.encode(), b"text/html; charset=utf-8", extra)

    async def text_title(self, request: web.Request) -> web.Response:
        return _raw_response(request, _title_body(), b"text/html; charset=utf-8")

    async def text_header(self, request: web.Request) -> web.Response:
        # Not HTML, so the Content-Type's charset is all a crawler learns about encoding;
        # \xff is not UTF-8, so a lenient decoder gives a lone surrogate for it.
        hostile = _header_value(_ALL_HOSTILE.replace('"', ""))
        content_type = b'text/[bold]plain\x1b[31m; charset="' + hostile + b'\xff"'
        extra = [(b"X-Hostile", hostile + b" \xff")]
        return _raw_response(request, b"hostile headers\n", content_type, extra)

    async def text_redirect(self, request: web.Request) -> web.Response:
        # Brackets make the host an unusable IPv6 literal: the crawler cannot follow it
        # and must report the header it got, literally.
        location = b"http://" + _header_value(_ALL_HOSTILE) + b"/"
        head = _raw_head(
            "302 Found",
            [(b"Location", location), (b"Content-Length", b"0"), (b"Connection", b"close")],
        )
        return _send_raw_and_close(request, head)

    async def text_bad_header(self, request: web.Request) -> web.Response:
        # Not a valid header name, so the client's parser refuses the response with an
        # error that quotes the line: hostile text arriving inside an exception message.
        bad_name = b"X-[bold]" + _header_value(HOSTILE_TEXTS["ansi"] + HOSTILE_TEXTS["bidi"])
        head = _raw_head(
            "200 OK", [(bad_name, b"x"), (b"Content-Length", b"0"), (b"Connection", b"close")]
        )
        return _send_raw_and_close(request, head)


# --------------------------------------------------------------------------------------
# The application.


def _counted(handler: Handler) -> Handler:
    async def counting(request: web.Request) -> web.StreamResponse:
        # Counted first, so a test sees a request that is still stalling.
        request.app[HOSTILE_REQUESTS][request.path] += 1
        return await handler(request)

    return counting


async def _prepare_bomb(_app: web.Application) -> None:
    # Compressed when the server starts (once per process), not on the first request:
    # otherwise that request waits for zlib and a crawler with a short read timeout
    # (or a loaded test machine) sees a silent server instead of a bomb.
    await asyncio.to_thread(gzip_bomb)


def add_hostile_routes(app: web.Application) -> None:
    """Add the /hostile/* routes (and a request counter) to an application not yet started.

    Starting the application then prepares the gzip bomb (about 0.3 s, once a process).

    Routes match in the order they were added, so call this before adding a catch-all
    route such as "/{tail:.*}", or it will answer for /hostile/ too.
    """
    if HOSTILE_REQUESTS not in app:
        app[HOSTILE_REQUESTS] = Counter()
    app.on_startup.append(_prepare_bomb)
    site = _Hostile()
    routes: dict[str, Handler] = {
        "/hostile/": site.index,
        "/hostile/limits/big-body": site.big_body,
        "/hostile/limits/lying-length": site.lying_length,
        "/hostile/limits/gzip-bomb": site.gzip_bomb,
        "/hostile/limits/slow-drip": site.slow_drip,
        "/hostile/limits/silent": site.silent,
        "/hostile/limits/many-links": site.many_links,
        "/hostile/limits/long-url": site.long_url,
        "/hostile/limits/odd-links": site.odd_links,
        "/hostile/content/malformed": site.malformed,
        "/hostile/content/binary": site.binary,
        "/hostile/content/wrong-charset": site.wrong_charset,
        "/hostile/content/unknown-charset": site.unknown_charset,
        "/hostile/content/utf8-bom": site.utf8_bom,
        "/hostile/content/utf16-bom": site.utf16_bom,
        "/hostile/content/nul-bytes": site.nul_bytes,
        "/hostile/content/deep-nesting": site.deep_nesting,
        "/hostile/conn/reset": site.reset,
        "/hostile/conn/short-body": site.short_body,
        "/hostile/conn/close-after-headers": site.close_after_headers,
        "/hostile/text/links": site.text_links,
        "/hostile/text/title": site.text_title,
        "/hostile/text/header": site.text_header,
        "/hostile/text/redirect": site.text_redirect,
        "/hostile/text/bad-header": site.text_bad_header,
        TEXT_PAGE_PREFIX + "{name}": site.text_page,
        LANDING: site.leaf,
        SAME_PAGE: site.leaf,
        SPACED_PAGE: site.leaf,
        MANY_PREFIX + "{n}": site.leaf,
        LONG_PREFIX + "{tail}": site.leaf,
    }
    routes.update({path: site.redirect for path in HOSTILE_CASES if "/redirect/" in path})
    routes.update(robots_routes(app))
    routes.update(conn_routes(app))
    routes.update(http_routes(app))
    routes.update(dense_routes(app))
    routes.update(comb_routes(app))
    missing = set(HOSTILE_CASES) - set(routes)
    if missing:  # a case added to the table but not wired up would silently 404
        raise RuntimeError(f"hostile cases without a handler: {sorted(missing)}")
    for path, handler in routes.items():
        app.router.add_get(path, _counted(handler))


async def _home(request: web.Request) -> web.Response:
    body = "<p>The hostile site is at " + _anchor("/hostile/") + ".</p>\n"
    return _html_response(_document("crawlscope hostile demo", body))


async def _robots(request: web.Request) -> web.Response:
    return web.Response(text=ROBOTS_TXT, content_type="text/plain", charset="utf-8")


def build_hostile_app() -> web.Application:
    """A standalone hostile site: "/" links to /hostile/, and robots.txt allows all."""
    app = web.Application()
    add_hostile_routes(app)
    app.router.add_get("/", _counted(_home))
    app.router.add_get("/robots.txt", _counted(_robots))
    return app
