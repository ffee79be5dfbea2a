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


async def read_reply(reader: asyncio.StreamReader, depth: int = 0) -> Reply:
    """One reply, RESP2 or RESP3 (a push message before it is passed over); an error
    reply comes back as its exception, not raised. InvalidResponse if it breaks RESP or
    the caps."""
    while True:
        line = await reader.readuntil(b"\r\n")  # within the stream's limit (64 KiB)
        kind, body = line[:1], line[1:-2]
        if kind != b">":
            break
        await _items(reader, body, depth)  # out of band (client tracking): not ours
    if kind in (b"$", b"=", b"!"):
        size = _count(body, MAX_BULK)
        if size < 0:
            return None
        data = (await reader.readexactly(size + 2))[:-2]
        if kind == b"!":
            return error_of(data.decode(errors="replace"))
        return data
    if kind in (b"*", b"~", b"%"):
        items = await _items(reader, body, depth, 2 if kind == b"%" else 1)
        return items
    if kind == b":" or kind == b"(":
        return _count(body, None)
    if kind == b"+":
        return body.decode(errors="replace")
    if kind == b"-":
        return error_of(body.decode(errors="replace"))
    if kind == b"_":
        return None
    if kind == b"#":
        return body == b"t"
    if kind == b",":
        try:
            return float(body)
        except ValueError:
            raise InvalidResponse("a double that is not a number") from None
    raise InvalidResponse(f"not a RESP reply: {line[:40]!r}")


async def _items(
    reader: asyncio.StreamReader, body: bytes, depth: int, per: int = 1
) -> list[Reply] | None:
    count = _count(body, MAX_ITEMS)
    if count < 0:
        return None
    if depth >= MAX_DEPTH:
        raise InvalidResponse("a reply nested too deep")
    return [await read_reply(reader, depth + 1) for _ in range(count * per)]


def _count(body: bytes, most: int | None) -> int:
    try:
        count = int(body)
    except ValueError:
        raise InvalidResponse("a length that is not a number") from None
    if most is not None and not -1 <= count <= most:
        raise InvalidResponse(f"a length out of bounds ({count})")
    return count


class ScriptWire:
    """One connection taken from `client`'s pool, kept for the pump's rounds."""

    def __init__(self, client: aioredis.Redis) -> None:
        self._pool = client.connection_pool
        self._conn: object | None = None
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
                return [await read_reply(reader) for _ in commands]
        except TimeoutError as exc:  # asyncio's: no reply within the client's socket_timeout
            await self.drop()
            raise RedisTimeout("Timeout reading from Redis") from exc
        except asyncio.IncompleteReadError as exc:
            await self.drop()
            raise ConnectionError("Redis closed the connection mid-reply") from exc
        except asyncio.LimitOverrunError as exc:
            await self.drop()
            raise InvalidResponse("a line of a reply longer than 64 KiB") from exc
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
        if conn is not None:
            try:
                await conn.disconnect()  # type: ignore[attr-defined]
            finally:
                await self._pool.release(conn)  # type: ignore[arg-type]
