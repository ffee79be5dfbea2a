"""A frontier in Redis that any number of crawlscope processes share.

The crawler's calls stay the chapter's (engine/frontier.py): `put_nowait` where links
are found, `await q.get()`, `q.task_done(lease)`, `await q.join()`. Here they meet Redis
through one task per process, the pump, which sends what the workers did since its last
round (adds, leases given back, leases ended, Crawl-delays learned), renews the leases
still held, and takes as many leases as workers are waiting for, all in one round trip
of Lua scripts (scripts.py), in that order: a page's new URLs are queued before its
lease ends, so the unfinished count never touches 0 while work remains.

When Redis cannot be reached the pump keeps what it owes, says so (`unreachable`), and
tries again: nothing is lost. A lease whose process died comes back to the queue when it
expires, and `task_done` of a lease no longer held counts nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

import redis.asyncio as aioredis
from redis.exceptions import RedisError, ResponseError

from ..frontier import Lease, Pair
from ..ledger import Ledger
from ..politeness import origin_of
from ..records import FetchRecord, describe_exception
from ..snapshot import Accounting
from . import scripts

DEFAULT_LEASE = 30.0  # seconds a lease lasts unless renewed
IDLE_POLL = 0.05  # seconds between looks at the queue when other processes may add work
RETRY_MIN, RETRY_MAX = 0.1, 2.0  # backoff while Redis cannot be reached


def key_prefix(crawl_id: str) -> str:
    return f"crawlscope:{crawl_id}:"


@dataclass(frozen=True, slots=True)
class ClusterFigures:
    """The whole crawl's counts, as one script read them at one instant."""

    unfinished: int = 0
    queued: int = 0
    done: int = 0
    failed: int = 0
    filtered: int = 0
    in_flight: int = 0
    seen: int = 0

    def accounting(self) -> Accounting:
        return Accounting(
            seen=self.seen, done=self.done, failed=self.failed, filtered=self.filtered,
            queued=self.queued, held=self.in_flight, unfetched=0,
        )  # fmt: skip


class RedisLease(Lease):
    __slots__ = ("member",)

    def __init__(self, pair: Pair, member: str) -> None:
        super().__init__(pair)
        self.member = member


class RedisFrontier:
    """The crawl's queue, seen set and unfinished count, kept in Redis with leases."""

    def __init__(
        self,
        client: aioredis.Redis,
        crawl_id: str,
        ledger: Ledger,
        *,
        lease: float = DEFAULT_LEASE,
        per_host: int = 0,
        delay: float = 0.0,
        crawl_delay_of: Callable[[str], float | None] | None = None,
    ) -> None:
        self.client = client
        self.crawl_id = crawl_id
        self.prefix = key_prefix(crawl_id)
        self.ledger = ledger
        self.lease = lease
        self.per_host = per_host
        self.delay = delay
        # The Crawl-delay a host's robots.txt asked for, once this process knows it.
        self._crawl_delay_of = crawl_delay_of
        self.figures = ClusterFigures()
        self.fresh = False  # figures read after everything this process did was sent
        self.unreachable: str | None = None  # why Redis cannot be reached, while it cannot
        self.outages = 0  # times Redis could not be reached
        # Called before leases are ended in Redis: an output flushes, so that a record
        # of a page the cluster counts done is on disk even if this process is killed.
        self.before_send: list[Callable[[], None]] = []
        # Run with the pump's start (on the crawl's loop) and after its end.
        self.on_start: list[Callable[[], None]] = []
        self.on_close: list[Callable[[], Awaitable[None]]] = []
        self._adds: list[tuple[str, str]] = []  # (url, member)
        self._filtered: list[str] = []
        self._backs: list[str] = []
        self._dones: list[tuple[str, str]] = []  # (member, outcome)
        self._delays: dict[str, int] = {}  # host -> Crawl-delay ms, sent once each
        self._held: dict[str, RedisLease] = {}  # member -> lease this process holds
        self._spare: deque[RedisLease] = deque()  # taken for a worker that went away
        self._getters: deque[asyncio.Future[RedisLease]] = deque()
        self._wake = asyncio.Event()
        self._joined = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        self._closing = False
        self._renew_at = 0.0
        self._next_ready: float | None = None  # seconds until a host is ready, if any
        s = client.register_script
        self._add, self._back, self._done = s(scripts.ADD), s(scripts.BACK), s(scripts.DONE)
        self._renew, self._reclaim = s(scripts.RENEW), s(scripts.RECLAIM)
        self._take = s(scripts.TAKE)
        ledger.filtered_listeners.append(self._note_filtered)

    # ---- the chapter's calls --------------------------------------------------------

    def put_nowait(self, pair: Pair) -> None:
        url, max_redirect = pair
        depth, referrer = self.ledger.origin(url)
        payload = json.dumps([url, max_redirect, depth, referrer], separators=(",", ":"))
        self._adds.append((url, f"{origin_of(url)} {payload}"))
        self._poke()

    async def get(self) -> Lease:
        if self._spare:
            return self._spare.popleft()
        getter: asyncio.Future[RedisLease] = asyncio.get_running_loop().create_future()
        self._getters.append(getter)
        self._poke()
        try:
            return await getter
        except asyncio.CancelledError:
            if getter.done() and not getter.cancelled():
                self._spare.append(getter.result())  # handed over as the worker was cancelled
            else:
                with contextlib.suppress(ValueError):
                    self._getters.remove(getter)
            raise

    def put_back(self, lease: Lease) -> None:
        assert isinstance(lease, RedisLease)
        if self._held.pop(lease.member, None) is not None:
            self._backs.append(lease.member)
            lease.done = True  # back on the queue: its task_done counts nothing
            self._poke()

    def task_done(self, lease: Lease) -> None:
        assert isinstance(lease, RedisLease)
        if lease.done:
            return
        lease.done = True
        self._held.pop(lease.member, None)
        self._dones.append((lease.member, self._outcome(lease.url)))
        self._note_crawl_delay(lease.member)
        self._poke()

    async def join(self) -> None:
        self._poke()
        await self._joined.wait()

    def qsize(self) -> int:
        return self.figures.queued

    @property
    def unfinished(self) -> int:
        return self.figures.unfinished

    def accounting(self) -> Accounting | None:
        return self.figures.accounting()

    async def close(self) -> None:
        """Send what is owed (leases given back, ended) and stop the pump. If Redis
        cannot be reached now, what was not sent comes back when the leases expire."""
        for lease in self._spare:
            self.put_back(lease)
        self._spare.clear()
        self._closing = True
        self._poke()
        if self._pump is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        for end in self.on_close:
            await end()
        await self.client.aclose()

    # ---- what the workers leave for the pump ----------------------------------------

    def _poke(self) -> None:
        self._wake.set()
        if self._pump is None:
            self._pump = asyncio.create_task(self._run(), name="redis-frontier")
            for start in self.on_start:
                start()

    def _outcome(self, url: str) -> str:
        books = self.ledger
        if url in books.done:
            return "done"
        if url in books.filtered:
            return "filtered"
        return "failed"

    def _note_filtered(self, record: FetchRecord) -> None:
        if record.worker is None:  # left by the rules, never queued (a robots refusal
            self._filtered.append(record.url)  # of a leased URL ends with its lease)

    def _note_crawl_delay(self, member: str) -> None:
        host = member.split(" ", 1)[0]
        if self._crawl_delay_of is None or host in self._delays:
            return
        delay = self._crawl_delay_of(host)
        if delay is not None:
            self._delays[host] = round(delay * 1000)

    # ---- the pump -------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = RETRY_MIN
        while True:
            self._wake.clear()
            closing = self._closing
            try:
                await self._exchange(take=not closing)
            except (RedisError, OSError) as exc:
                if self.unreachable is None:
                    self.outages += 1
                self.unreachable = describe_exception(exc)
                if closing:
                    return
                await self._rest(backoff)
                backoff = min(backoff * 2, RETRY_MAX)
                continue
            self.unreachable = None
            backoff = RETRY_MIN
            if closing:
                return
            await self._rest(self._pause())

    def _pause(self) -> float:
        """Seconds until the pump must look again by itself (a poke comes sooner)."""
        until_renew = max(self._renew_at - time.monotonic(), 0.0)
        if not any(not g.done() for g in self._getters) and not self._joining():
            return until_renew
        ready = IDLE_POLL if self._next_ready is None else max(self._next_ready, 0.001)
        return min(until_renew, ready, IDLE_POLL)

    def _joining(self) -> bool:
        return not self._joined.is_set()

    async def _rest(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)

    async def _exchange(self, take: bool) -> None:
        adds, filtered, backs, dones = self._adds, self._filtered, self._backs, self._dones
        delays = [(h, ms) for h, ms in self._delays.items() if ms >= 0]
        self._adds, self._filtered, self._backs, self._dones = [], [], [], []
        renew = time.monotonic() >= self._renew_at and bool(self._held)
        if dones:
            for flush in self.before_send:
                flush()
        waiting = sum(1 for g in self._getters if not g.done()) if take else 0
        try:
            result = await self._send(adds, filtered, backs, dones, delays, renew, waiting)
        except BaseException:
            # Nothing owed is dropped: it goes first in the next round (each script is
            # idempotent, so a round that did reach Redis may be sent again).
            self._adds[:0], self._filtered[:0] = adds, filtered
            self._backs[:0], self._dones[:0] = backs, dones
            raise
        for host, _ms in delays:
            self._delays[host] = -1  # sent: never again
        if renew:
            self._renew_at = time.monotonic() + self.lease / 3
        if result is not None:
            self._took(result)

    async def _send(
        self,
        adds: Sequence[tuple[str, str]],
        filtered: Sequence[str],
        backs: Sequence[str],
        dones: Sequence[tuple[str, str]],
        delays: Sequence[tuple[str, int]],
        renew: bool,
        waiting: int,
    ) -> list[object] | None:
        p, limit = self.prefix, self.per_host
        pipe = self.client.pipeline(transaction=False)
        if adds or filtered:
            flat = [part for pair in adds for part in pair]
            await self._add(args=[p, limit, len(adds), *flat, *filtered], client=pipe)
        if backs:
            await self._back(args=[p, limit, *backs], client=pipe)
        if dones or delays:
            flat = [part for pair in dones for part in pair]
            more = [part for pair in delays for part in pair]
            await self._done(args=[p, limit, len(dones), *flat, *more], client=pipe)
        if renew:
            await self._renew(args=[p, round(self.lease * 1000), *self._held], client=pipe)
        await self._reclaim(args=[p, limit], client=pipe)
        await self._take(
            args=[p, limit, waiting, round(self.lease * 1000), round(self.delay * 1000)],
            client=pipe,
        )
        replies = await pipe.execute(raise_on_error=False)
        for reply in replies:
            if isinstance(reply, ResponseError):
                raise reply  # a script's own error: a bug, not an outage
            if isinstance(reply, Exception):
                raise reply
        return list(replies[-1])

    def _took(self, result: list[object]) -> None:
        members, *numbers = result
        unfinished, queued, done, failed, filtered, in_flight, seen, wait = (
            int(n)  # type: ignore[call-overload]
            for n in numbers
        )
        self.figures = ClusterFigures(unfinished, queued, done, failed, filtered, in_flight, seen)
        self._next_ready = None if wait < 0 else wait / 1000
        assert isinstance(members, list)
        for raw in members:
            member = raw.decode() if isinstance(raw, bytes) else str(raw)
            url, max_redirect, depth, referrer = json.loads(member.split(" ", 1)[1])
            # Perhaps another process admitted it: these books learn where it came from.
            self.ledger.adopt(url, depth, referrer)
            lease = RedisLease((url, max_redirect), member)
            self._held[member] = lease
            self._hand_over(lease)
        owed = self._adds or self._filtered or self._backs or self._dones
        if unfinished == 0 and not owed and not self._held:
            self._joined.set()

    def _hand_over(self, lease: RedisLease) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(lease)
                return
        self._spare.append(lease)
