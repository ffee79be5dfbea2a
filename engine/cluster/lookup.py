"""What a Redis holds before a process starts or joins a crawl there, or a viewer attaches.

Each answer is one look, with short timeouts, so that a wrong address, a wrong password,
a DB index out of range or a key of the wrong type is a one-line error within seconds
(problems.py), and a crawl id that finished already, or one that is not there at all,
says so instead of a crawl of nothing or an empty screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import re
from collections.abc import Sequence
from dataclasses import dataclass

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from ..observe.text import printable
from .problems import RedisProblem, shown_url, what_went_wrong
from .redis_frontier import key_prefix, redis_count

# The type each key of a crawl must have, if it exists (scripts.py describes them).
KEY_TYPES = {
    "seen": "set", "ready": "zset", "next": "hash", "delay": "hash", "busy": "hash",
    "inflight": "zset", "n": "hash", "bad": "list", "wanters": "zset", "holding": "hash",
    "procs": "zset", "over": "list",
}  # fmt: skip
NAMES_SHOWN = 20  # crawl names a "no crawl named" message lists at most
LOOK_TIMEOUT = 3.0  # seconds to connect, and for each reply


@dataclass(frozen=True, slots=True)
class CrawlFound:
    """A crawl id in a Redis, as one look found it."""

    exists: bool
    seen: int = 0
    unfinished: int = 0
    ended_ms: int | None = None  # Redis's time when unfinished last reached 0
    roots_seen: bool = False  # every root asked for is in its seen set already

    @property
    def finished(self) -> bool:
        return self.exists and self.unfinished == 0 and self.seen > 0

    def finished_line(self, crawl_id: str) -> str:
        when = ""
        # A crawl ended by an older crawlscope has no time, and Redis's data is untrusted.
        if self.ended_ms is not None:
            with contextlib.suppress(ValueError, OverflowError, OSError):
                at = datetime.datetime.fromtimestamp(self.ended_ms / 1000, datetime.UTC)
                when = f" at {at:%Y-%m-%d %H:%M:%S} UTC"
        return (
            f"crawl {printable(crawl_id)} finished{when} ({self.seen} urls); "
            "use another --crawl-id, or --fresh to crawl it again from the start"
        )


def client_for(url: str) -> aioredis.Redis:
    return aioredis.Redis.from_url(
        url, socket_connect_timeout=LOOK_TIMEOUT, socket_timeout=LOOK_TIMEOUT
    )


async def look_up(url: str, crawl_id: str, roots: Sequence[str] = ()) -> CrawlFound:
    """The crawl `crawl_id` in the Redis at `url`; RedisProblem (its message one line)
    if that Redis cannot be used: unreachable, refusing, or a key of the wrong type."""
    client = client_for(url)
    try:
        return await _look_up(client, crawl_id, roots)
    except (RedisError, OSError) as exc:
        raise RedisProblem(what_went_wrong(exc, url)) from None
    finally:
        await client.aclose()


async def _look_up(client: aioredis.Redis, crawl_id: str, roots: Sequence[str]) -> CrawlFound:
    prefix = key_prefix(crawl_id)
    pipe = client.pipeline(transaction=True)
    for name in KEY_TYPES:
        pipe.type(prefix + name)
    kinds = [k.decode() if isinstance(k, bytes) else str(k) for k in await pipe.execute()]
    for (name, wanted), kind in zip(KEY_TYPES.items(), kinds, strict=True):
        if kind not in ("none", wanted):
            raise RedisProblem(
                f"WRONGTYPE: key {prefix + name!r} holds a {kind}, not a {wanted}: "
                "something else wrote it; delete it, or use another --crawl-id"
            )
    if kinds[list(KEY_TYPES).index("n")] == "none" and kinds[0] == "none":
        return CrawlFound(exists=any(kind != "none" for kind in kinds))
    pipe = client.pipeline(transaction=True)
    pipe.hmget(prefix + "n", "unfinished", "ended")
    pipe.scard(prefix + "seen")
    if roots:
        pipe.smismember(prefix + "seen", list(roots))
    (unfinished, ended), seen, *member = await pipe.execute()
    return CrawlFound(
        exists=True,
        seen=redis_count(seen),
        unfinished=redis_count(unfinished),
        ended_ms=redis_count(ended) if ended is not None else None,
        roots_seen=bool(member) and all(member[0]),
    )


_KEY_OF_A_CRAWL = re.compile(rb"^crawlscope:(.*):(?:n|procs|seen)$", re.DOTALL)


async def crawl_names(url: str) -> list[str]:
    """The crawl ids in the Redis at `url`, sorted; RedisProblem if it cannot be used."""
    client = client_for(url)
    names: set[str] = set()
    try:
        async for key in client.scan_iter(match="crawlscope:*", count=1000):
            found = _KEY_OF_A_CRAWL.match(key if isinstance(key, bytes) else key.encode())
            if found:
                names.add(found.group(1).decode(errors="replace"))
    except (RedisError, OSError) as exc:
        raise RedisProblem(what_went_wrong(exc, url)) from None
    finally:
        await client.aclose()
    return sorted(names)


async def no_such_crawl(url: str, crawl_id: str) -> str | None:
    """None if crawl `crawl_id` is in the Redis at `url`; else the user's one line, with
    the crawls there are. RedisProblem if that Redis cannot be used."""
    if (await look_up(url, crawl_id)).exists:
        return None
    names = await crawl_names(url)
    there = ", ".join(printable(n) for n in names[:NAMES_SHOWN]) + (
        f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
    )
    return f"no crawl named {printable(crawl_id)} in {shown_url(url)}; " + (
        f"crawls there: {there}" if names else "there is no crawl there at all"
    )


def _glob_escaped(text: str) -> str:
    return re.sub(r"([\\*?\[\]])", r"\\\1", text)


async def forget(url: str, crawl_id: str) -> int:
    """Delete every key of crawl `crawl_id` (--fresh); how many. RedisProblem if that
    Redis cannot be used."""
    client = client_for(url)
    deleted = 0
    try:
        match = _glob_escaped(key_prefix(crawl_id)) + "*"
        batch: list[bytes] = []
        async for key in client.scan_iter(match=match, count=1000):
            batch.append(key)
            if len(batch) >= 500:
                deleted += int(await client.delete(*batch))
                batch = []
        if batch:
            deleted += int(await client.delete(*batch))
    except (RedisError, OSError) as exc:
        raise RedisProblem(what_went_wrong(exc, url)) from None
    finally:
        await client.aclose()
    return deleted


async def before_crawling(url: str, crawl_id: str, roots: Sequence[str], fresh: bool) -> str | None:
    """Ready the crawl `crawl_id` for a process to start or join: with `fresh`, forget it
    first. The user's line if there is nothing to do (it finished, and every root is in
    it already), else None. RedisProblem if that Redis cannot be used."""
    if fresh:
        await forget(url, crawl_id)
    found = await look_up(url, crawl_id, roots)
    return found.finished_line(crawl_id) if found.finished and found.roots_seen else None


def why_not_attach(url: str, crawl_id: str) -> str | None:
    """For `attach`, before its screen opens (no loop runs yet): None if crawl `crawl_id`
    is in the Redis at `url`, else the user's one line saying what is there instead."""
    try:
        return asyncio.run(no_such_crawl(url, crawl_id))
    except RedisProblem as exc:
        return str(exc)
