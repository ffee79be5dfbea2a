"""Stage 1 of the chapter: callbacks on a selector event loop.

The chapter's first crawler registers a callback with the selector for each thing it
waits for, and an event loop runs the callbacks as sockets become ready. A `Fetcher`
chains the work of one URL through its callbacks, `fetch -> connected -> read_response`,
keeping on `self` what a thread would keep in local variables.

This is that design, made into a crawler that finds the same URLs as the asyncio engine:

- It keeps its books in the shared `Ledger`, so redirects, links, scope and records are
  exactly the asyncio engine's.
- At most `max_tasks` fetches are in flight (the chapter starts a Fetcher per link with
  no cap); the rest wait in a deque. Each of the `max_tasks` slots is a "worker" with a
  state label and the URL it holds, as in engine/observe/workers.py.
- Retries with backoff on connection errors, timeouts and answers cut short, `max_tries`
  in all, on a timer; each try has a deadline of `total_timeout` seconds (connect, send
  and read together). An answer that breaks HTTP's framing is failed at once.
- robots.txt is fetched once per origin through the same Fetcher before the origin's
  first URL, and obeyed as engine/politeness.py does.
- The chapter's bugs fixed: `connect` errors are read from SO_ERROR instead of ignored,
  `send` is repeated until the whole request is out, and a callback's failure becomes a
  record instead of a crawl that hangs with its chain of callbacks broken.

Limits, on purpose: plain http only (an https URL fails with a record naming
`UnsupportedScheme`); `per_host` and `host_delay` are ignored (the only limit is
`max_tasks`); `connect_timeout` and `read_timeout` are ignored (only `total_timeout`);
DNS is resolved with a blocking call, once per host.

`show_stack_ripping(url)` crawls with a callback that raises, as the chapter's
`parse_links` does, and returns the traceback: it shows the event loop calling
`read_response`, and nothing of the code that started the fetch.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import os
import selectors
import socket
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config import CrawlConfig
from ..ledger import REDIRECT_STATUSES, Ledger
from ..observe.snapshot import Accounting, Phase
from ..observe.workers import WorkerState
from ..politeness import ROBOTS_MAX_BYTES, RobotsRules
from ..records import FetchRecord, describe_exception
from ..urls import normalize, origin_of
from .rawhttp import (
    CHUNK,
    ROBOTS_MAX_HOPS,
    Address,
    HttpError,
    RawResponse,
    Request,
    ResponseReader,
    TooManyRedirects,
    UnsupportedScheme,
    resolve,
    retryable,
    robots_rules,
    robots_unreachable,
)
from .steps import ClockJumped, FutureResolved, Scheduled, SocketReady, Step, TimerFired

__all__ = [
    "FETCH_ERRORS",
    "CallbackCrawler",
    "Fetcher",
    "Handle",
    "SelectorLoop",
    "Slot",
    "StepHook",
    "show_stack_ripping",
]

# How a try fails: the network (TimeoutError is an OSError), or bytes that are not HTTP.
# rawhttp.retryable() says which are worth another try.
FETCH_ERRORS = (OSError, HttpError)

StepHook = Callable[[Step], None]  # told about each callback the loop is about to run


# ---- the event loop ------------------------------------------------------------------


class Handle:
    """One callback the loop will run, and why (for step mode and the TUI).

    A handle registered for a socket is run each time the selector reports the socket
    ready, with the chapter's `(key, mask)` arguments; a timer's or `call_soon`'s once.
    """

    __slots__ = ("args", "callback", "cancelled", "kind", "mask", "sock", "told", "when")

    def __init__(
        self,
        callback: Callable[..., Any],
        args: tuple[Any, ...],
        kind: str,
        when: float = 0.0,
        told: Step | None = None,
    ) -> None:
        self.callback = callback
        self.args = args
        self.kind = kind  # "io", "timer" or "soon"
        self.when = when
        self.cancelled = False
        self.sock: socket.socket | None = None
        self.mask = 0
        self.told = told  # what it means, when its maker knows better than as_step()

    def cancel(self) -> None:
        self.cancelled = True

    def as_step(self) -> Step:
        """What running this handle means, as a step event (built only when asked)."""
        if self.told is not None:
            return self.told
        callback = getattr(self.callback, "__qualname__", type(self.callback).__name__)
        owner = getattr(self.callback, "__self__", None)
        label = getattr(owner, "label", None)
        if self.kind == "io":
            fd = self.sock.fileno() if self.sock is not None else -1
            readable = bool(self.mask & selectors.EVENT_READ)
            return SocketReady(fd, readable, callback, label)
        first = getattr(self.args[0], "label", None) if self.args else None
        if self.kind == "timer":
            # A plain function on a timer (a deadline, say) names what it acts on.
            return TimerFired(callback, label or first)
        # A future's done callback: name the future, which is what woke the target.
        return FutureResolved(first, callback, label) if first else Scheduled(callback, label)


class SelectorLoop:
    """The chapter's `loop()`: select, then run the callback of each ready socket; plus
    timers (a heap) for backoff and deadlines, and a ready queue.

    The loop can be driven a step at a time (`step()`) or a turn at a time
    (`run_once()`), so a UI can freeze a crawl and advance it one callback at a time;
    its clock can be held between steps, and jumped to the next timer when nothing but
    a timer can come next.
    An exception a callback raises goes straight out of the loop, as in the chapter:
    that is what `show_stack_ripping` shows.
    """

    def __init__(self, on_step: StepHook | None = None) -> None:
        self.selector = selectors.DefaultSelector()
        self.ready: deque[Handle] = deque()  # callbacks to run, in order
        self.timers: list[tuple[float, int, Handle]] = []  # heap of (when, seq, handle)
        self.on_step = on_step
        self.current: Handle | None = None  # the handle running now
        self.steps = 0  # callbacks run so far
        self._seq = itertools.count()  # breaks ties between timers due at the same time
        self._stopping = False
        self._held_at: float | None = None  # when hold_clock() stopped the clock
        self._held_for = 0.0  # seconds the clock has been held, less the seconds it jumped
        self._jumped: float | None = None  # seconds the clock jumped for the next callback

    # -- registering work --

    def watch(self, sock: socket.socket, events: int, callback: Callable[..., Any]) -> Handle:
        """Call `callback(key, mask)` whenever `sock` is ready for `events` (replacing
        whatever the socket was watched for before)."""
        handle = Handle(callback, (), "io")
        handle.sock = sock
        handle.mask = events  # what it waits for, until the selector says what happened
        try:
            key = self.selector.get_key(sock)
        except KeyError:
            self.selector.register(sock, events, handle)
        else:
            key.data.cancel()
            self.selector.modify(sock, events, handle)
        return handle

    def unwatch(self, sock: socket.socket) -> None:
        """Stop watching `sock`; a readiness already queued for it is dropped too."""
        try:
            key = self.selector.unregister(sock)
        except (KeyError, ValueError):
            return  # not watched (or already closed): nothing to undo
        key.data.cancel()

    def call_soon(self, callback: Callable[..., Any], *args: Any) -> Handle:
        handle = Handle(callback, args, "soon")
        self.ready.append(handle)
        return handle

    def call_later(
        self, delay: float, callback: Callable[..., Any], *args: Any, step: Step | None = None
    ) -> Handle:
        """`step`: what the timer firing means, if more than its callback says."""
        when = self.time() + delay
        handle = Handle(callback, args, "timer", when, step)
        heapq.heappush(self.timers, (when, next(self._seq), handle))
        return handle

    # -- the clock --

    def time(self) -> float:
        """The loop's clock for timers: monotonic, less the time it was held."""
        now = time.monotonic() if self._held_at is None else self._held_at
        return now - self._held_for

    def hold_clock(self) -> None:
        """Stop the timers' clock (step mode, between steps): a class may look at a
        frozen crawl for minutes without every deadline expiring meanwhile."""
        if self._held_at is None:
            self._held_at = time.monotonic()

    def release_clock(self) -> None:
        if self._held_at is not None:
            self._held_for += time.monotonic() - self._held_at
            self._held_at = None

    def watching(self) -> int:
        """How many sockets the selector watches (0 once the loop is closed)."""
        watched = self.selector.get_map()
        return 0 if watched is None else len(watched)

    def next_timer(self) -> tuple[float, Handle] | None:
        """(seconds from now, handle) of the soonest live timer, or None. Read-only, so
        an observer may call it: cancelled timers stay in the heap until they are due."""
        live = [entry for entry in self.timers if not entry[2].cancelled]
        if not live:
            return None
        when, _, handle = min(live)  # (when, seq) decide: seq is unique
        return when - self.time(), handle

    def _jump_to_next_timer(self) -> None:
        """Move the clock on to the soonest timer's deadline and make that timer ready.

        Only when no socket is watched: then nothing but a timer can happen next, and
        waiting for it in real time would only make a class watch a frozen screen (or,
        with the clock held, wait for ever). While a socket is watched the network may
        answer first, and jumping would fire a fetch's deadline before its server had
        the time to reply.
        """
        if self.ready or self.watching():
            return
        soonest = self.next_timer()
        if soonest is None:
            return
        ahead, handle = soonest
        ahead = max(0.0, ahead)
        self._held_for -= ahead  # the clock reads `ahead` seconds later from now on
        self._jumped = ahead
        # Up to the deadline as stored, not as the clock now reads it: float rounding
        # must not leave the timer a hair short of due.
        self._take_due_timers(handle.when)

    # -- running --

    def run_forever(self) -> None:
        self._stopping = False
        try:
            while not self._stopping:
                self.run_once()
        finally:
            self._stopping = False

    def stop(self) -> None:
        """Leave run_forever() at the end of the current callback."""
        self._stopping = True

    def run_once(self, max_wait: float | None = None) -> int:
        """One turn: wait for sockets and timers if nothing is ready (at most `max_wait`
        seconds; None waits as long as needed), then run what was ready. Returns how
        many callbacks ran."""
        if not self.ready:
            self._poll(max_wait)
        ran = 0
        # Only what was ready at the start of the turn: a callback that schedules
        # another with call_soon does not starve the sockets.
        for _ in range(len(self.ready)):
            if self._stopping:
                break
            ran += self._run(self.ready.popleft())
        return ran

    def step(self, max_wait: float | None = 0.0, *, jump: bool = False) -> Handle | None:
        """Run exactly one callback (polling first if none is ready); the handle run,
        or None if nothing became ready within `max_wait` seconds.

        A held clock runs while the step waits, so backoffs and deadlines move on only
        as far as the crawl is allowed to. With `jump`, a step never waits on a timer:
        when nothing is ready and no socket is watched, the clock jumps to the next
        timer, which runs now (step mode: a timer firing is a step like any other).
        """
        while True:
            if not self.ready:
                held = self._held_at is not None
                self.release_clock()
                try:
                    self._poll(max_wait)
                finally:
                    if held:
                        self.hold_clock()
                if jump:
                    self._jump_to_next_timer()
                if not self.ready:
                    return None
            handle = self.ready.popleft()
            if self._run(handle):
                return handle

    def _run(self, handle: Handle) -> int:
        if handle.cancelled:
            return 0
        jumped, self._jumped = self._jumped, None
        if self.on_step is not None:
            step = handle.as_step()
            self.on_step(step if jumped is None else ClockJumped(jumped, step))
            if handle.cancelled:
                return 0  # the hook acted (a UI's stop, say) and this callback is moot now
        self.current = handle
        try:
            handle.callback(*handle.args)
        finally:
            self.current = None
            self.steps += 1
        return 1

    def _poll(self, max_wait: float | None) -> None:
        timeout = max_wait
        if self.timers:
            until_next = max(0.0, self.timers[0][0] - self.time())
            timeout = until_next if timeout is None else min(timeout, until_next)
        if timeout is None and not self.selector.get_map():
            # select() with nothing to watch and no timeout would sleep forever.
            raise RuntimeError("event loop deadlock: no socket, timer or callback to wait for")
        for key, mask in self.selector.select(timeout):
            handle: Handle = key.data
            handle.mask = mask
            handle.args = (key, mask)  # the chapter's callback(event_key, event_mask)
            self.ready.append(handle)
        self._take_due_timers()

    def _take_due_timers(self, until: float | None = None) -> None:
        now = self.time() if until is None else max(until, self.time())
        while self.timers and self.timers[0][0] <= now:
            _, _, handle = heapq.heappop(self.timers)
            if not handle.cancelled:
                self.ready.append(handle)

    def close(self) -> None:
        self.selector.close()

    # -- what an observer reads --

    def registered(self) -> list[tuple[int, str, Step]]:
        """(fd, "read" or "write", the step it will be) for each watched socket."""
        rows = []
        for key in list(self.selector.get_map().values()):
            events = "read" if key.events & selectors.EVENT_READ else "write"
            rows.append((key.fd, events, key.data.as_step()))
        return rows

    def watched_by(self) -> dict[int, object]:
        """Each watched socket's fd, and the object whose method it will call (a Fetcher)."""
        owners = {}
        for key in list(self.selector.get_map().values()):
            owner = getattr(key.data.callback, "__self__", None)
            if owner is not None:
                owners[key.fd] = owner
        return owners

    def pending(self) -> list[Step]:
        """The ready queue's steps, in the order they will run."""
        return [handle.as_step() for handle in self.ready if not handle.cancelled]

    def timers_due(self) -> list[tuple[float, Step]]:
        """(seconds from now, the step it will be) for each live timer, soonest first."""
        now = self.time()
        # Sorted with the sequence number: two timers due at the same moment must not
        # fall back on comparing their handles.
        live = sorted((when, seq, h) for when, seq, h in self.timers if not h.cancelled)
        return [(when - now, h.as_step()) for when, _, h in live]


# ---- the fetcher ---------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class Slot:
    """A place for one fetch in flight; there are `max_tasks` of them. Its state labels
    are engine/observe/workers.py's, so a UI shows every engine the same way."""

    id: int
    state: WorkerState = WorkerState.WAITING
    url: str | None = None  # the URL it holds, from the queue until its record is kept
    max_redirect: int = 0
    since: float = field(default_factory=time.monotonic)
    pages: int = 0
    fetcher: Fetcher | None = None
    alive: bool = True  # False once the crawl is over

    def enter(self, state: WorkerState) -> None:
        self.state = state
        self.since = time.monotonic()


class Fetcher:
    """One URL's fetch as a chain of callbacks, with retries.

        fetch ──> connected ──> (send_more) ──> read_response ──> done(self)
          ^            any error or the deadline (timed_out)
          └── backoff timer <── failed ──> done(self) after max_tries

    Its state lives on `self` between callbacks: the socket, the reader, the tries. When
    it is over, `response` or `error` is set and `done(self)` is called.
    """

    def __init__(
        self,
        crawler: CallbackCrawler,
        url: str,
        done: Callable[[Fetcher], None],
        slot: Slot | None = None,
        max_tries: int | None = None,
        max_size: int | None = None,
        truncate: bool = False,
    ) -> None:
        config = crawler.config
        self.crawler = crawler
        self.loop = crawler.loop
        self.url = url
        self.done = done
        self.slot = slot  # None for a robots.txt fetch
        self.max_tries = config.max_tries if max_tries is None else max_tries
        self.max_size = config.max_size if max_size is None else max_size
        self.truncate = truncate
        self.tries = 0
        self.t_start = time.time()
        self.sock: socket.socket | None = None
        self.request: Request | None = None
        self.unsent = memoryview(b"")
        self.reader: ResponseReader | None = None
        self.deadline: Handle | None = None
        self.retry: Handle | None = None
        self.response: RawResponse | None = None
        self.error: BaseException | None = None

    @property
    def label(self) -> str:
        return self.url

    def _enter(self, state: WorkerState) -> None:
        if self.slot is not None:
            self.slot.enter(state)

    def fetch(self) -> None:
        """Start one try: a non-blocking connect, then wait for the socket to be writable."""
        self.retry = None
        self.tries += 1
        self._enter(WorkerState.CONNECTING)
        try:
            self.request = Request.get(self.url, self.crawler.config.user_agent)
            family, kind, proto, address = self._address(self.request)
            self.sock = socket.socket(family, kind, proto)
            self.sock.setblocking(False)
            error = self.sock.connect_ex(address)
            if error not in (0, errno.EINPROGRESS):  # EINPROGRESS: the selector says when
                raise OSError(error, os.strerror(error))
        except (*FETCH_ERRORS, UnsupportedScheme) as exc:
            self.failed(exc)
            return
        timeout = self.crawler.config.total_timeout
        self.deadline = self.loop.call_later(timeout, self.timed_out)
        self.crawler.fetchers.add(self)
        self.loop.watch(self.sock, selectors.EVENT_WRITE, self.connected)

    def _address(self, request: Request) -> Address:
        return resolve(request.host, request.port, self.crawler.addresses)

    def connected(self, key: selectors.SelectorKey, mask: int) -> None:
        """The socket is writable: the connect finished, or failed (SO_ERROR says)."""
        assert self.sock is not None and self.request is not None
        error = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if error:
            # OSError(errno, text) becomes the matching subclass: ConnectionRefusedError...
            self.failed(OSError(error, os.strerror(error)))
            return
        self._enter(WorkerState.HEADERS)
        self.unsent = memoryview(self.request.data)
        self.send_more(key, mask)

    def send_more(self, key: selectors.SelectorKey, mask: int) -> None:
        """Send what the socket takes; wait for writable again until the request is out
        (the chapter sends once and hopes)."""
        assert self.sock is not None
        try:
            sent = self.sock.send(self.unsent)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            self.failed(exc)
            return
        self.unsent = self.unsent[sent:]
        if self.unsent:
            self.loop.watch(self.sock, selectors.EVENT_WRITE, self.send_more)
            return
        self.reader = ResponseReader(self.max_size, self.truncate)
        self.loop.watch(self.sock, selectors.EVENT_READ, self.read_response)

    def read_response(self, key: selectors.SelectorKey, mask: int) -> None:
        """The socket is readable: data came, or the server closed it (EOF)."""
        assert self.sock is not None and self.reader is not None
        reader = self.reader
        try:
            chunk = self.sock.recv(CHUNK)
            reader.feed(chunk)
        except BlockingIOError:
            return  # a spurious wake-up; stay registered
        except FETCH_ERRORS as exc:
            self.failed(exc)
            return
        if reader.headers_done and self.slot is not None and self.slot.state is WorkerState.HEADERS:
            self._enter(WorkerState.BODY)
        if not reader.complete:
            return  # stay registered: the loop calls again when more arrives
        self.close()
        try:
            self.response = reader.response()
        except HttpError as exc:
            self.failed(exc)
            return
        self.done(self)

    def timed_out(self) -> None:
        self.deadline = None
        timeout = self.crawler.config.total_timeout
        self.failed(TimeoutError(f"no complete answer within {timeout} s"))

    def failed(self, exc: BaseException) -> None:
        """Retry after a backoff if the error is the network's and tries remain."""
        self.close()
        if retryable(exc) and self.tries < self.max_tries:
            config = self.crawler.config
            delay = min(config.backoff * 2 ** (self.tries - 1), config.max_backoff)
            self._enter(WorkerState.BACKOFF)
            self.retry = self.loop.call_later(delay, self.fetch)
            self.crawler.fetchers.add(self)
            return
        self.error = exc
        self.done(self)

    def close(self) -> None:
        """Let go of the socket and the deadline (idempotent)."""
        self.crawler.fetchers.discard(self)
        if self.deadline is not None:
            self.deadline.cancel()
            self.deadline = None
        if self.sock is not None:
            self.loop.unwatch(self.sock)
            self.sock.close()
            self.sock = None

    def abort(self) -> None:
        """Drop this fetch without a result (stop())."""
        self.close()
        if self.retry is not None:
            self.retry.cancel()
            self.retry = None


# ---- the crawler ---------------------------------------------------------------------


class CallbackCrawler:
    """The crawl as callbacks: `run()` blocks until every URL is done.

    Satisfies report.py's protocol (`config`, `ledger`, `elapsed`, `accounting()`), and
    calls `ledger.keep(record)` for each URL, so `record_listeners` see every record.
    """

    engine = "callbacks"

    def __init__(self, config: CrawlConfig, on_step: StepHook | None = None) -> None:
        self.config = config
        self.loop = SelectorLoop(on_step)
        self.todo: deque[tuple[str, int]] = deque()  # URLs waiting for a free slot
        self.ledger = Ledger(config)
        self.workers: dict[int, Slot] = {i: Slot(i) for i in range(config.max_tasks)}
        self.idle: deque[Slot] = deque(self.workers.values())  # slots free for a URL
        self._dispatching = False
        self.fetchers: set[Fetcher] = set()  # holding a socket or a retry timer
        self.robots: dict[str, RobotsRules] = {}
        self.robots_waiting: dict[str, list[Fetcher]] = {}  # origin -> fetchers held back
        self.addresses: dict[tuple[str, int], Address] = {}
        self.phase = Phase.IDLE
        self.t0: float | None = None
        self.t1: float | None = None
        self.started_at: float | None = None

    # -- the crawl --

    def start(self) -> None:
        """Queue the roots and start the first fetches; the loop does the rest."""
        self.t0 = time.monotonic()
        self.started_at = time.time()
        self.phase = Phase.RUNNING
        self.todo.extend(self.ledger.add_roots())
        self.dispatch()

    def run(self) -> CallbackCrawler:
        """Crawl to the end: start, then run the loop until the last fetch is done."""
        self.start()
        try:
            if self.phase is Phase.RUNNING:
                self.loop.run_forever()
        finally:
            if self.phase is Phase.RUNNING:  # left by an exception
                self.stop()
            self.loop.close()
        return self

    def dispatch(self) -> None:
        """Give queued URLs to free slots, then stop the loop if nothing is left.

        The one place fetches start. A long run of URLs that end without I/O (disallowed,
        https, unresolvable) is a loop here, not a recursion through callbacks.
        """
        if self._dispatching:
            # Called from a fetch that ended at once (a DNS failure, say) while starting:
            # the dispatch further down this stack sees the freed slot in its loop.
            return
        self._dispatching = True
        try:
            while self.todo and self.idle:
                slot = self.idle.popleft()
                url, max_redirect = self.todo.popleft()
                self.begin(slot, url, max_redirect)
        finally:
            self._dispatching = False
        if not self.todo and len(self.idle) == len(self.workers):
            self._end(Phase.FINISHED)

    def begin(self, slot: Slot, url: str, max_redirect: int) -> None:
        slot.url, slot.max_redirect = url, max_redirect
        fetcher = Fetcher(self, url, self.page_done, slot)
        slot.fetcher = fetcher
        if not url.startswith("http:"):
            # Checked before robots.txt: that fetch would fail the same way.
            error = describe_exception(UnsupportedScheme())
            self.finish(slot, self.ledger.failure(url, error, 1, slot.id, fetcher.t_start))
            return
        if self.config.obey_robots:
            origin = origin_of(url)
            rules = self.robots.get(origin)
            if rules is None:
                self.ask_robots(origin, fetcher)
                return
            if not rules.allows(url):
                self.drop(slot, rules.refusal_of(url))
                return
        fetcher.fetch()

    def page_done(self, fetcher: Fetcher) -> None:
        """A Fetcher's last callback: the books take the answer (or the failure)."""
        slot = fetcher.slot
        assert slot is not None and slot.url is not None
        url = fetcher.url
        if fetcher.error is not None:
            error = describe_exception(fetcher.error)
            record = self.ledger.failure(url, error, fetcher.tries, slot.id, fetcher.t_start)
        else:
            assert fetcher.response is not None
            answer = fetcher.response.answer()
            if self.ledger.will_parse(answer):
                slot.enter(WorkerState.PARSING)
            try:
                record, new = self.ledger.answered(
                    url, slot.max_redirect, answer, fetcher.tries, slot.id, fetcher.t_start
                )
                self.todo.extend(new)
            except Exception as exc:
                # A surprise in one page is that URL's failure, not the crawl's end. Only
                # here can it be caught: there is no caller to catch it further up.
                error = describe_exception(exc)
                record = self.ledger.failure(url, error, fetcher.tries, slot.id, fetcher.t_start)
        self.finish(slot, record)
        self.dispatch()

    def finish(self, slot: Slot, record: FetchRecord) -> None:
        # One synchronous step: the URL leaves the slot and lands in the books.
        self.ledger.keep(record)
        slot.pages += 1
        self._free(slot)

    def drop(self, slot: Slot, reason: str) -> None:
        assert slot.url is not None
        self.ledger.drop(slot.url, reason)
        self.todo.extend(self.ledger.refill())  # its place under max_pages goes on
        self._free(slot)

    def _free(self, slot: Slot) -> None:
        slot.url = slot.fetcher = None
        slot.enter(WorkerState.WAITING)
        self.idle.append(slot)

    # -- robots.txt --

    def ask_robots(self, origin: str, fetcher: Fetcher) -> None:
        """Hold `fetcher` until the origin's robots.txt is known (fetched once)."""
        assert fetcher.slot is not None
        fetcher.slot.enter(WorkerState.ROBOTS)
        waiting = self.robots_waiting.get(origin)
        if waiting is not None:
            waiting.append(fetcher)
            return
        self.robots_waiting[origin] = [fetcher]
        self.fetch_robots(origin, origin + "/robots.txt", 0)

    def fetch_robots(self, origin: str, url: str, hops: int) -> None:
        def robots_fetched(robots_fetcher: Fetcher) -> None:
            self.robots_fetched(origin, robots_fetcher, hops)

        # One try, as politeness.py does: unreachable means "disallow all" right away.
        Fetcher(
            self, url, robots_fetched, max_tries=1, max_size=ROBOTS_MAX_BYTES, truncate=True
        ).fetch()

    def robots_fetched(self, origin: str, fetcher: Fetcher, hops: int) -> None:
        response = fetcher.response
        if response is None:
            assert fetcher.error is not None
            rules = robots_unreachable(fetcher.error)
        elif response.status in REDIRECT_STATUSES and response.location:
            target = normalize(response.location, fetcher.url)
            if target is not None and hops < ROBOTS_MAX_HOPS:
                self.fetch_robots(origin, target, hops + 1)
                return
            rules = (
                robots_unreachable(TooManyRedirects(f"more than {ROBOTS_MAX_HOPS} redirects"))
                if target is not None
                else robots_rules(response)
            )
        else:
            rules = robots_rules(response)
        self.robots[origin] = rules
        for waiting in self.robots_waiting.pop(origin):
            slot = waiting.slot
            assert slot is not None and slot.url is not None
            if rules.allows(slot.url):
                waiting.fetch()
            else:
                self.drop(slot, rules.refusal_of(slot.url))
        self.dispatch()

    # -- ending --

    def _end(self, phase: Phase) -> None:
        if self.phase in (Phase.FINISHED, Phase.STOPPED):
            return
        self.phase = phase
        self.t1 = time.monotonic()
        for slot in self.workers.values():
            slot.alive = False
            slot.enter(WorkerState.STOPPED)
        self.loop.stop()

    def stop(self) -> None:
        """End the crawl now: every fetch is dropped and its URL goes back on the queue,
        so the accounting still adds up."""
        for fetcher in list(self.fetchers):
            fetcher.abort()
        for slot in reversed(self.workers.values()):
            if slot.url is not None:
                self.todo.appendleft((slot.url, slot.max_redirect))
                self._free(slot)
        self.robots_waiting.clear()
        self._end(Phase.STOPPED)

    # -- what an observer reads --

    @property
    def elapsed(self) -> float:
        if self.t0 is None:
            return 0.0
        return (self.t1 or time.monotonic()) - self.t0

    @property
    def unfinished(self) -> int:
        """URLs queued or held: the stage-1 counterpart of the queue's unfinished count."""
        return len(self.todo) + sum(1 for s in self.workers.values() if s.url is not None)

    def accounting(self) -> Accounting:
        held = sum(1 for slot in self.workers.values() if slot.url is not None)
        return self.ledger.accounting(len(self.todo), held)


# ---- stack ripping -------------------------------------------------------------------


class _CarelessCrawler(CallbackCrawler):
    """The chapter's mistake: a page parser that raises, with no handler around it."""

    def page_done(self, fetcher: Fetcher) -> None:
        self.parse_links(fetcher)

    def parse_links(self, fetcher: Fetcher) -> None:
        raise Exception("parse error")


def show_stack_ripping(url: str) -> str:
    """Crawl `url` with a callback that raises, and return the traceback it gives.

    The traceback runs from the event loop into `read_response` and the parser; the code
    that started the fetch (`start`, `dispatch`, `begin`, `Fetcher.fetch`) is not in it,
    because those frames returned long before the socket became readable. That loss of
    context is what the chapter calls stack ripping.
    """
    config = CrawlConfig(roots=(url,), max_tasks=1, max_tries=1, obey_robots=False)
    crawler = _CarelessCrawler(config)
    try:
        crawler.run()
    except Exception as exc:
        return "".join(traceback.format_exception(exc))
    raise RuntimeError(f"the crawl of {url} ended without reaching the parser")
