"""The frontier's Lua scripts called as the pump calls them, against a real redis-server:
what a round of takes and ends may give out, and what it counts."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
import redis
from redis_support import RedisServer, redis_server

from crawlscope.engine.cluster import scripts

__all__ = ["redis_server"]  # a fixture, used by name

P = "crawlscope:s:"
LEASE_MS = 30_000


class Scripts:
    def __init__(self, client: redis.Redis) -> None:
        self.client = client
        self._add = client.register_script(scripts.ADD)
        self._take = client.register_script(scripts.TAKE)
        self._done = client.register_script(scripts.DONE)

    def add(self, host: str, paths: list[str], limit: int = 0) -> None:
        args: list[object] = [P, limit, 0, len(paths)]
        for path in paths:
            url = host + path
            args += [url, f"{host} {json.dumps([url, 10, 1, None], separators=(',', ':'))}"]
        self._add(args=args)

    def take(self, want: int, limit: int = 0, me: str = "me", held: int = 0) -> list[str]:
        reply = self._take(args=[P, limit, want, LEASE_MS, 0, me, held])
        return list(reply[0])

    def done(self, members: list[str], limit: int = 0) -> int:
        args: list[object] = [P, limit, 0, len(members)]
        for member in members:
            args += [member, "done"]
        return int(self._done(args=args))

    def count(self, field: str) -> int:
        return int(self.client.hget(P + "n", field) or 0)

    def busy(self, host: str) -> int:
        return int(self.client.hget(P + "busy", host) or 0)


@pytest.fixture
def lua(redis_server: RedisServer) -> Iterator[Scripts]:
    client = redis_server.client()
    try:
        yield Scripts(client)
    finally:
        client.close()


def url_of(member: str) -> str:
    return str(json.loads(member.split(" ", 1)[1])[0])


A, B = "http://a.test", "http://b.test"


def test_a_lone_host_gives_no_more_than_its_free_slots_in_one_take(lua: Scripts) -> None:
    lua.add(A, [f"/{i}" for i in range(10)], limit=3)
    first = lua.take(10, limit=3)
    assert [url_of(m) for m in first] == [f"{A}/{i}" for i in range(3)]  # oldest first
    assert lua.busy(A) == 3 and lua.take(10, limit=3) == []
    assert lua.done(first[:1], limit=3) == 1
    assert [url_of(m) for m in lua.take(10, limit=3)] == [f"{A}/3"]
    assert lua.busy(A) == 3
    assert lua.count("queued") == 6 and lua.count("unfinished") == 9
    assert lua.client.zcard(P + "inflight") == 3


def test_hosts_ready_together_take_turns(lua: Scripts) -> None:
    lua.add(A, [f"/{i}" for i in range(5)])
    lua.add(B, [f"/{i}" for i in range(5)])
    # Neither host gives all it may while the other is ready too. (After a turn each, both
    # are ready again at the script's one "now": a tie, which goes by name.)
    hosts = [m.split(" ", 1)[0] for m in lua.take(6)]
    assert hosts[:2] == [A, B] and len(hosts) == 6


def test_a_process_takes_one_more_than_another_that_waits_and_no_more(lua: Scripts) -> None:
    lua.add(A, [f"/{i}" for i in range(10)])
    seconds, micros = lua.client.time()
    lua.client.zadd(P + "wanters", {"other": seconds * 1000 + micros // 1000})  # holds none
    assert len(lua.take(10, me="me")) == 2
    assert len(lua.take(10, me="me", held=2)) == 0
    assert len(lua.take(10, me="other")) == 4  # two more than "me", which waits now


def test_ends_are_counted_once_whatever_a_round_names(lua: Scripts) -> None:
    lua.add(A, [f"/{i}" for i in range(4)], limit=4)
    taken = lua.take(4, limit=4)
    assert lua.busy(A) == 4
    # A lease named twice in one round, and one that is no lease at all.
    assert lua.done([taken[0], taken[0], taken[1], f'{A} ["{A}/x",10,1,null]'], limit=4) == 2
    assert lua.done(taken[:2], limit=4) == 0  # ended already: nothing moves
    assert lua.busy(A) == 2 and lua.count("done") == 2 and lua.count("unfinished") == 2
    assert lua.client.zcard(P + "inflight") == 2


def test_a_member_written_by_hand_is_counted_as_it_is_taken(lua: Scripts) -> None:
    lua.add(A, ["/0"])
    url = f"{A}/by-hand"
    lua.client.rpush(P + "q:" + A, f"{A} {json.dumps([url, 10, 1, None])}")
    assert [url_of(m) for m in lua.take(5)] == [f"{A}/0", url]
    # The queued one was counted when added; the other only now, as unfinished.
    assert lua.count("queued") == 0 and lua.count("unfinished") == 2
    assert lua.client.sismember(P + "seen", url)


def test_a_round_of_thousands_of_leases_is_taken_and_ended(lua: Scripts) -> None:
    # More than Lua unpacks at once (some 8,000 values): a pump of many workers.
    paths = [f"/{i}" for i in range(9000)]
    for start in range(0, len(paths), 1000):
        lua.add(A, paths[start : start + 1000])
    taken = lua.take(9000)
    assert len(taken) == 9000 and lua.client.zcard(P + "inflight") == 9000
    assert lua.done(taken) == 9000
    assert lua.count("unfinished") == 0 and lua.count("done") == 9000
