"""`crawlscope attach redis://...` on hostile entries written into a real redis-server,
in a real terminal (a pty): an entry in Redis is another process's word, as a monitor's
frame is, and its strings reach the terminal escaped; entries that are not publications
of ours, and names that are not UTF-8, are left out without a crash."""

from __future__ import annotations

import json
import time

from hostile_peers import RAW, chain_plain, escaped, hostile, record_plain, snapshot_plain, terminal
from redis_support import RedisServer, redis_server  # noqa: F401  (a fixture)

from crawlscope.engine.cluster.redis_frontier import key_prefix

P = key_prefix("t")


def publication() -> str:
    return json.dumps(
        {
            "name": "ignored: the key names the process",
            "config": {"roots": ["http://127.0.0.1:9/"], "user_agent": hostile("user_agent")},
            "snapshot": snapshot_plain(),
            "recent": [record_plain()],
            "chains": [chain_plain()],
            "chain_count": 1,
            "unreachable": hostile("unreachable"),
        }
    )


async def test_hostile_entries_in_redis_reach_the_terminal_escaped(
    redis_server: RedisServer,  # noqa: F811
) -> None:
    r = redis_server.client()
    r.set(f"{P}proc:{hostile('proc')}", publication())
    r.set(f"{P}proc:garbage", "{not json")
    r.set(f"{P}proc:wrong", json.dumps({"snapshot": {"t": "x"}}))
    r.zadd(f"{P}procs", {hostile("proc"): time.time(), "garbage": 1, "wrong": 2})
    # A name that is not UTF-8: read, and its entry (not a publication) left out.
    r.execute_command("ZADD", f"{P}procs", 3, b"not-utf8-\xff")
    r.execute_command("SET", f"{P}proc:".encode() + b"not-utf8-\xff", b"\xff")
    r.zadd(f"{P}ready", {hostile("host"): 0})
    r.hset(f"{P}busy", mapping={hostile("host"): "x", "h2": "2"})
    r.hset(f"{P}n", mapping={"unfinished": "many", "queued": "3", "done": "9" * 4000})
    # Wide enough for the process line and its "Redis lost:" text, or the hosts line wraps away.
    async with terminal("attach", redis_server.url, "--crawl-id", "t", size=(260, 50)) as term:
        fields = ("proc", "unreachable", "host", "url", "suspended_at", "crawl_delay",
                  "rec_url", "chain_a")  # fmt: skip
        await term.shows(*(escaped(f) for f in fields), what="every field, escaped")
        out = term.bytes()
        for sequence in RAW:
            assert sequence not in out, sequence
        assert b"Traceback" not in out
        assert (
            b"1 process " in out and b"1 processes" not in out
        )  # the three entries that are not publications: left out
