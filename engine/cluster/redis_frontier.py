"""A frontier in Redis that any number of crawlscope processes share.

The crawler's calls stay the chapter's (engine/frontier.py): `put_nowait` where links
are found, `await q.get()`, `q.task_done(lease)`, `await q.join()`. Here they meet Redis
through one task per process, the pump, which sends what the workers did since its last
round (adds, leases given back, leases ended, Crawl-delays learned), renews the leases
still held, and takes as many leases as workers are waiting for, all in one round trip
of Lua scripts (scripts.py), in that order: a page's new URLs are queued before its
lease ends, so the unfinished count never touches 0 while work remains.

When Redis cannot be reached the pump keeps what it owes, says so (`unreachable`), and
tries again, for `patience` seconds; then, or at once for a problem waiting cannot mend
(a wrong password, a key of the wrong type: problems.py), it gives up and stops the
crawl: nothing is lost, for a lease whose process stopped comes back to the queue when it
expires, and `task_done` of a lease no longer held counts nothing.

What comes out of Redis is untrusted: anyone who reaches it can write the crawl's keys.
The scripts set aside what crawlscope did not write; a URL taken here passes the same
scheme and scope checks as a link found on a page before a worker sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import cast

import redis.asyncio as aioredis
from redis.commands.core import AsyncScript as Script
from redis.exceptions import InvalidResponse, NoScriptError, RedisError, ResponseError

from ..exchange.plain import MOST_INT
from ..frontier import Lease, Pair
from ..ledger import Ledger
from ..observe.snapshot import Accounting
from ..observe.text import printable
from ..records import FetchRecord, describe_exception
from ..trace.flight import FlightRing
from ..urls import normalize, origin_of
from . import scripts
from .defaults import DEFAULT_LEASE, DEFAULT_PATIENCE
from .problems import RedisProblem, permanent, what_went_wrong
from .wire import ScriptWire

IDLE_POLL = 0.05  # seconds between looks at the queue when other processes may add work
# Seconds between looks for expired leases, at most (and a quarter of a lease at most):
# a lease lasts 30 s by default, so looking each round (hundreds a second) only added a
# script to every round trip.
RECLAIM_EVERY = 0.5
# Passes of the loop the pump lets go by between a poke and its round. A round costs the
# crawling process and Redis some 300 us whatever it carries, so it should carry every
# page that is about to end: at --procs 1 on the demo site (20,024 pages, per-host 8) one
# pass made 12,100 script calls, 4 made 6,600-6,900, 6 made 6,300 (all 8 slots in a round,
# more gather no more); at --procs 2, 26,500-27,000 against 16,200-17,200, and each crawl
# ended sooner (13.4 s against 15-17). A pass with nothing else to do costs microseconds.
GATHER_PASSES = 6
RETRY_MIN, RETRY_MAX = 0.1, 2.0  # backoff while Redis cannot be reached
TAKE_FIELDS = 11  # the members taken, then ten figures (scripts.TAKE)


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
    bad: int = 0  # entries set aside: written into the crawl's keys by something else
    unfetched: int = 0  # left by --max-pages, the whole crawl's

    def accounting(self) -> Accounting:
        return Accounting(
            seen=self.seen, done=self.done, failed=self.failed, filtered=self.filtered,
            queued=self.queued, held=self.in_flight, unfetched=self.unfetched,
        )  # fmt: skip


def redis_count(raw: object) -> int:
    """A figure read from Redis (what anyone with its password may have written); one
    that is not a count, or past any real one, counts nothing."""
    try:
        count = int(raw or 0)  # type: ignore[call-overload]
    except (TypeError, ValueError, OverflowError):
        return 0
    return count if abs(count) <= MOST_INT else 0


def _fields(member: str) -> tuple[str, str, int, int, str | None]:
    """host, url, max_redirect, depth, referrer of a member; ValueError or TypeError if it
    is not of the form crawlscope writes."""
    host, payload = member.split(" ", 1)
    url, max_redirect, depth, referrer = json.loads(payload)
    if not isinstance(url, str) or not (referrer is None or isinstance(referrer, str)):
        raise TypeError("not a URL")
    if int(max_redirect) != max_redirect or int(depth) != depth:
        raise ValueError("not whole numbers")
    if not (0 <= max_redirect <= MOST_INT and 0 <= depth <= MOST_INT):
        raise ValueError("out of range")  # its record would be refused by any reader
    return host, url, int(max_redirect), int(depth), referrer


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
        patience: float = DEFAULT_PATIENCE,
        shown_url: str = "Redis",
        max_pages: int = 0,
    ) -> None:
        self.client = client
        self.max_pages = max_pages  # the whole crawl's budget, kept in Redis (scripts.ADD)
        self.crawl_id = crawl_id
        self.prefix = key_prefix(crawl_id)
        self.ledger = ledger
        self.lease = lease
        self.per_host = per_host
        self.delay = delay
        # The Crawl-delay a host's robots.txt asked for, once this process knows it.
        self._crawl_delay_of = crawl_delay_of
        self.figures = ClusterFigures()
        self._books = (self.figures, self.figures.accounting())  # accounting() of figures
        self._store_seconds = 0.0  # awaiting Redis, all rounds so far (store_time)
        self._rounds = 0
        self.fresh = False  # figures read after everything this process did was sent
        self.unreachable: str | None = None  # why Redis cannot be reached, while it cannot
        self.outages = 0  # times Redis could not be reached
        self.patience = patience
        self.shown_url = shown_url  # where Redis is, for messages (no password)
        self.longest_outage = 0.0  # seconds, of the outages the crawl went on after
        self.gave_up: RedisProblem | None = None  # why the crawl stopped, if Redis made it
        # Told once, when Redis makes the crawl stop (the node stops the crawler).
        self.on_give_up: list[Callable[[RedisProblem], None]] = []
        self.rejected = 0  # URLs taken from Redis that the checks kept from the workers
        # This process, to the fair take (scripts.TAKE): unique even on one host.
        self.name = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._lost_at: float | None = None  # monotonic time the current outage began
        self._reached = False  # an exchange with Redis went through
        # Called before leases are ended in Redis: an output flushes, so that a record
        # of a page the cluster counts done is on disk even if this process is killed.
        self.before_send: list[Callable[[], None]] = []
        # Run with the pump's start (on the crawl's loop) and after its end.
        self.on_start: list[Callable[[], None]] = []
        self.on_close: list[Callable[[], Awaitable[None]]] = []
        # Told the flight recorder's ring once the crawl has one (the publisher sends its
        # events to the cluster's views: past.py).
        self.on_ring: list[Callable[[FlightRing], None]] = []
        self._adds: list[tuple[str, str]] = []  # (url, member)
        self._filtered: list[str] = []
        self._backs: list[str] = []
        self._dones: list[tuple[str | bytes, str]] = []  # (member, outcome)
        self._delays: dict[str, int] = {}  # host -> Crawl-delay ms, sent once each
        self._held: dict[str, RedisLease] = {}  # member -> lease this process holds
        self._spare: deque[RedisLease] = deque()  # taken for a worker that went away
        self._getters: deque[asyncio.Future[RedisLease]] = deque()
        self._wake = asyncio.Event()
        self._joined = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        self._closing = False
        self._renew_at = 0.0
        self._reclaim_at = 0.0
        self._next_ready: float | None = None  # seconds until a host is ready, if any
        s = client.register_script
        self._add, self._back, self._done = s(scripts.ADD), s(scripts.BACK), s(scripts.DONE)
        self._renew, self._reclaim = s(scripts.RENEW), s(scripts.RECLAIM)
        self._take = s(scripts.TAKE)
        self._scripts = (self._add, self._back, self._done, self._renew, self._reclaim, self._take)
        self._wire = ScriptWire(client)
        self._loaded = False  # whether Redis has the scripts, as far as this process knows
        ledger.filtered_listeners.append(self._note_filtered)

    # ---- the chapter's calls --------------------------------------------------------

    def put_nowait(self, pair: Pair) -> None:
        url, max_redirect = pair
        depth, referrer = self.ledger.origin(url)
        payload = json.dumps([url, max_redirect, depth, referrer], separators=(",", ":"))
        self._adds.append((url, f"{origin_of(url)} {payload}"))
        self._poke()

    def take_ready(self) -> Lease | None:
        return self._spare.popleft() if self._spare else None

    async def get(self) -> Lease:
        ready = self.take_ready()
        if ready is not None:
            return ready
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

    def store_time(self) -> tuple[float, int]:
        return self._store_seconds, self._rounds

    @property
    def unfinished(self) -> int:
        return self.figures.unfinished

    def accounting(self) -> Accounting | None:
        # Asked at every take and let-go of a URL (the flight recorder's counts) and every
        # frame; the figures change once a round: built again only then.
        figures = self.figures
        if self._books[0] is not figures:
            self._books = (figures, figures.accounting())
        return self._books[1]

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
        await self._wire.drop()
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
                now = time.monotonic()
                if self._lost_at is None:
                    self._lost_at = now
                    self.outages += 1
                self.unreachable = describe_exception(exc)
                if permanent(exc) or not self._reached:
                    # Never reached since the start: a wrong address, not an outage.
                    self._give_up(what_went_wrong(exc, self.shown_url))
                    return
                if now - self._lost_at >= self.patience:
                    self._give_up(
                        f"{what_went_wrong(exc, self.shown_url)}; waited "
                        f"{now - self._lost_at:.0f} s (--redis-patience {self.patience:g})"
                    )
                    return
                if closing:
                    return
                await self._rest(min(backoff, max(self._lost_at + self.patience - now, 0.01)))
                backoff = min(backoff * 2, RETRY_MAX)
                continue
            self._reached = True
            if self._lost_at is not None:
                self.longest_outage = max(self.longest_outage, time.monotonic() - self._lost_at)
                self._lost_at = None
            self.unreachable = None
            backoff = RETRY_MIN
            if closing:
                return
            await self._rest(self._pause())
            # The workers finishing their pages as the poke came finish them first, so
            # that one round carries them all (GATHER_PASSES).
            for _ in range(GATHER_PASSES):
                await asyncio.sleep(0)

    def _give_up(self, why: str) -> None:
        held = self._owed_leases()
        tail = (
            f"; the {held} URL(s) this process held go back on the queue when their leases "
            f"expire ({self.lease:g} s)"
            if held
            else ""
        )
        self.gave_up = RedisProblem(f"{why}: the crawl stopped{tail}; nothing is lost")
        for tell in self.on_give_up:
            tell(self.gave_up)

    def _owed_leases(self) -> int:
        """Leases this process holds, or ended or gave back without Redis hearing of it."""
        return len(self._held) + len(self._dones) + len(self._backs)

    def closing_notes(self) -> list[str]:
        """What Redis did to this crawl, a line each, for its last lines (the fault that
        stopped it, if one did, has a line of its own)."""
        notes = []
        lost = self._lost_at is not None  # at the end still: it never came back
        went_on = self.outages - lost
        if lost and self.gave_up is None:  # stopped by the user meanwhile
            notes.append(
                f"Redis was unreachable when the crawl stopped ({printable(self.unreachable or '')}"
                f"); the {self._owed_leases()} URL(s) this process held go back "
                f"on the queue when their leases expire ({self.lease:g} s); nothing is lost"
            )
        if went_on:
            notes.append(
                f"Redis was unreachable {went_on} time(s) and came back within "
                f"--redis-patience ({self.patience:g} s; the longest wait "
                f"{self.longest_outage:.1f} s); the crawl went on each time, losing nothing"
            )
        if self.figures.bad:
            notes.append(
                f"{self.figures.bad} entr{'y' if self.figures.bad == 1 else 'ies'} in Redis "
                f"that crawlscope did not write set aside, unread, in {self.prefix}bad"
            )
        if self.rejected:
            notes.append(
                f"{self.rejected} URL(s) taken from Redis kept from the workers by this "
                "process's checks (form, scheme, scope): see the report"
            )
        return notes

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
        """Until a poke, or `seconds` pass: a timer sets the same event (wait_for's task
        and its cancellation cost the pump more than the rest of its wait, every round)."""
        if self._wake.is_set():
            return
        timer = asyncio.get_running_loop().call_later(seconds, self._wake.set)
        try:
            await self._wake.wait()
        finally:
            timer.cancel()

    async def _exchange(self, take: bool) -> None:
        adds, filtered, backs, dones = self._adds, self._filtered, self._backs, self._dones
        delays = [(h, ms) for h, ms in self._delays.items() if ms >= 0]
        self._adds, self._filtered, self._backs, self._dones = [], [], [], []
        renew = time.monotonic() >= self._renew_at and bool(self._held)
        if dones:
            for flush in self.before_send:
                flush()
        # Once more after the crawl stopped for Redis's sake: what is owed waits for the
        # leases to expire instead.
        if self.gave_up is not None:
            raise self.gave_up
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
        dones: Sequence[tuple[str | bytes, str]],
        delays: Sequence[tuple[str, int]],
        renew: bool,
        waiting: int,
    ) -> list[object] | None:
        p, limit = self.prefix, self.per_host
        calls: list[tuple[Script, list[object]]] = []
        if adds or filtered:
            flat = [part for pair in adds for part in pair]
            calls.append((self._add, [p, limit, self.max_pages, len(adds), *flat, *filtered]))
        if backs:
            calls.append((self._back, [p, limit, *backs]))
        if dones or delays:
            ended: list[str | bytes] = [part for pair in dones for part in pair]
            more = [part for pair in delays for part in pair]
            calls.append((self._done, [p, limit, self.max_pages, len(dones), *ended, *more]))
        if renew:
            calls.append((self._renew, [p, round(self.lease * 1000), *self._held]))
        if time.monotonic() >= self._reclaim_at:
            self._reclaim_at = time.monotonic() + min(RECLAIM_EVERY, self.lease / 4)
            calls.append((self._reclaim, [p, limit]))
        calls.append((self._take, [
            p, limit, waiting, round(self.lease * 1000), round(self.delay * 1000), self.name,
            len(self._held),
        ]))  # fmt: skip
        try:
            return await self._round(calls)
        except NoScriptError:
            # A Redis that forgot the scripts (restarted, or SCRIPT FLUSH) behind a
            # connection that came back by itself: loaded again, the round sent again
            # (what ran of it is idempotent; a TAKE that ran would have had its scripts).
            self._loaded = False
            return await self._round(calls)

    async def _round(self, calls: Sequence[tuple[Script, Sequence[object]]]) -> list[object]:
        """One round trip, on the pump's own connection (wire.py). The scripts go by their
        SHA1: redis-py's own Script objects ask Redis whether it has them (SCRIPT EXISTS)
        before every pipeline, a second round trip per round; here they are loaded, in the
        same round, only when they may be missing (the first round, and after any error)."""
        loading = not self._loaded
        commands: list[tuple[str | bytes | int, ...]] = []
        if loading:
            commands += [("SCRIPT", "LOAD", cast(str, s.script)) for s in self._scripts]
        for script, args in calls:
            commands.append(("EVALSHA", script.sha, 0, *args))  # type: ignore[arg-type]
        started = time.monotonic()
        try:
            replies = await self._wire.round(commands)
            if replies is None:  # a redis-py whose connections hide their streams
                pipe = self.client.pipeline(transaction=False)
                for command in commands:
                    pipe.execute_command(*command)
                replies = await pipe.execute(raise_on_error=False)
        except BaseException:
            self._loaded = False
            raise
        finally:
            self._store_seconds += time.monotonic() - started
            self._rounds += 1
        for reply in replies:
            if isinstance(reply, NoScriptError):
                raise reply
            if isinstance(reply, ResponseError):
                self._loaded = False
                raise reply  # a script's own error: a bug, not an outage
            if isinstance(reply, Exception):
                self._loaded = False
                raise reply
        self._loaded = True
        took: object = replies[-1]
        # What Redis sends is untrusted: a reply not of TAKE's shape is not Redis's doing.
        if not (isinstance(took, list) and len(took) == TAKE_FIELDS and isinstance(took[0], list)):
            raise InvalidResponse("a reply to the take that is not of its shape")
        return took

    def _took(self, result: list[object]) -> None:
        members, *numbers = result
        unfinished, queued, done, failed, filtered, in_flight, seen, wait, bad, unfetched = (
            redis_count(n) for n in numbers
        )
        self.figures = ClusterFigures(
            unfinished, queued, done, failed, filtered, in_flight, seen, bad, unfetched
        )
        self._next_ready = None if wait < 0 else wait / 1000
        assert isinstance(members, list)  # _round saw to it
        for raw in members:
            try:
                member = raw.decode() if isinstance(raw, bytes) else str(raw)
                host, url, max_redirect, depth, referrer = _fields(member)
            except (ValueError, TypeError, OverflowError):
                # TAKE checked its form, but not its UTF-8; should json and cjson
                # disagree on it, it ends here (by its exact bytes), a failure no worker saw.
                self.rejected += 1
                self._dones.append((raw, "failed"))
                self._wake.set()
                continue
            # Perhaps another process admitted it: these books learn where it came from.
            self.ledger.adopt(url, depth, referrer)
            # No more redirects than this process's own rule allows, whatever it says.
            lease = RedisLease((url, min(max_redirect, self.ledger.max_redirect)), member)
            why = self._why_not(url, host)
            if why is not None:
                # Never a worker's: filtered here, with its reason, as a link would be.
                self.rejected += 1
                self.ledger.drop(url, why)
                lease.done = True
                self._dones.append((member, "filtered"))
                self._wake.set()  # ended in the next round, with no worker to poke
                continue
            self._held[member] = lease
            self._hand_over(lease)
        owed = self._adds or self._filtered or self._backs or self._dones
        if unfinished == 0 and not owed and not self._held:
            self._joined.set()

    def _why_not(self, url: str, host: str) -> str | None:
        """Why a URL taken from Redis may not be fetched (None: it may), as a link found on
        a page is checked (ledger.admit): robots.txt is the worker's, as for any URL. One
        this process admitted itself was checked then (the same text, the same rules):
        only its host is looked at again (some 10 us a URL, two thirds of a take's)."""
        ledger = self.ledger
        ours = ledger.checked(url)
        if not ours:
            bad_form = ledger.form_refusal(url)  # the same rule as a state file's URLs
            if bad_form is not None:
                return f"from Redis: {bad_form}"
        if origin_of(url) != host:
            return "from Redis: queued under another host"
        return None if ours else ledger.scope.why_not(normalize(url) or url)

    def _hand_over(self, lease: RedisLease) -> None:
        while self._getters:
            getter = self._getters.popleft()
            if not getter.done():
                getter.set_result(lease)
                return
        self._spare.append(lease)
