"""The pump's own round trips (engine/cluster/wire.py): against a real redis-server they
read what redis-py reads; against a server that answers redis-py's handshake and then
breaks the protocol, a round raises a RedisError and lets the connection go."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError, InvalidResponse, NoScriptError, RedisError
from redis_support import RedisServer, redis_server
from test_cluster import ROOT, frontier, record_done

from crawlscope.engine.cluster import redis_frontier
from crawlscope.engine.cluster.problems import RedisProblem
from crawlscope.engine.cluster.redis_frontier import RedisFrontier
from crawlscope.engine.cluster.wire import MAX_BULK, MAX_DEPTH, MAX_ITEMS, Replies, ScriptWire
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.ledger import Ledger
from helpers import until

__all__ = ["redis_server"]  # a fixture, used by name

SCRIPT = "return {{'a', 1}, 2, false, ARGV[1], {}}"


async def test_replies_read_as_redis_py_reads_them(redis_server: RedisServer) -> None:
    client = aioredis.Redis(port=redis_server.port)
    try:
        sha = await client.script_load(SCRIPT)
        commands = [
            ("EVALSHA", sha, 0, "caf\u00e9 \u2603"),
            ("EVALSHA", "0" * 40, 0),  # no such script
            ("EVAL", "return redis.error_reply('WRONGTYPE not a list')", 0),
            ("EVAL", "return redis.call('NOSUCHCOMMAND')", 0),
            ("EVAL", "return 3.7", 0),  # Lua's numbers reach RESP as integers
        ]
        pipe = client.pipeline(transaction=False)
        for command in commands:
            pipe.execute_command(*command)
        theirs = await pipe.execute(raise_on_error=False)
        wire = ScriptWire(client)
        ours = await wire.round(commands)
        assert ours is not None
        assert ours[0] == [[b"a", 1], 2, None, "caf\u00e9 \u2603".encode(), []]
        assert ours[:1] + ours[4:] == theirs[:1] + theirs[4:]
        for mine, redis_pys in zip(ours[1:4], theirs[1:4], strict=True):
            assert type(mine) is type(redis_pys) and str(mine) == str(redis_pys)
        assert isinstance(ours[1], NoScriptError)
        assert str(ours[2]).startswith("WRONGTYPE")  # problems.py reads it so
        await wire.drop()
    finally:
        await client.aclose()


async def test_a_round_after_redis_restarts_takes_a_new_connection(
    redis_server: RedisServer,
) -> None:
    client = aioredis.Redis(port=redis_server.port, socket_timeout=5)
    wire = ScriptWire(client)
    try:
        assert await wire.round([("EVAL", "return 1", 0)]) == [1]
        redis_server.stop()
        with pytest.raises((RedisError, OSError)):
            await wire.round([("EVAL", "return 2", 0)])
        redis_server.start()
        assert await wire.round([("EVAL", "return 3", 0)]) == [3]
    finally:
        await wire.drop()
        await client.aclose()


# ---- a server that breaks the protocol -----------------------------------------------

NESTED = b"*1\r\n" * (MAX_DEPTH + 2) + b":1\r\n"
# What the server answers to the round, and what the round must raise: each breach of a
# cap before the reply could be read whole (the server stays, so a round that went on
# reading would wait out its timeout instead, and raise a TimeoutError).
BROKEN: dict[str, tuple[bytes, type[RedisError]]] = {
    "a string past the cap": (b"$%d\r\n" % (MAX_BULK + 1), InvalidResponse),
    "an array past the cap": (b"*%d\r\n" % (MAX_ITEMS + 1), InvalidResponse),
    "arrays nested past the cap": (NESTED, InvalidResponse),
    "a length below -1": (b"$-5\r\n", InvalidResponse),
    "a length that is not a number": (b"*x\r\n", InvalidResponse),
    "a type no RESP has": (b"?what\r\n", InvalidResponse),
    "a line past the stream's limit": (b"+" + b"a" * 70_000 + b"\r\n", InvalidResponse),
    "a double that is no number": (b",1.2.3\r\n", InvalidResponse),
    "an end in the middle": (b"$10\r\nabc", ConnectionError),
}
ENDS = b"abc"  # the payload after which the server closes the connection


async def _command(reader: asyncio.StreamReader) -> list[bytes]:
    head = await reader.readuntil(b"\r\n")
    assert head[:1] == b"*"
    parts = []
    for _ in range(int(head[1:-2])):
        size = int((await reader.readuntil(b"\r\n"))[1:-2])
        parts.append((await reader.readexactly(size + 2))[:-2])
    return parts


@contextlib.asynccontextmanager
async def broken_redis(payload: bytes) -> AsyncIterator[int]:
    """Answers +OK to whatever redis-py says as it connects, and `payload` to EVAL."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                command = await _command(reader)
                writer.write(payload if command[0].upper() == b"EVAL" else b"+OK\r\n")
                await writer.drain()
                if payload.endswith(ENDS) and command[0].upper() == b"EVAL":
                    break
        except (asyncio.IncompleteReadError, ConnectionResetError):
            pass  # the client let the connection go
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("what", list(BROKEN))
async def test_a_reply_that_breaks_the_protocol_is_an_error_and_the_connection_goes(
    what: str,
) -> None:
    payload, error = BROKEN[what]
    async with broken_redis(payload) as port:
        client = aioredis.Redis(port=port, socket_timeout=3)
        wire = ScriptWire(client)
        try:
            with pytest.raises(RedisError) as raised:
                await wire.round([("EVAL", "return 1", 0)])
            assert type(raised.value) is error, raised.value
            assert wire._conn is None  # dropped: no later round reads that stream
        finally:
            await wire.drop()
            await client.aclose()


RESP3 = (
    b">2\r\n$10\r\ninvalidate\r\n*0\r\n"  # out of band: passed over
    b"*6\r\n_\r\n#t\r\n,2.5\r\n%1\r\n+k\r\n:7\r\n(12345678901234567890\r\n"
    b"!21\r\nNOSCRIPT no such one.\r\n"
    b"$5\r\nab\r\nc\r\n*-1\r\n*2\r\n*0\r\n$-1\r\n"  # a string holding CRLF; nulls
)


@pytest.mark.parametrize("piece", [len(RESP3), 1, 7], ids=["whole", "byte by byte", "by 7"])
async def test_resp3_replies_and_push_messages(piece: int) -> None:
    # However the bytes are cut as they arrive, each reply comes out whole and the same.
    replies = Replies(4)
    whole = [replies.feed(RESP3[at : at + piece]) for at in range(0, len(RESP3), piece)]
    assert whole == [False] * (len(whole) - 1) + [True]
    first, *rest = replies.done
    assert isinstance(first, list)
    assert first[:5] == [None, True, 2.5, ["k", 7], 12345678901234567890]
    assert isinstance(first[5], NoScriptError)
    assert str(first[5]) == "no such one."
    assert rest == [b"ab\r\nc", None, [[], None]]


async def test_a_push_message_cut_between_two_rounds_is_passed_over() -> None:
    # Out of band, a push message may follow a round's last reply in the same read, cut
    # anywhere: the rest of it comes before the next round's reply, and is read first.
    answers = iter([b":1\r\n>2\r\n$10\r\ninval", b"idate\r\n*0\r\n:2\r\n"])

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                command = await _command(reader)
                writer.write(next(answers) if command[0].upper() == b"EVAL" else b"+OK\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionResetError, StopIteration):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    client = aioredis.Redis(port=server.sockets[0].getsockname()[1], socket_timeout=3)
    wire = ScriptWire(client)
    try:
        assert await wire.round([("EVAL", "return 1", 0)]) == [1]
        assert await wire.round([("EVAL", "return 2", 0)]) == [2]
        assert wire._conn is not None  # the same connection, in step
    finally:
        await wire.drop()
        await client.aclose()
        server.close()
        await server.wait_closed()


async def test_a_pool_whose_connections_hide_their_streams_is_pipelined(
    redis_server: RedisServer,
) -> None:
    q = frontier(redis_server)
    q._wire.usable = False  # as with a redis-py that keeps them elsewhere
    assert q.ledger.admit(ROOT, 10, 0, None)
    q.put_nowait((ROOT, 10))
    lease = await asyncio.wait_for(q.get(), 10)
    record_done(q, lease.url)
    q.task_done(lease)
    await asyncio.wait_for(q.join(), 10)
    assert q.figures.done == 1 and q.figures.accounting().balanced
    assert q._wire._conn is None  # never taken
    await q.close()


async def test_a_take_answered_out_of_its_shape_stops_the_crawl_in_one_line() -> None:
    # Valid RESP, but "+OK" where the take's array of members and figures should be:
    # read as figures it would have raised in the pump and left the crawl waiting.
    async with broken_redis(b"+OK\r\n") as port:
        ledger = Ledger(CrawlConfig(roots=(ROOT,)))
        client = aioredis.Redis(port=port, socket_timeout=3)
        q = RedisFrontier(client, "t", ledger, shown_url=f"redis://127.0.0.1:{port}")
        problems: list[RedisProblem] = []
        q.on_give_up.append(problems.append)
        assert ledger.admit(ROOT, 10, 0, None)
        q.put_nowait((ROOT, 10))  # the pump's first round
        await until(lambda: bool(problems))
        assert "not of its shape" in str(problems[0]) and "\n" not in str(problems[0])
        await q.close()


async def test_pages_that_end_a_few_passes_apart_go_to_redis_in_one_round(
    redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A round costs the crawl and Redis the same whatever it carries: the pump lets the
    # workers that are ending their pages end them (GATHER_PASSES) before it sends one.
    monkeypatch.setattr(redis_frontier, "IDLE_POLL", 60.0)  # no round of its own meanwhile
    q = frontier(redis_server)
    urls = [ROOT + str(n) for n in range(4)]
    for url in urls:
        assert q.ledger.admit(url, 10, 0, None)
        q.put_nowait((url, 10))
    leases = [await asyncio.wait_for(q.get(), 10) for _ in urls]
    carried: list[int] = []
    send = q._send

    async def counting_send(*args: Any) -> list[object] | None:
        if args[3]:  # the leases it ends
            carried.append(len(args[3]))
        return await send(*args)

    q._send = counting_send  # type: ignore[method-assign]
    for lease in leases:  # one a pass of the loop, as pages end one after another
        record_done(q, lease.url)
        q.task_done(lease)
        await asyncio.sleep(0)
    await until(lambda: sum(carried) == len(urls))
    assert carried == [len(urls)]
    await asyncio.wait_for(q.join(), 10)
    await q.close()
