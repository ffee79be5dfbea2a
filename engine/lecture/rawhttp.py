"""A small HTTP/1.0 GET over a raw socket, for the lecture engines (stages 1 and 2).

The chapter sends `GET /353/ HTTP/1.0` by hand and reads until the server closes the
socket. This module keeps that shape and fills in what the chapter leaves out, so both
lecture engines can crawl a real server and make the same records as the asyncio engine:
a Host header with the port, `Connection: close`, a status line and headers parsed, a
body limit, `Content-Length` checked, and the answer turned into the Ledger's `Answer`.

Nothing here does I/O. `Request` says where to connect and what bytes to send;
`ResponseReader` is fed whatever `recv()` returned and says when the response is
complete. The engines do the waiting, each in its own style (callbacks or generators),
so the lecture can set the two side by side.

Only plain http: `https` URLs raise `UnsupportedScheme` (TLS over a non-blocking socket
is a chapter of its own). No `Accept-Encoding` is sent, so bodies come uncompressed.
"""

from __future__ import annotations

import re
import socket
from dataclasses import dataclass, field
from typing import Any

from protego import Protego
from yarl import URL

from ..ledger import Answer
from ..politeness import ROBOTS_MAX_BYTES, RobotsRules
from ..records import describe_exception, media_type

__all__ = [
    "CHUNK",
    "ROBOTS_MAX_HOPS",
    "Address",
    "BadResponse",
    "HttpError",
    "PayloadIncomplete",
    "RawResponse",
    "Request",
    "ResponseReader",
    "ServerDisconnected",
    "TooManyRedirects",
    "UnsupportedScheme",
    "parse_content_type",
    "resolve",
    "retryable",
    "robots_rules",
    "robots_unreachable",
]

CHUNK = 65536  # bytes asked of one recv(); the chapter's 4096 costs a loop turn per 4 KiB
MAX_HEAD = 65536  # a status line and headers longer than this are not a response we read
# Longer numbers than these are refused before they are turned into ints: 18 decimal or
# 15 hex digits stay far below 2**63, and far past any body a crawler would read.
MAX_LENGTH_DIGITS = 18
MAX_CHUNK_SIZE_DIGITS = 15
_DEFAULT_PORT = 80

# Written out, not \d or int()'s own checks: str.isdigit() and \d accept "²" or "٣",
# and int() accepts signs, spaces, underscores and (base 16) a "0x" prefix, none of
# which HTTP allows (RFC 9112: status-code = 3DIGIT, chunk-size = 1*HEXDIG).
_STATUS_LINE = re.compile(r"HTTP/[0-9]\.[0-9] ([1-9][0-9]{2})(?: (.*))?", re.DOTALL)
_DECIMAL = re.compile(rb"[0-9]+")
_HEX = re.compile(rb"[0-9A-Fa-f]+")


class UnsupportedScheme(Exception):
    """The lecture engines speak plain http only; not retried (it cannot get better)."""

    def __init__(self) -> None:
        super().__init__("the lecture engines speak plain http")


class HttpError(Exception):
    """The server's bytes were not a whole HTTP response. Retried, like a network error,
    unless `retryable()` says otherwise."""


class ServerDisconnected(HttpError):
    """The connection ended before the status line and headers were complete."""


class PayloadIncomplete(HttpError):
    """The connection ended before the `Content-Length` bytes of body arrived."""


class BadResponse(HttpError):
    """The status line, a header or the body's framing breaks HTTP's rules. Not retried:
    asking again gets the same bytes (the asyncio engine does not retry aiohttp's
    ClientResponseError for these either)."""


class TooManyRedirects(HttpError):
    """robots.txt redirected more than ROBOTS_MAX_HOPS times."""


def retryable(exc: BaseException) -> bool:
    """Whether a failed try is worth another: the network's fault (a refused or reset
    connection, a timeout, an answer cut off), not a server that speaks no HTTP."""
    return isinstance(exc, OSError | HttpError) and not isinstance(exc, BadResponse)


@dataclass(frozen=True, slots=True)
class Request:
    """Where to connect and the bytes of one GET."""

    url: str
    host: str  # to resolve and connect to (an IPv6 literal without brackets)
    port: int
    data: bytes

    @classmethod
    def get(cls, url: str, user_agent: str) -> Request:
        """The request for `url` (already normalised), or UnsupportedScheme for https."""
        parsed = URL(url)
        if parsed.scheme != "http":
            raise UnsupportedScheme()
        host = parsed.raw_host or ""
        port = parsed.port or _DEFAULT_PORT
        # The Host header carries the port when it is not 80, as every client does; the
        # demo site builds its absolute links from it, so it must match aiohttp's.
        name = f"[{host}]" if ":" in host else host
        host_header = name if port == _DEFAULT_PORT else f"{name}:{port}"
        head = (
            f"GET {parsed.raw_path_qs or '/'} HTTP/1.0\r\n"
            f"Host: {host_header}\r\n"
            f"User-Agent: {user_agent}\r\n"
            "Accept: */*\r\n"
            # HTTP/1.0 closes by default; saying so keeps servers that reply in 1.1 honest,
            # and "read until EOF" is how the chapter knows the response is over.
            "Connection: close\r\n"
            "\r\n"
        )
        # normalize() left only ASCII in the URL (punycode host, percent-escaped path).
        return cls(url, host, port, head.encode("ascii"))


# What socket.socket() and connect() need: family, type, protocol, address.
Address = tuple[int, int, int, Any]


def resolve(host: str, port: int, cache: dict[tuple[str, int], Address]) -> Address:
    """The first TCP address for host:port, remembered per crawl. Only that one is tried:
    aiohttp falls back to the next address when a connect fails; these engines do not.

    getaddrinfo blocks: the event loop stands still while DNS answers. The chapter
    connects to a literal name and blocks the same way; for the demo site (an IP address)
    the call returns at once. A real crawler would resolve in a thread.
    """
    key = (host, port)
    found = cache.get(key)
    if found is None:
        family, kind, proto, _name, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM
        )[0]
        found = cache[key] = (int(family), int(kind), proto, address)
    return found


@dataclass(slots=True)
class RawResponse:
    status: int
    reason: str
    headers: dict[str, str]  # lower-case name -> first value, as aiohttp's headers.get()
    body: bytes
    problem: str | None  # why the body was not read in full, in the asyncio engine's words

    @property
    def location(self) -> str | None:
        return self.headers.get("location")

    def answer(self) -> Answer:
        content_type, charset = parse_content_type(self.headers.get("content-type"))
        return Answer(
            status=self.status,
            content_type=content_type,
            charset=charset,
            location=self.location,
            body=self.body,
            problem=self.problem,
        )


def parse_content_type(raw: str | None) -> tuple[str | None, str | None]:
    """(media type, charset), as the asyncio engine records them (records.media_type: the
    type the server sent, None without one), so records match across engines."""
    if raw is None:
        return None, None
    kind = media_type(raw)
    _, _, rest = raw.partition(";")
    charset = None
    for param in rest.split(";"):
        name, eq, value = param.partition("=")
        if eq and name.strip().lower() == "charset":
            charset = value.strip().strip('"') or None
            break
    return kind, charset


@dataclass(slots=True)
class ResponseReader:
    """An HTTP/1.x response, assembled from whatever recv() returns.

    `feed(data)` after every recv; an empty `data` is EOF. `complete` turns True when
    the response is over: at EOF, when `Content-Length` bytes have come (a server that
    keeps the socket open anyway does not hold us up), or when the body passed
    `max_size`. Then `response()` gives the result or raises the HttpError that says
    why there is none.

    `truncate` is for robots.txt: keep the first `max_size` bytes and stop, instead of
    calling the body too large (RFC 9309 lets a crawler stop parsing after 500 KiB).
    """

    max_size: int
    truncate: bool = False
    complete: bool = False
    status: int | None = None  # set once the headers are in
    reason: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    problem: str | None = None
    _head: bytearray = field(default_factory=bytearray)
    _body: list[bytes] = field(default_factory=list)
    _size: int = 0
    _length: int | None = None
    _chunked: bool = False
    _eof: bool = False

    @property
    def headers_done(self) -> bool:
        return self.status is not None

    def feed(self, data: bytes) -> None:
        if self.complete:
            return
        if not data:
            self._eof = True
            self.complete = True
            return
        if self.status is None:
            self._head += data
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                if len(self._head) > MAX_HEAD:
                    raise BadResponse(f"no end of headers in the first {MAX_HEAD} bytes")
                return
            rest = bytes(self._head[end + 4 :])
            self._parse_head(bytes(self._head[:end]))
            self._head = bytearray()
            if self.complete or not rest:
                self._check_length()
                return
            data = rest
        self._take(data)

    def _parse_head(self, head: bytes) -> None:
        # Servers may send non-ASCII bytes in header values; aiohttp decodes them this
        # way, so a Location header reads the same in every engine.
        lines = head.decode("utf-8", "surrogateescape").split("\r\n")
        status = _STATUS_LINE.fullmatch(lines[0])
        if status is None:
            raise BadResponse(f"bad status line {lines[0][:100]!r}")
        code, reason = status.groups()
        headers: dict[str, str] = {}
        lengths: list[str] = []
        for line in lines[1:]:
            name, colon, value = line.partition(":")
            if not colon or not name or name != name.strip():
                raise BadResponse(f"bad header line {line[:100]!r}")
            headers.setdefault(name.lower(), value.strip())
            if name.lower() == "content-length":
                lengths.append(value)
        self.reason = reason or ""
        self.headers = headers
        self._chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        if lengths and not self._chunked:
            self._length = _content_length(lengths)
            if self._length > self.max_size and not self.truncate:
                self.problem = (
                    f"TooLarge: Content-Length {self._length} is over {self.max_size} bytes"
                )
                self.complete = True
        self.status = int(code)

    def _take(self, data: bytes) -> None:
        if self._length is not None:
            data = data[: self._length - self._size]  # bytes past the body are not ours
        self._body.append(data)
        self._size += len(data)
        if self._size > self.max_size:
            if self.truncate:
                self._body = [b"".join(self._body)[: self.max_size]]
            else:
                # Counted as it streams, so one huge page cannot fill our memory.
                self.problem = f"TooLarge: body over {self.max_size} bytes"
                self._body = []
            self.complete = True
            return
        self._check_length()

    def _check_length(self) -> None:
        if self._length is not None and self._size >= self._length:
            self.complete = True

    def response(self) -> RawResponse:
        if self.status is None:
            raise ServerDisconnected("connection closed before the response headers")
        body = b"" if self.problem else b"".join(self._body)
        if self.problem is None:
            if self._length is not None and self._size < self._length and self._eof:
                raise PayloadIncomplete(
                    f"connection closed after {self._size} of {self._length} body bytes"
                )
            if self._chunked:
                # A truncated robots.txt keeps what its whole chunks hold.
                cut_short = self.truncate and self._size > self.max_size
                body = _dechunk(body, cut_short)
        return RawResponse(self.status, self.reason, self.headers, body, self.problem)


def _content_length(values: list[str]) -> int:
    """The body length the Content-Length headers give, or BadResponse.

    RFC 9112 6.3: a Content-Length that is not a number, or several that disagree, make
    the response's framing unknowable, so it is refused rather than guessed at. A list
    of one number repeated ("5, 5") is allowed, as RFC 9110 8.6 does.
    """
    found: set[int] = set()
    for value in values:
        for item in value.split(","):
            text = item.strip().encode("utf-8", "surrogateescape")
            if not _DECIMAL.fullmatch(text):
                raise BadResponse(f"bad Content-Length {value.strip()[:40]!r}")
            if len(text) > MAX_LENGTH_DIGITS:
                raise BadResponse(
                    f"Content-Length of {len(text)} digits (at most {MAX_LENGTH_DIGITS})"
                )
            found.add(int(text))
    if len(found) != 1:
        shown = ", ".join(str(n) for n in sorted(found)[:4])
        raise BadResponse(f"Content-Length headers disagree ({shown})")
    return found.pop()


def _chunk_size(line: bytes) -> int:
    """The size a chunk-size line gives (extensions after ";" ignored), or BadResponse."""
    text = line.split(b";", 1)[0].rstrip(b" \t")
    if not _HEX.fullmatch(text):
        raise BadResponse(f"bad chunk size {text[:20]!r}")
    if len(text) > MAX_CHUNK_SIZE_DIGITS:
        raise BadResponse(f"chunk size of {len(text)} hex digits (at most {MAX_CHUNK_SIZE_DIGITS})")
    return int(text, 16)


def _dechunk(raw: bytes, cut_short: bool = False) -> bytes:
    """The body of a chunked transfer (which an HTTP/1.0 request should never get).

    Every step moves forward: a size is never negative and each chunk must end in
    CRLF, so a hostile size cannot send the loop back over bytes it has read.
    `cut_short`: the body was truncated on purpose, so its end is no error.
    """
    parts: list[bytes] = []
    at = 0
    while True:
        end = raw.find(b"\r\n", at)
        if end < 0:
            if cut_short:
                return b"".join(parts)
            raise PayloadIncomplete("chunked body ended inside a chunk size")
        size = _chunk_size(raw[at:end])
        if size == 0:
            return b"".join(parts)
        start = end + 2
        if start + size > len(raw):
            if cut_short:
                return b"".join([*parts, raw[start:]])
            raise PayloadIncomplete("chunked body ended inside a chunk")
        parts.append(raw[start : start + size])
        after = raw[start + size : start + size + 2]
        if after != b"\r\n":
            if not b"\r\n".startswith(after):
                raise BadResponse("chunk data not followed by CRLF")
            if cut_short:
                return b"".join(parts)
            raise PayloadIncomplete("chunked body ended after a chunk")
        at = start + size + 2


# ---- robots.txt, read the way engine/politeness.py reads it ---------------------------

ROBOTS_MAX_HOPS = 5  # redirects followed for robots.txt (RFC 9309 asks for at least five)


def robots_rules(response: RawResponse) -> RobotsRules:
    """The rules an answer for /robots.txt gives (RFC 9309 2.3.1)."""
    if response.status >= 500:
        # 2.3.1.4: a server error means assume complete disallow.
        return RobotsRules(None, disallow_all=True, note=f"answered {response.status}")
    if response.status >= 400:
        # 2.3.1.3: "unavailable" (4xx) means the crawler may access anything.
        return RobotsRules(None, note=f"answered {response.status}")
    text = response.body[:ROBOTS_MAX_BYTES].decode("utf-8", "replace")
    return RobotsRules(Protego.parse(text), note="parsed", text=text)


def robots_unreachable(exc: BaseException) -> RobotsRules:
    # 2.3.1.4: unreachable is treated like a server error.
    note = f"unreachable ({describe_exception(exc)})"
    return RobotsRules(None, disallow_all=True, note=note)
