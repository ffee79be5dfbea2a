"""One crawl over N local processes (`crawl|tui --procs N`), gathered by their parent.

The parent starts a Redis of the crawl's own (embedded.py) unless it is given one, then N
children (child.py), each a crawlscope process that joins the crawl in that Redis. Each
child sends its records on its stdout; the parent reads them as untrusted input (checked
by engine/exchange/plain.py, capped), keeps one record per URL (a URL fetched again after its
process was killed is kept once), writes the one set of outputs and makes the one
report. The accounting is Redis's, read once the children have ended: the whole crawl's.

A child that dies (kill -9) loses nothing: its leases expire and the others take them
(--lease); the parent says which process died and whether the crawl then ended whole.
`stop()` asks every child to stop (SIGTERM: each gives its leases back); `close()`
waits for them, kills any that do not end, and stops the embedded Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from ..config import CrawlConfig
from ..exchange.config_json import config_to_plain
from ..exchange.plain import BadMessage, decode
from ..ledger import Ledger
from ..observe.snapshot import Accounting, HostView
from ..records import FetchRecord
from .child import parse_spec, spec_line
from .defaults import DEFAULT_LEASE, DEFAULT_PATIENCE
from .embedded import EmbeddedRedis
from .redis_frontier import key_prefix, redis_count

RECORD_LIMIT = 4 << 20  # bytes in one record line: a URL is capped far below this
READ_CHUNK = 1 << 16  # bytes read from a child's pipe at a time
STOP_GRACE = 15.0  # seconds a child has to give its leases back before it is killed
LOCAL_CRAWL_ID = "local"


class CrawlFinished(Exception):
    """The crawl id in the given Redis has finished already: the line says when."""


def cores() -> int:
    """The cores this process may run on (`--procs auto`)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@dataclass
class Child:
    number: int
    proc: asyncio.subprocess.Process
    reading: asyncio.Task[None] | None = None
    records: int = 0  # the URLs this process was the first to report
    filtered: int = 0  # of those, the ones filtered (not fetched: no page)
    ended: bool = False  # its end is in the books (wait() may be called again)

    @property
    def pid(self) -> int:
        return self.proc.pid


def signal_name(code: int) -> str:
    with contextlib.suppress(ValueError):
        return signal.Signals(-code).name
    return f"signal {-code}"


class LocalCluster:
    """N crawling processes on one Redis, and the books their parent keeps."""

    def __init__(
        self,
        config: CrawlConfig,
        processes: int,
        *,
        redis_url: str | None = None,
        crawl_id: str = LOCAL_CRAWL_ID,
        fresh: bool = False,
        lease: float = DEFAULT_LEASE,
        patience: float = DEFAULT_PATIENCE,
        listeners: Sequence[Callable[[FetchRecord], None]] = (),
    ) -> None:
        self.config = config
        self.processes = processes
        self.crawl_id = crawl_id
        self.fresh = fresh
        self.lease, self.patience = lease, patience
        self.ledger = Ledger(config)  # the whole crawl's records, one per URL
        self.listeners = list(listeners)
        self.embedded: EmbeddedRedis | None = None if redis_url else EmbeddedRedis()
        self._given_url = redis_url
        self.children: list[Child] = []
        self.deaths: list[str] = []  # a line for each process that ended by a signal
        self.bad_lines = 0
        self.stopping = False
        self._kill_at_grace: asyncio.TimerHandle | None = None  # armed by stop()
        self.final: Accounting | None = None  # Redis's, read as the crawl ended
        # Every process's host rows added up, from their last publications: the report's
        # "Hosts" section, as one process's own HostBook gives it.
        self.host_views: tuple[HostView, ...] = ()
        self.host_count = 0
        self._t0: float | None = None
        self._t1: float | None = None

    # ---- what a report asks of a crawl ------------------------------------------------

    @property
    def t0(self) -> float | None:
        """When the children were started (None: not yet), as a crawler's t0 says."""
        return self._t0

    @property
    def elapsed(self) -> float:
        if self._t0 is None:
            return 0.0
        return (self._t1 or time.monotonic()) - self._t0

    def accounting(self) -> Accounting:
        if self.final is not None:
            return self.final
        books = self.ledger
        return books.accounting(0, 0)

    @property
    def redis_url(self) -> str:
        """With its password: for this process and its children, never shown."""
        if self.embedded is not None:
            return self.embedded.url_with_password
        assert self._given_url is not None
        return self._given_url

    # ---- the processes ----------------------------------------------------------------

    async def start(self) -> None:
        """The Redis (unless given), then the children. RedisProblem (one line) if the
        given Redis cannot be used; EmbeddedRedisError if none can be started."""
        if self.embedded is not None:
            # On this thread, not a pool's: the server ends with the thread that started
            # it (embedded.py), and this one lasts as long as the crawl.
            self.embedded.start()
        else:
            from .lookup import before_crawling

            # Once, here: N children each forgetting the crawl would forget each other's.
            ended = await before_crawling(
                self.redis_url, self.crawl_id, self.config.root_urls, self.fresh
            )
            if ended is not None:
                raise CrawlFinished(ended)
        spec = self._spec(self.redis_url)
        self._t0 = time.monotonic()
        for number in range(self.processes):
            if self.stopping:  # Ctrl-C while the others were starting
                break
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "crawlscope.engine.cluster.child",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                start_new_session=True,
            )  # fmt: skip
            assert proc.stdin is not None
            proc.stdin.write(spec)  # the password goes down this pipe, on no command line
            child = Child(number, proc)
            child.reading = asyncio.create_task(self._read(child), name=f"child-{number}")
            self.children.append(child)
            if self.stopping:
                # stop() ran while this child was being started (a record of another
                # child's could not be written): it signalled the children it knew of.
                with contextlib.suppress(ProcessLookupError):
                    proc.send_signal(signal.SIGTERM)

    def _spec(self, redis_url: str) -> bytes:
        return spec_line(
            config_to_plain(self.config), redis_url, self.crawl_id, self.lease, self.patience
        )

    def check_spec(self) -> None:
        """BadMessage ("config.FIELD ...", "lease ...", "patience ...") if a child would
        refuse what it is sent: checked once, here, by the child's own rules, before any
        process starts, so that no child is started only to refuse its spec."""
        parse_spec(self._spec(self._given_url or "redis://"), where="config")

    async def wait(self) -> None:
        """Until every child has ended and its records are read."""
        for child in self.children:
            await child.proc.wait()
            if child.reading is not None:
                await child.reading
            if not child.ended:
                child.ended = True
                self._note_end(child)
        self._t1 = time.monotonic()

    def _note_end(self, child: Child) -> None:
        """A line for a child that did not end as the crawl did, nor as it was told."""
        code = child.proc.returncode
        if code is None or code == 0 or self.stopping:
            return
        who = f"process {child.number + 1} (pid {child.pid})"
        if code < 0:
            self.deaths.append(
                f"{who} was killed by {signal_name(code)}; the URLs it held went back on "
                f"the queue as their leases expired (--lease {self.lease:g} s)"
            )
        elif code - 128 in (signal.SIGTERM, signal.SIGINT):
            self.deaths.append(
                f"{who} was stopped by {signal_name(128 - code)}: it gave back the URLs it held"
            )
        else:
            self.deaths.append(f"{who} ended with status {code} (its own lines above say why)")

    def stop(self) -> None:
        """Ask every child to stop: each gives its leases back and ends, or is killed
        STOP_GRACE seconds later (whoever waits for the children, waits no longer)."""
        self.stopping = True
        for child in self.children:
            if child.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.send_signal(signal.SIGTERM)
        if self._kill_at_grace is None:
            self._kill_at_grace = asyncio.get_running_loop().call_later(STOP_GRACE, self.kill)

    def kill(self) -> None:
        for child in self.children:
            if child.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    child.proc.kill()

    async def close(self) -> None:
        """Every child ended (killed after STOP_GRACE), the accounting read from Redis,
        and the embedded Redis stopped with its folder."""
        try:
            if any(c.proc.returncode is None for c in self.children):
                self.stop()
                try:
                    await asyncio.wait_for(self.wait(), STOP_GRACE)
                except TimeoutError:
                    self.kill()
                    await self.wait()
            if self.final is None and self.children:
                with contextlib.suppress(RedisError, OSError):
                    self.final = await self.read_accounting()
            if self.children:
                with contextlib.suppress(RedisError, OSError):
                    await self._read_hosts()
            await self._chain_redirects()
        finally:
            if self._kill_at_grace is not None:
                self._kill_at_grace.cancel()
            for child in self.children:
                if child.proc.stdin is not None:
                    child.proc.stdin.close()
            if self.embedded is not None:
                await asyncio.to_thread(self.embedded.stop)

    async def read_accounting(self) -> Accounting:
        """The whole crawl's, from Redis at one instant."""
        client = aioredis.Redis.from_url(
            self.redis_url, socket_connect_timeout=2, socket_timeout=10
        )
        p = key_prefix(self.crawl_id)
        try:
            pipe = client.pipeline(transaction=True)
            pipe.hmget(f"{p}n", "queued", "done", "failed", "filtered", "unfetched")
            pipe.zcard(f"{p}inflight")
            pipe.scard(f"{p}seen")
            counts, held, seen = await pipe.execute()
        finally:
            await client.aclose()
        queued, done, failed, filtered, unfetched = (_whole(n) for n in counts)
        return Accounting(
            seen=_whole(seen), done=done, failed=failed, filtered=filtered, queued=queued,
            held=_whole(held), unfetched=unfetched,
        )  # fmt: skip

    async def _read_hosts(self) -> None:
        """The hosts as the cluster view adds them up, from what each process published
        last (a process publishes as it ends; the keys outlive it by seconds)."""
        from .observe import ClusterCrawl

        client = aioredis.Redis.from_url(
            self.redis_url, socket_connect_timeout=2, socket_timeout=10
        )
        try:
            cluster = ClusterCrawl(client, self.crawl_id)
            await cluster.refresh()
            snap = cluster.snapshot((), rows=False)
        finally:
            await client.aclose()
        self.host_views, self.host_count = snap.hosts, snap.host_count

    # ---- the records ------------------------------------------------------------------

    async def _read(self, child: Child) -> None:
        """Every record a child writes, read in chunks and split here: a readline per
        record cost the parent an await and a buffer search each (tens of thousands of
        pages a second come down these pipes). A line longer than RECORD_LIMIT is dropped
        as it comes, never held whole; so is half a line left by a child that died."""
        stream = child.proc.stdout
        assert stream is not None
        where = f"a record from process {child.number + 1}"
        pending = bytearray()
        skipping = False  # within a line too long to keep, until its end
        while chunk := await stream.read(READ_CHUNK):
            pending += chunk
            start = 0
            while (end := pending.find(b"\n", start)) >= 0:
                if skipping:
                    skipping = False
                else:
                    self._take_line(child, pending[start:end], where)
                start = end + 1
            del pending[:start]
            if len(pending) > RECORD_LIMIT:
                self.bad_lines += 0 if skipping else 1
                skipping = True
                pending.clear()
        if pending and not skipping:
            self.bad_lines += 1

    def _take_line(self, child: Child, line: bytes | bytearray, where: str) -> None:
        try:
            record = decode(FetchRecord, json.loads(line), where)
        except (ValueError, BadMessage, RecursionError):
            self.bad_lines += 1
            return
        if self._keep(record):
            child.records += 1
            child.filtered += record.filtered is not None

    def _keep(self, record: FetchRecord) -> bool:
        """Into the books and the outputs, unless its URL is there already."""
        books, url = self.ledger, record.url
        if url in books.done or url in books.failed or url in books.filtered:
            return False
        if record.filtered is not None:
            books.filtered[url] = record.filtered
        else:
            (books.failed if record.failed else books.done)[url] = record
            books.recent.append(record)
        books.seen_urls.add(url)
        for listen in list(self.listeners):
            try:
                listen(record)
            except Exception as exc:
                # An output that cannot be written (a full disk) stops the crawl, as it does
                # in one process: said at the end, the status 1; the rest still read.
                self.listeners.remove(listen)
                books.report_fault(exc)
                self.stop()
        return True

    async def _chain_redirects(self) -> None:
        """The report's redirect chains, from the hops the records tell. A record does not
        carry the redirects its URL had left, so a hop's target that no process reported
        is asked of Redis: one in the crawl's seen set was queued and left (--max-pages,
        or a stop), one not in it was never queued: --max-redirect cut the chain there."""
        books = self.ledger
        hops = sorted(
            (r for r in books.done.values() if r.next_url is not None), key=lambda r: r.t_end
        )
        unreported = {
            t
            for r in hops
            if (t := r.next_url) is not None
            and not (t in books.done or t in books.failed or t in books.filtered)
        }
        left = await self._seen_of(sorted(unreported)) if unreported else set()
        books.unfetched.update(left)
        for record in hops:
            target = record.next_url
            assert target is not None
            cut = target in unreported and target not in left
            books.redirects.add(record.url, target, budget_left=not cut)

    async def _seen_of(self, urls: list[str]) -> set[str]:
        """Those of `urls` in the crawl's seen set; none if Redis cannot say."""
        client = aioredis.Redis.from_url(
            self.redis_url, socket_connect_timeout=2, socket_timeout=10
        )
        found: set[str] = set()
        try:
            for at in range(0, len(urls), 1000):
                part = urls[at : at + 1000]
                flags = await client.smismember(f"{key_prefix(self.crawl_id)}seen", part)
                found.update(url for url, flag in zip(part, flags, strict=True) if flag)
        except (RedisError, OSError):
            pass  # the chains end as the records alone tell
        finally:
            await client.aclose()
        return found

    @property
    def failed_to_start(self) -> bool:
        """Every process ended in failure before any of them sent a record: the crawl
        did not run at all (and was not stopped), whatever Redis's empty books say."""
        ended = [child.proc.returncode for child in self.children]
        return (
            bool(ended)
            and not self.stopping
            and all(code not in (None, 0) for code in ended)
            and not any(child.records for child in self.children)
        )

    def closing_lines(self) -> list[str]:
        """What the parent says at the end, a line each."""
        lines = list(self.deaths)
        final = self.final
        if self.failed_to_start:
            lines.append(
                f"no page was fetched: all {len(self.children)} processes failed as they "
                "started (their own lines above say why)"
            )
        elif self.deaths and final is not None:
            if final.queued == 0 and final.held == 0 and final.balanced:
                lines.append("the other processes fetched them: nothing is lost")
            else:
                lines.append(
                    f"{final.queued + final.held} URL(s) were left queued or held when the "
                    "crawl stopped; they are in the accounting"
                )
        if self.bad_lines:
            lines.append(f"{self.bad_lines} line(s) from the processes were not records: left out")
        return lines

    def per_process(self) -> str:
        """What each process did, each figure named: pages fetched (a failed fetch is
        one), and the URLs it filtered, which are records but no page."""
        pages = ", ".join(f"#{c.number + 1} {c.records - c.filtered}" for c in self.children)
        filtered = ", ".join(f"#{c.number + 1} {c.filtered}" for c in self.children)
        return f"pages fetched each: {pages} (URLs filtered each: {filtered})"


def _whole(value: object) -> int:
    return max(0, redis_count(value))
