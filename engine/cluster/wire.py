"""The pump's round trips to Redis, on a connection of its own: the scripts' calls written
as RESP and their replies read straight off the socket.

redis-py's pipeline cost the crawling process some 190 us of CPU a round (its retry
wrapper, its hooks for metrics, a parser that awaits every line of a reply), against some
30 us for the same bytes on a bare stream; at a round for every six to eight pages, that
was most of what a page paid for sharing its queue. The connection still comes from
redis-py's pool, connected and authenticated by it (TLS, passwords, the database, the
protocol), so that only the requests and the replies are this module's; a connection that
does not show its streams (another redis-py) leaves the rounds to its pipeline.

A reply is as untrusted as anything read from Redis: its lines, sizes and nesting are
capped, and whatever breaks the protocol drops the connection (a ConnectionError: the
pump waits for Redis as it does for any outage).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import redis.asyncio as aioredis
from redis.exceptions import (
    AuthenticationError,
    BusyLoadingError,
    ConnectionError,
    ExecAbortError,
    InvalidResponse,
    NoPermissionError,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    ResponseError,
    TryAgainError,
)
from redis.exceptions import TimeoutError as RedisTimeout

# The most a reply may hold: a lease's member is a URL and a few numbers, and a round takes
# at most as many leases as the process has workers.
MAX_BULK = 16 << 20  # bytes of one string
MAX_ITEMS = 1_000_000  # items of one array
MAX_DEPTH = 4  # arrays within arrays (the scripts' replies nest two deep)

# Redis's error codes as redis-py names them (its parser drops the code from the message
# of those it maps, as here): problems.py tells a permanent one from one that passes.
ERRORS: dict[str, type[ResponseError] | type[ConnectionError]] = {
    "NOSCRIPT": NoScriptError, "WRONGPASS": AuthenticationError,
    "NOAUTH": AuthenticationError, "NOPERM": NoPermissionError, "LOADING": BusyLoadingError,
    "READONLY": ReadOnlyError, "OOM": OutOfMemoryError, "EXECABORT": ExecAbortError,
    "TRYAGAIN": TryAgainError,
}  # fmt: skip

Reply = int | bytes | str | float | bool | None | list["Reply"] | Exception


def pack(commands: Sequence[Sequence[str | bytes | int]]) -> bytes:
    """Commands as RESP arrays of bulk strings, in one buffer."""
    out: list[bytes] = []
    for command in commands:
        out.append(b"*%d\r\n" % len(command))
        for arg in command:
            if isinstance(arg, str):
                data = arg.encode()
            elif isinstance(arg, bytes):
                data = arg
            elif isinstance(arg, int) and not isinstance(arg, bool):
                data = b"%d" % arg
            else:
                raise TypeError(f"not a Redis argument: {type(arg).__name__}")
            out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


def error_of(text: str) -> Exception:
    """The exception redis-py would make of an error reply."""
    code, _, rest = text.partition(" ")
    kind = ERRORS.get(code)
    if kind is not None:
        return kind(rest)
    return ResponseError(rest if code == "ERR" else text)


MAX_LINE = 64 << 10  # bytes of a line (a type, a length, a simple string or an error)
READ_BYTES = 1 << 16  # bytes asked of the socket at a time


class _Open:
    """An array (or a map, a set, a push message) whose items are still being read."""

    __slots__ = ("items", "left", "push")

    def __init__(self, left: int, push: bool) -> None:
        self.items: list[Reply] = []
        self.left = left
        self.push = push


class Replies:
    """Replies parsed from the bytes as they arrive, RESP2 or RESP3, however the bytes are
    cut: an element is read once, when it is whole. (Awaiting a stream's readuntil for
    each element took a round of DONE and an 8-lease TAKE 37-48 us; this, 23-28.) An
    error reply comes back as its exception, not raised; a push message (client
    tracking: not ours) is passed over. InvalidResponse if the bytes break RESP or the
    caps, as soon as they do."""

    def __init__(self, wanted: int) -> None:
        self.wanted = wanted
        self.done: list[Reply] = []
        self._buf = bytearray()
        self._open: list[_Open] = []  # arrays within arrays, the innermost last

    def feed(self, data: bytes) -> bool:
        """Take `data`; True once every wanted reply is whole."""
        buf, opened, done, wanted = self._buf, self._open, self.done, self.wanted
        buf += data
        at = 0
        while len(done) < wanted:
            end = buf.find(b"\r\n", at, at + MAX_LINE + 2)
            if end < 0:
                if len(buf) - at > MAX_LINE:
                    raise InvalidResponse("a line of a reply longer than 64 KiB")
                break
            kind = buf[at]
            value: Reply
            if kind in _BULK:
                size = _count(buf[at + 1 : end], MAX_BULK)
                if size < 0:
                    value, at = None, end + 2
                elif len(buf) < end + 4 + size:
                    break  # the string is not all here yet: read again from its line
                else:
                    at = end + 4 + size
                    value = bytes(buf[end + 2 : at - 2])
                    if kind == _ERROR:
                        value = error_of(value.decode(errors="replace"))
            elif kind in _AGGREGATE:
                count = _count(buf[at + 1 : end], MAX_ITEMS)
                at = end + 2
                push = kind == _PUSH
                if push and opened:
                    raise InvalidResponse("a push message inside a reply")
                if count < 0:
                    value = None
                else:
                    if len(opened) >= MAX_DEPTH:
                        raise InvalidResponse("a reply nested too deep")
                    if count:
                        opened.append(_Open(count * 2 if kind == _MAP else count, push))
                        continue
                    if push:
                        continue
                    value = []
            else:
                value = _simple(kind, bytes(buf[at + 1 : end]))
                at = end + 2
            if opened:
                top = opened[-1]
                top.items.append(value)
                top.left -= 1
                if top.left <= 0:
                    self._close()
            else:
                done.append(value)
        del buf[:at]
        return len(done) >= wanted

    @property
    def rest(self) -> bytes:
        """What came after the wanted replies (a push message, perhaps cut): the next
        round's to read first."""
        return bytes(self._buf)

    def _close(self) -> None:
        """The innermost array is whole: into the one around it, or done (a push message
        passed over), closing each array it fills in turn."""
        opened = self._open
        while opened and opened[-1].left <= 0:
            whole = opened.pop()
            if opened:
                top = opened[-1]
                top.items.append(whole.items)
                top.left -= 1
            elif not whole.push:
                self.done.append(whole.items)


def _count(body: bytes | bytearray, most: int | None) -> int:
    try:
        count = int(body)
    except ValueError:
        raise InvalidResponse("a length that is not a number") from None
    if most is not None and not -1 <= count <= most:
        raise InvalidResponse(f"a length out of bounds ({count})")
    return count


_BULK = frozenset(b"$=!")
_AGGREGATE = frozenset(b"*~%>")
_ERROR, _MAP, _PUSH = ord("!"), ord("%"), ord(">")


def _simple(kind: int, body: bytes) -> Reply:
    if kind == 58 or kind == 40:  # ":" an integer, "(" a big number
        return _count(body, None)
    if kind == 43:  # "+"
        return body.decode(errors="replace")
    if kind == 45:  # "-"
        return error_of(body.decode(errors="replace"))
    if kind == 95:  # "_" null
        return None
    if kind == 35:  # "#" a boolean
        return body == b"t"
    if kind == 44:  # "," a double
        try:
            return float(body)
        except ValueError:
            raise InvalidResponse("a double that is not a number") from None
    raise InvalidResponse(f"not a RESP reply: {bytes([kind]) + body[:40]!r}")


class ScriptWire:
    """One connection taken from `client`'s pool, kept for the pump's rounds."""

    def __init__(self, client: aioredis.Redis) -> None:
        self._pool = client.connection_pool
        self._conn: object | None = None
        self._rest = b""  # bytes read after the last round's replies, not yet parsed
        self.usable = True  # False: the pool's connections do not show their streams

    async def round(self, commands: Sequence[Sequence[str | bytes | int]]) -> list[Reply] | None:
        """Each command's reply, in order; error replies as exceptions, not raised. None
        if the pool's connections do not show their streams (the caller pipelines then).
        Raises a RedisError (or OSError) if Redis cannot be reached; the connection is
        dropped then, and the next round takes a new one."""
        conn = await self._connected()
        if conn is None:
            return None
        reader, writer = conn._reader, conn._writer  # type: ignore[attr-defined]
        try:
            async with asyncio.timeout(getattr(conn, "socket_timeout", None)):
                writer.write(pack(commands))
                await writer.drain()
                replies = Replies(len(commands))
                whole = replies.feed(self._rest)
                self._rest = b""
                while not whole:
                    whole = replies.feed(await reader.read(READ_BYTES))
                    if not whole and reader.at_eof():
                        raise ConnectionError("Redis closed the connection mid-reply")
                self._rest = replies.rest
                return replies.done
        except TimeoutError as exc:  # asyncio's: no reply within the client's socket_timeout
            await self.drop()
            raise RedisTimeout("Timeout reading from Redis") from exc
        except BaseException:
            # A reply half read (cancelled, refused by the caps, a reset): the stream is
            # out of step with the requests, and no later round may read it.
            await self.drop()
            raise

    async def _connected(self) -> object | None:
        if self._conn is None and self.usable:
            conn = await self._pool.get_connection()
            if getattr(conn, "_reader", None) is None or getattr(conn, "_writer", None) is None:
                self.usable = False
                await self._pool.release(conn)
                return None
            self._conn = conn
        return self._conn

    async def drop(self) -> None:
        """Close the connection and give it back to the pool (which connects it again
        when it is next taken)."""
        conn, self._conn = self._conn, None
        self._rest = b""
        if conn is not None:
            try:
                await conn.disconnect()  # type: ignore[attr-defined]
            finally:
                await self._pool.release(conn)  # type: ignore[arg-type]
