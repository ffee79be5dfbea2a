"""The crawler: the chapter's queue of (url, max_redirect) pairs and a pool of workers.

The path of one URL, as in the chapter's crawling.py:

    crawl()        put the roots on the queue, start max_tasks workers, await q.join()
    _work()        each worker: lease = await q.get(); _fetch(url); q.task_done(lease)
    _fetch()       robots.txt may refuse it; _answer() gets the response, with retries;
                   the ledger follows the redirect or takes the page's links, and the new
                   pairs go on the queue right here, with q.put_nowait
    _finish()      the record lands in done or failed, and the URL leaves the worker

Everything a UI needs is plain state on the Crawler and its Workers, updated where the
work happens; `snapshot()` copies it in one pass. Nothing here knows a UI exists.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Container, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor

import aiohttp

from .config import CrawlConfig
from .connections import OUT_OF_STEP, TRYING, Attempt, InStepConnector, SteppedRequest
from .frontier import Frontier, MemoryFrontier, Pair
from .hosts.figures import HostBook, depth_histogram
from .ledger import Answer, Ledger, Listeners
from .links import parse_links
from .observe.introspect import suspension_point
from .observe.snapshot import Accounting, Phase, Snapshot
from .observe.worker_detail import StateTime, WorkerDetail
from .observe.workers import Worker, WorkerState, WorkerView
from .politeness import HostGate, RobotsCache, crawl_delay_note
from .records import Fault, FetchRecord, describe_exception, media_type
from .redirects import Chain
from .sitemaps import SitemapLimits, SitemapReader
from .timing import collector
from .timing.loop_health import LoopHealth
from .timing.per_worker import timed
from .timing.slowmo import Linger
from .timing.turns import Turns
from .trace.crawl_books import CrawlBooks
from .urls import origin_of

# Pages this big are parsed in a thread; smaller ones are parsed in place. On real pages
# (the Python docs, up to 2.6 MB: bench/big_pages.py) a crawl that parsed every page in
# place took 3.0 s, one that sent pages of 256 KiB or more to threads 4.3 s, and the
# longest step on the loop was 155 against 118 ms: under the GIL a parse thread takes
# the loop's turns anyway. A page of many megabytes still goes to a thread, so that the
# loop gets its turn every few ms instead of waiting a second.
PARSE_IN_THREAD_BYTES = 4 * 1024 * 1024
# Big pages parsed at once, at most: each parse holds its page and its parser's buffers,
# and under the GIL more threads would parse no faster (bench/linkdense.py).
PARSE_THREADS = 2

# Marks a "suspended at" read during a slow-motion linger (engine/timing/slowmo.py).
SLOWED = "(slowed)"

# Failures worth another try: the connection or the transfer, not a malformed answer
# (a ClientResponseError would come back the same way every time).
RETRYABLE = (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError)


# A worker as the counts hold it: its state while alive (None once ended), whether it
# holds a URL, whether it is alive and asked to stop.
Counted = tuple[WorkerState | None, bool, bool]
_UNCOUNTED: Counted = (None, False, False)


class WorkerDied(Fault):
    """A worker task ended by an exception: a bug in the engine, reported as a fault."""

    def __init__(self, worker: int, cause: BaseException) -> None:
        super().__init__(f"worker {worker} died: {describe_exception(cause)}")
        self.__cause__ = cause


class Crawler:
    def __init__(
        self,
        config: CrawlConfig,
        session: aiohttp.ClientSession | None = None,
        frontier: Frontier | None = None,
    ) -> None:
        self.config = config
        self.session = session
        # The chapter's queue; a cluster's lives in Redis (engine/cluster), same calls.
        self.q: Frontier = MemoryFrontier() if frontier is None else frontier
        self.ledger = Ledger(config)
        # Called with the worker after each of its state changes, and with None after a
        # change of phase (a recorder listens; nothing does by default).
        self.state_listeners: Listeners[Worker | None] = Listeners(self.ledger.report_fault)
        # The flight recorder's own hook, told before the listeners and in the same way,
        # but called straight: it hears every state change of every crawl, and a
        # Listeners' copy and loop cost it as much again as its own work
        # (engine/trace/recording.py). One that raises is let go, as a listener is.
        self.tap: Callable[[Worker | None], None] | None = None
        # A listener that failed or a worker that died: the output asked for is broken, or
        # the engine is; either way the crawl stops (gracefully) and says why (`faults`).
        self.ledger.on_fault = lambda _exc: self.stop()
        self.robots = RobotsCache(self._session, config.max_crawl_delay)
        self.hosts = HostGate(config.per_host, config.host_delay)
        self.host_book = HostBook()  # each host's figures, and the blocked hosts' URLs
        self.workers: dict[int, Worker] = {}
        # What a snapshot counts, kept as workers change (_touch) rather than counted from
        # a view of every worker each frame: a frame builds views for the rows a screen
        # shows only (10,000 workers cost 23.5 ms a frame, 80% of it in views, before).
        self._ids: tuple[int, ...] = ()  # every worker's id, in row order, as last asked
        self._counted: dict[int, Counted] = {}  # each worker as the counts hold it
        self._states: dict[WorkerState, int] = dict.fromkeys(WorkerState, 0)  # live ones
        self._live = 0
        self._held = 0  # workers with a URL in hand
        self._retiring = 0  # live workers asked to stop
        self.slowmo = 0.0  # seconds to linger at each state change, for a class to follow
        self.paused_all = False
        self.phase = Phase.IDLE
        self.t0: float | None = None  # monotonic start and end of crawl()
        self.t1: float | None = None
        self.started_at: float | None = None  # the same start, wall clock
        self._next_worker_id = 0
        self._stop = asyncio.Event()
        self._own_session = False
        # Made on first need: a request retried after its reused connection fell out of
        # step with the server goes on a connection of its own (connections.py).
        self._fresh_session: aiohttp.ClientSession | None = None
        self._parse_pool: ThreadPoolExecutor | None = None  # made on the first big page
        self.turns = Turns()  # a small page is parsed on the loop, in its turn
        self.sitemap_notes: list[str] = []  # one line per sitemap looked at (--sitemaps)
        # Loop lag, the longest holds and the timing lints (engine/timing/loop_health.py).
        self.health = LoopHealth(self, self.ledger.report_fault)

    # ---- the crawl ------------------------------------------------------------------

    async def crawl(self) -> None:
        """Run until every queued URL is done (q.join()) or stop() is called."""
        self.t0 = time.monotonic()
        self.started_at = time.time()
        self._set_phase(Phase.PAUSED if self.paused_all else Phase.RUNNING)
        self.health.start()
        if self.session is None:
            self.session = self._make_session()
            self._own_session = True
        collector.crawl_started()
        try:
            for pair in self.ledger.add_roots():
                self._put(pair)
            if self.config.sitemaps:
                await self._add_sitemap_roots()
            for _ in range(self.config.max_tasks):
                self.add_worker()
            joined = asyncio.ensure_future(self.q.join())
            stopped = asyncio.ensure_future(self._stop.wait())
            try:
                await asyncio.wait({joined, stopped}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                joined.cancel()
                stopped.cancel()
        except asyncio.CancelledError:
            self._stop.set()  # cancelled from outside: the crawl was stopped, not finished
            raise
        finally:
            collector.crawl_ended()
            self.health.stop()
            self._set_phase(Phase.STOPPING)
            await self._cancel_workers()
            for lease in self.host_book.unpark_all():
                self.q.put_back(lease)  # a blocked host's URLs were queued all along
                self.q.task_done(lease)
            await self.q.close()
            await self.robots.close()
            if self._own_session:
                await self.session.close()
            if self._fresh_session is not None:
                await self._fresh_session.close()
            if self._parse_pool is not None:
                # A parse under way ends on its own (it stops at max_links); none is waited for.
                self._parse_pool.shutdown(wait=False, cancel_futures=True)
                self._parse_pool = None
            # The clocks (elapsed, each worker's time in state) stop at the phase change a
            # recording keeps, so that a replay's clocks stop at the same moment.
            self.t1 = time.monotonic()
            self._set_phase(Phase.STOPPED if self._stop.is_set() else Phase.FINISHED)

    async def _add_sitemap_roots(self) -> None:
        """The roots' sitemaps give more roots (depth 0), read before any worker starts;
        stop() cuts the reading short."""
        reader = SitemapReader(
            self._session(),
            SitemapLimits(self.config.max_size, self.config.max_links, self.config.obey_robots),
            self.robots,
            lambda url: self.ledger.scope.why_not(url) is None,
        )
        reading = asyncio.ensure_future(reader.read(self.config.root_urls))
        stopped = asyncio.ensure_future(self._stop.wait())
        try:
            await asyncio.wait({reading, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            if not reading.done():
                reading.cancel()
                await asyncio.gather(reading, return_exceptions=True)
        if not reading.cancelled():
            reading.result()  # a bug in the reader is not hidden
        self.sitemap_notes = reader.findings.notes
        books = self.ledger
        for url in reader.findings.urls:
            if url not in books.seen_urls and books.admit(url, books.max_redirect, 0, None):
                self._put((url, books.max_redirect))

    def _session(self) -> aiohttp.ClientSession:
        assert self.session is not None, "crawl() has not started"
        return self.session

    def _make_session(self, fresh: bool = False) -> aiohttp.ClientSession:
        """The crawl's session; with `fresh`, one whose every request opens a new connection."""
        cfg = self.config
        timeout = aiohttp.ClientTimeout(
            total=cfg.total_timeout, sock_connect=cfg.connect_timeout, sock_read=cfg.read_timeout
        )
        # limit=0: the worker count is the concurrency limit, and it can change live.
        connector = (
            aiohttp.TCPConnector(limit=0, ttl_dns_cache=300, force_close=True)
            if fresh
            else InStepConnector(limit=0, ttl_dns_cache=300)
        )
        return aiohttp.ClientSession(
            connector=connector,
            timeout=timeout,
            headers={"User-Agent": cfg.user_agent},
            # The request tells its Attempt when its head is sent (_request): no trace hooks.
            request_class=SteppedRequest,
        )

    async def _cancel_workers(self) -> None:
        tasks = [w.task for w in self.workers.values() if w.task is not None and not w.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # ---- a worker -------------------------------------------------------------------

    def _touch(self, w: Worker) -> None:
        """Note that `w` changed: move the counts a snapshot reads. Every change to a
        worker's fields goes through here."""
        alive = w.alive
        now: Counted = (w.state if alive else None, w.url is not None, alive and w.retiring)
        before = self._counted.get(w.id, _UNCOUNTED)
        if now == before:
            return
        self._counted[w.id] = now
        if now[0] is not before[0]:
            if before[0] is not None:
                self._states[before[0]] -= 1
            else:
                self._live += 1
            if now[0] is not None:
                self._states[now[0]] += 1
            else:
                self._live -= 1
        self._held += now[1] - before[1]
        self._retiring += now[2] - before[2]

    def _enter(self, w: Worker, state: WorkerState) -> None:
        now = time.monotonic()
        # Its time in the state it leaves, the slow motion's lingers left out.
        lingered, w.lingered_then = w.lingered - w.lingered_then, w.lingered
        w.timing.moved(w.state, now - w.since - lingered, state, w.url, now)
        w.state = state
        w.since = now
        # In slow motion it lingers inside its first real await in `state` (timing/slowmo.py).
        w.owed = True
        self._touch(w)
        tap = self.tap
        if tap is not None:
            try:
                tap(w)
            except Exception as exc:
                self._tap_failed(exc)
        if self.state_listeners:
            self._notify(w)

    def _tap_failed(self, exc: Exception) -> None:
        self.tap = None
        self.ledger.report_fault(exc)

    def _tell_tap(self, w: Worker | None) -> None:
        """The tap, told as `_enter` tells it (where it is written out: the hot path)."""
        tap = self.tap
        if tap is not None:
            try:
                tap(w)
            except Exception as exc:
                self._tap_failed(exc)

    def _notify(self, w: Worker | None) -> None:
        self.state_listeners.tell(w)

    def _set_phase(self, phase: Phase) -> None:
        self.phase = phase
        self._tell_tap(None)
        if self.state_listeners:
            self._notify(None)

    async def _step(self, w: Worker, state: WorkerState) -> None:
        self._enter(w, state)

    async def _hold_if_paused(self, w: Worker) -> None:
        while not w.go.is_set():
            self._enter(w, WorkerState.PAUSED)
            await w.go.wait()

    async def _work(self, w: Worker) -> None:
        try:
            while not w.retiring:
                await self._hold_if_paused(w)
                # "waiting" is entered only when get() will suspend, as "throttled" is only
                # when the gate will: a state is where a worker waits, and with a full
                # queue it never waits here (the chapter's get() does not yield then).
                # No linger: the fetch before lingered at its end, still holding its URL.
                lease = self.q.take_ready()
                if lease is None:
                    self._enter(w, WorkerState.WAITING)
                    lease = await self.q.get()
                if self.host_book.take(lease):
                    continue  # its host is blocked: parked, and still queued
                url, max_redirect = w.url, w.max_redirect = lease.pair
                self._touch(w)
                try:
                    # A pause that came while this worker waited on get() still applies.
                    await self._hold_if_paused(w)
                    await self._fetch(w, url, max_redirect)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    # A surprise in one fetch is that URL's failure, not the worker's end;
                    # unless its record was kept already, and then there is nothing to fail.
                    if w.url is not None:
                        failure = self.ledger.failure(
                            url, describe_exception(exc), 1, w.id, time.time()
                        )
                        self._finish(w, failure)
                finally:
                    if w.url is not None:
                        # Cancelled before its record was written: the URL goes back.
                        self.q.put_back(lease)
                        self.host_book.queued(lease.url)
                        w.url = None
                        self._touch(w)
                    self.q.task_done(lease)
            self._enter(w, WorkerState.STOPPED)
        except asyncio.CancelledError:
            ended = w.retiring or self.phase is Phase.STOPPING
            self._enter(w, WorkerState.STOPPED if ended else WorkerState.CANCELLED)
            raise

    async def _fetch(self, w: Worker, url: str, max_redirect: int) -> None:
        t_start, lingered = time.time(), w.lingered
        refused = self.ledger.refusal(url)
        if refused is not None:
            self._drop(w, url, refused)  # from a state file or Redis, and against the rules
            return
        origin = origin_of(url)
        crawl_delay = await self._robots_allow(w, url, origin)
        if crawl_delay is None:
            return  # refused by robots.txt: filtered, not fetched
        got = await self._answer(w, url, origin, crawl_delay, t_start)
        if isinstance(got, FetchRecord):
            self._finish(w, _unlingered(got, w.lingered - lingered))  # no answer after max_tries
            return
        answer, tries = got
        parse_here = False
        if self.ledger.will_parse(answer):
            await self._step(w, WorkerState.PARSING)
            answer = await self._parse_big_page(url, answer)
            parse_here = answer.parsed is None
        if parse_here:
            # The ledger parses it next, on the loop: with no await in between, the turn
            # covers that parse.
            await self.turns.take()
        record, new = self.ledger.answered(url, max_redirect, answer, tries, w.id, t_start)
        for pair in new:
            self._put(pair)  # the chapter's put, right where the links are found
        self._finish(w, _unlingered(record, w.lingered - lingered))

    async def _robots_allow(self, w: Worker, url: str, origin: str) -> float | None:
        """The Crawl-delay to keep if robots.txt allows `url`; None (and filtered) if not."""
        if not self.config.obey_robots:
            return 0.0
        rules = self.robots.known(origin)
        if rules is None:
            await self._step(w, WorkerState.ROBOTS)
            rules = await self.robots.rules(origin)
        if not rules.allows(url):
            self._drop(w, url, rules.refusal_of(url))
            return None
        return self.robots.crawl_delay(origin)  # capped, and recorded

    async def _answer(
        self, w: Worker, url: str, origin: str, crawl_delay: float, t_start: float
    ) -> tuple[Answer, int] | FetchRecord:
        """The server's answer and the tries it took, or the failure after max_tries."""
        tries = 0
        fresh = False  # the next request opens a new connection instead of a pooled one
        while True:
            tries += 1
            attempt = Attempt(w, lambda: self._step(w, WorkerState.HEADERS))
            try:
                response, body, problem = await self._request(
                    attempt, url, origin, crawl_delay, fresh
                )
            except (*RETRYABLE, *OUT_OF_STEP) as exc:
                if attempt.reused and not fresh and isinstance(exc, OUT_OF_STEP):
                    # Perhaps the bytes of an earlier answer, not this URL's fault: once
                    # more on a connection of its own, and that is the try that counts.
                    fresh = True
                    tries -= 1
                    continue
                if not isinstance(exc, RETRYABLE) or tries >= self.config.max_tries:
                    return self.ledger.failure(url, describe_exception(exc), tries, w.id, t_start)
                await self._step(w, WorkerState.BACKOFF)
                delay = min(self.config.backoff * 2 ** (tries - 1), self.config.max_backoff)
                await asyncio.sleep(delay)
                continue
            answer = Answer(
                status=response.status,
                content_type=media_type(response.headers.get("Content-Type")),
                charset=response.charset,
                location=response.headers.get("Location"),
                body=body,
                problem=problem,
            )
            return answer, tries

    async def _parse_big_page(self, url: str, answer: Answer) -> Answer:
        """A big page's links, parsed in a thread; a small page is left to the ledger."""
        if len(answer.body) < PARSE_IN_THREAD_BYTES:
            return answer
        # A big page would hold the loop (and every other worker) for tens of ms; in a
        # thread it holds it for a few (bench/loop_lag.py measures both).
        if self._parse_pool is None:
            self._parse_pool = ThreadPoolExecutor(PARSE_THREADS, "crawlscope-parse")
        parsed = await asyncio.get_running_loop().run_in_executor(
            self._parse_pool, parse_links, answer.body, url, answer.charset, self.config.max_links
        )
        return dataclasses.replace(answer, parsed=parsed)

    async def _request(
        self, attempt: Attempt, url: str, origin: str, crawl_delay: float, fresh: bool = False
    ) -> tuple[aiohttp.ClientResponse, bytes, str | None]:
        """One try: the response, its body, and why the body was cut short (or None).

        With `fresh`, on a new connection that is closed after it."""
        assert self.session is not None
        w = attempt.worker
        assert isinstance(w, Worker)
        session = self.session
        if fresh:
            if self._fresh_session is None:
                self._fresh_session = self._make_session(fresh=True)
            session = self._fresh_session
        if not self.hosts.enter_now(origin, crawl_delay):
            await self._step(w, WorkerState.THROTTLED)
            await self.hosts.enter(origin, crawl_delay)
        started, lingered = time.monotonic(), w.lingered
        # The URL holds "***" for a password; the root's own goes in the header (and
        # aiohttp's errors, which quote the URL sent, show none).
        target, authorization = self.config.credentials.request(url)
        headers = {"Authorization": authorization} if authorization else None
        trying = TRYING.set(attempt)
        try:
            await self._step(w, WorkerState.CONNECTING)
            async with session.get(target, headers=headers, allow_redirects=False) as response:
                # A body that came whole with the headers is not waited for: no "body".
                if not response.content.is_eof():
                    await self._step(w, WorkerState.BODY)
                body, problem = await self._read_body(response)
        except Exception:
            self.host_book.no_answer(origin)
            raise
        finally:
            TRYING.reset(trying)
            self.hosts.leave(origin)
        # The server's time: a slow motion's lingers are the viewer's (engine/timing/slowmo.py).
        self.host_book.answered(origin, time.monotonic() - started - (w.lingered - lingered))
        return response, body, problem

    async def _read_body(self, response: aiohttp.ClientResponse) -> tuple[bytes, str | None]:
        # Counted as it streams, after decompression, so neither a huge page nor a small
        # gzip bomb can make the crawler hold more than max_size bytes of one body.
        limit = self.config.max_size
        declared = response.content_length
        if declared is not None and declared > limit:
            response.close()
            return b"", f"TooLarge: Content-Length {declared} is over {limit} bytes"
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_any():
            size += len(chunk)
            if size > limit:
                response.close()
                return b"", f"TooLarge: body over {limit} bytes"
            chunks.append(chunk)
        return b"".join(chunks), None

    def _put(self, pair: Pair) -> None:
        self.q.put_nowait(pair)
        self.host_book.queued(pair[0])

    def _drop(self, w: Worker, url: str, reason: str) -> None:
        """A URL a worker took but may not fetch moves to filtered, in one step."""
        self.ledger.drop(url, reason, w.id)
        w.url = None
        self._touch(w)
        for pair in self.ledger.refill():
            self._put(pair)  # in its place under max_pages

    def _finish(self, w: Worker, record: FetchRecord) -> None:
        # One synchronous step: the URL leaves the worker's hands and lands in done or
        # failed with no await in between, so the accounting never sees it twice or not at all.
        self.ledger.keep(record)
        self.host_book.finished(record.url, record.failed, record.depth)
        w.url = None
        w.pages += 1
        self._touch(w)

    # ---- live controls ---------------------------------------------------------------

    def add_worker(self) -> Worker:
        w = Worker(self._next_worker_id)
        self._next_worker_id += 1
        if not self.paused_all:
            w.go.set()
        # Timed: each resume of its coroutine is measured (engine/timing/per_worker.py).
        w.timing.on_long = lambda ns, gc, frame, began: self.health.long_step(
            w, ns, gc, frame, began
        )
        w.timing.hold = Linger(w, lambda: self.slowmo)  # slow motion (engine/timing/slowmo.py)
        w.task = asyncio.create_task(timed(self._work(w), w.timing), name=f"worker-{w.id}")
        w.task.add_done_callback(lambda task: self._worker_ended(w, task))
        self.workers[w.id] = w
        self._enter(w, w.state)  # so observers hear of it before its task first runs
        return w

    def _worker_ended(self, w: Worker, task: asyncio.Task[None]) -> None:
        # Cancelled or retired is an end the crawl expects. Anything else is a bug past
        # _work's guards: a fault, so the crawl stops and says so rather than wait on a
        # join() that no worker may be left to finish.
        w.ended = True
        self._touch(w)
        cause = None if task.cancelled() else task.exception()
        if cause is None:
            return
        self._enter(w, WorkerState.CANCELLED)  # its finally put the URL back on the queue
        self.ledger.report_fault(WorkerDied(w.id, cause))

    def remove_worker(self, worker_id: int | None = None) -> Worker | None:
        """Retire a worker: an idle one at once, a busy one after the fetch in hand.

        With no id, the newest idle worker goes, else the newest busy one.
        """
        live = [w for w in self.workers.values() if w.alive and not w.retiring]
        if worker_id is not None:
            live = [w for w in live if w.id == worker_id]
        if not live:
            return None
        idle = [w for w in live if w.url is None]
        w = (idle or live)[-1]
        w.retiring = True
        self._touch(w)
        if w.url is None and w.task is not None:
            w.task.cancel()  # suspended in get() or a pause, holding nothing
        else:
            w.go.set()  # a paused worker holding a URL finishes it, then leaves
        return w

    def cancel_worker(self, worker_id: int) -> bool:
        """Cancel one worker's task; the URL it held goes back on the queue."""
        w = self.workers.get(worker_id)
        if w is None or not w.alive or w.task is None:
            return False
        w.task.cancel()
        return True

    def pause(self, worker_id: int) -> bool:
        """Hold one worker before its next fetch; False if there is no such live worker."""
        w = self.workers.get(worker_id)
        if w is None or not w.alive:
            return False
        w.paused = True
        w.go.clear()
        self._touch(w)
        return True

    def resume(self, worker_id: int) -> bool:
        w = self.workers.get(worker_id)
        if w is None or not w.alive:
            return False
        w.paused = False
        if not self.paused_all:
            w.go.set()
        self._touch(w)
        return True

    def pause_all(self) -> None:
        self.paused_all = True
        if self.phase is Phase.RUNNING:
            self._set_phase(Phase.PAUSED)
        for w in self.workers.values():
            w.go.clear()

    def resume_all(self) -> None:
        self.paused_all = False
        if self.phase is Phase.PAUSED:
            self._set_phase(Phase.RUNNING)
        for w in self.workers.values():
            if not w.paused:
                w.go.set()

    def set_slowmo(self, seconds: float) -> None:
        self.slowmo = seconds

    def knows_host(self, origin: str) -> bool:
        """Has the crawl met `origin` (a URL of it queued, taken or fetched)? The hosts
        controls refuse one it has not (engine/hosts/controls.py)."""
        return bool(origin) and origin in self.host_book.hosts

    def block_host(self, origin: str) -> bool:
        """Fetch nothing more from `origin` (a request under way ends); its URLs wait."""
        return self.host_book.block(origin)

    def unblock_host(self, origin: str) -> bool:
        """`origin`'s parked URLs go back on the queue; False if it was not blocked."""
        if not self.host_book.blocked(origin):
            return False
        for lease in self.host_book.unblock(origin):
            self.q.put_back(lease)
            self.q.task_done(lease)  # the put back counts it again
        return True

    def set_host_delay(self, origin: str, seconds: float) -> None:
        self.hosts.set_delay(origin, seconds)

    def set_host_limit(self, origin: str, limit: int) -> None:
        self.hosts.set_limit(origin, limit)

    def stop(self) -> None:
        """End the crawl gracefully: crawl() cancels the workers and returns."""
        self._stop.set()

    # ---- what an observer reads ------------------------------------------------------

    @property
    def unfinished(self) -> int:
        return self.q.unfinished

    @property
    def elapsed(self) -> float:
        if self.t0 is None:
            return 0.0
        return (self.t1 or time.monotonic()) - self.t0

    def accounting(self) -> Accounting:
        # `_held` moves in _touch with every worker's URL: no walk of the workers, which the
        # flight recorder would pay at every state change.
        return self._accounting(self._held)

    def counts(self) -> tuple[str, int, int, int, int, int, int, int, int]:
        """What accounting() says, with the phase and the unfinished counter, as a plain
        tuple in the order of a recorded event's counts (engine/trace/events.py): the
        flight recorder reads them as workers take and let go of URLs, and building an
        Accounting (frozen) cost it more than the rest of the event."""
        q = self.q
        shared = q.accounting()
        if shared is not None:
            a = shared
            return (self.phase._value_, a.queued, q.unfinished, a.seen, a.done, a.failed,
                    a.filtered, a.unfetched, a.held)  # fmt: skip
        books = self.ledger
        return (
            self.phase._value_, q.qsize() + self.host_book.parked, q.unfinished,
            len(books.seen_urls), len(books.done), len(books.failed), len(books.filtered),
            len(books.unfetched), self._held,
        )  # fmt: skip

    def _accounting(self, held: int) -> Accounting:
        shared = self.q.accounting()  # a cluster's books: every process's URLs
        if shared is not None:
            return shared
        # A blocked host's parked URLs count as queued: they wait, as the queue's do.
        return self.ledger.accounting(self.q.qsize() + self.host_book.parked, held)

    def url_books(self) -> CrawlBooks:
        """What this crawl's books say of one URL, as `/` asks them (trace/why.py)."""
        return CrawlBooks(self.ledger, self.workers, self.q.qsize)

    def snapshot(self, where_for: Container[int] | None = None, rows: bool = True) -> Snapshot:
        """With `where_for`, views of those workers alone (the rows a screen shows), each
        with where it is suspended; with None, of every worker."""
        now = time.monotonic()
        if not rows:
            return self._snapshot(now, (), self._row_ids())
        if where_for is None:
            views = [self._row_view(w) for w in self.workers.values()]
            return self._snapshot(now, tuple(views), None)
        workers = self.workers
        if isinstance(where_for, Iterable):
            asked = sorted(i for i in where_for if i in workers)
        else:
            asked = [i for i in workers if i in where_for]
        views = [self._row_view(workers[i]) for i in asked]
        return self._snapshot(now, tuple(views), self._row_ids())

    def _row_view(self, w: Worker) -> WorkerView:
        """`w`'s view, built again only if it stepped or changed since the last: between
        two steps its coroutine is suspended at the same await, and a screen asks for the
        same rows frame after frame (a walk of the chain was a third of a rows frame's
        snapshot). Its steps are counted only while timing is on: off, it is built anew."""
        steps = sum(w.timing.step.counts)
        key = (steps, w.state, w.since, w.pages, w.paused, w.retiring, w.alive, w.lingering)
        kept = w.view_of
        if kept is not None and kept[0] == key and steps:
            return kept[1]
        view = self._view_of(w, *_where(w))
        w.view_of = (key, view)
        return view

    def _row_ids(self) -> tuple[int, ...]:
        # The same tuple from frame to frame while no worker is added: a screen compares
        # it to its rows by identity first.
        if len(self._ids) != len(self.workers):
            self._ids = tuple(self.workers)
        return self._ids

    def _snapshot(
        self, now: float, views: tuple[WorkerView, ...], ids: tuple[int, ...] | None
    ) -> Snapshot:
        lag_p50, lag_p99, holds = self.health.figures()
        return Snapshot(
            t=now,
            elapsed=self.elapsed,
            phase=self.phase,
            workers=views,
            live_workers=self._live,
            accounting=self._accounting(self._held),
            unfinished=self.unfinished,
            redirect_version=self.ledger.redirects.version,
            paused_all=self.paused_all,
            slowmo=self.slowmo,
            crawl_delay=crawl_delay_note(self),
            loop_lag_p50=lag_p50,
            loop_lag_p99=lag_p99,
            verdict=self.health.diagnosis.verdict.line,
            holds=holds,
            warnings=tuple(self.health.warnings),
            warning_count=self.health.warning_count,
            worker_ids=ids,
            states=tuple((state, n) for state, n in self._states.items() if n),
            retiring=self._retiring,
            hosts=self.host_book.rows(
                self.hosts, self.robots if self.config.obey_robots else None, self.t0
            ),
            host_count=self.host_book.count,
            depths=depth_histogram(self.host_book.depths),
        )

    def _view_of(self, w: Worker, where: str, own_at: str = "") -> WorkerView:
        # On the crawl's clock, as Snapshot.elapsed is; a worker added before crawl()
        # entered its state at 0.
        since = 0.0 if self.t0 is None else w.since - self.t0
        t = w.timing.summary()
        return WorkerView(
            w.id, w.state, w.url, since, w.pages, w.paused, w.retiring, w.alive, where,
            own_at, t.step_p50, t.step_p99, t.step_max, t.delay_p99,
        )  # fmt: skip

    def recent_fetches(self) -> Sequence[FetchRecord]:
        return self.ledger.recent

    def worker_detail(self, worker_id: int) -> WorkerDetail | None:
        """The detail view's figures for one worker (engine/observe/worker_detail.py)."""
        w = self.workers.get(worker_id)
        return None if w is None else _detail(w, time.monotonic())

    def chain_preview(self, limit: int, hops: int) -> tuple[list[Chain], int]:
        return self.ledger.chain_preview(limit, hops)


def _where(w: Worker) -> tuple[str, str]:
    """Where the worker's coroutine is suspended (in slow motion, held in an await that
    is done, engine/timing/slowmo.py, that await marked as slowed), and where in the
    engine's own code it waits (WorkerView.own_at)."""
    point = suspension_point(w.task)
    where = str(point)
    own = next((f for f in reversed(point.frames) if f.module.startswith("engine/")), None)
    own_at = f"{own.function} {own.module}:{own.line}" if own is not None else ""
    return (f"{SLOWED} {where}" if w.lingering else where), own_at


def _unlingered(record: FetchRecord, lingered: float) -> FetchRecord:
    """`record` timed as the fetch took, without the slow motion's lingers in it: its
    start moves on by the time lingered, its end stays."""
    if lingered:
        record.t_start = min(record.t_start + lingered, record.t_end)
    return record


def _detail(w: Worker, now: float) -> WorkerDetail:
    """`w` in full as it is at monotonic time `now` (engine/observe/worker_detail.py)."""
    point = suspension_point(w.task)
    t = w.timing
    totals = t.state_totals()
    current = w.state.value
    seconds = {state: s for state, (s, _) in totals.items()}
    seconds[current] = seconds.get(current, 0.0) + max(now - w.since, 0.0)
    states = tuple(
        StateTime(state, seconds[state], totals.get(state, (0.0, 0))[1])
        for state in sorted(seconds, key=lambda s: -seconds[s])
    )
    return WorkerDetail(
        id=w.id,
        chain=tuple(str(frame) for frame in point.frames),
        awaits=point.awaits,
        task_state=point.state,
        step_counts=tuple(t.step.counts),
        step_max=t.step.max_ns / 1e9,
        delay_counts=tuple(t.delay.counts),
        delay_max=t.delay.max_ns / 1e9,
        states=states,
        positions=tuple((f.function, f.module, f.line) for f in point.frames),
    )
