"""Stage 2 of the chapter: coroutines built from generators, a Future and a Task.

The chapter's second crawler keeps the selector loop of stage 1 but stops writing
callbacks by hand. A coroutine is a generator that yields a `Future` when it must wait;
a `Task` drives it with `send()`, resuming it when the future resolves; `yield from`
lets coroutines call sub-coroutines (`read`, `read_all`) as if they were functions, and
the future they wait on comes up through the whole chain to the task (figure 5.3).

Everything here is built from those parts, written anew in today's Python:

- `Future`: `add_done_callback`, `set_result`, `set_exception`, and `__iter__`, so that
  `yield from future` waits for it. A future already done resumes its waiter at once
  (the chapter's footnote 9), and callbacks run from the loop, never inside the caller
  of `set_result` (so no coroutine runs in the middle of another's step).
- `Task(Future)`: drives a generator with `send()` (or `throw()` when the future failed)
  and resolves itself when the generator returns. `cancel()` throws `Cancelled` into the
  generator where it is suspended; timeouts use the same mechanism with `TimeoutError`.
- `TaskLoop`: stage 1's `SelectorLoop`, unchanged, plus `run_until_complete`, which stops through
  a done callback that raises `StopError`, as in the chapter.
- `Queue`: `get()` (a coroutine), `put_nowait`, and `join()` / `task_done()` on a
  Future. A Future cannot be reset (footnote 13), so a new one is made when work
  arrives after the count reached zero.
- `GeneratorCrawler`: N worker tasks, `yield from` throughout; `crawl()` waits for
  `join()` and then cancels the workers, as the chapter's does.

Other slips of the chapter's sketch, fixed: `task_done()` is in a `finally`, so an error
in one fetch cannot leave `join()` waiting forever; an exception in a coroutine fails its
task instead of escaping into the loop; `cancel()` takes back the task's pending wake-up,
so the future it waited on can never resume a cancelled generator; every wait unwatches
its socket in a `finally`, so a cancelled or timed-out read leaves nothing registered;
and a getter woken by `put_nowait` but cancelled before it ran passes the item on.

The crawler keeps its books in the shared `Ledger`, retries connection errors and
timeouts `max_tries` times with backoff (a `sleep` coroutine on a timer), gives each try
a deadline of `total_timeout` seconds, and obeys robots.txt (one `Task` per origin,
shared by every worker that asks). Like stage 1 it speaks plain http only (an https URL
fails with a record naming `UnsupportedScheme`), ignores `per_host` and `host_delay`
(the only limit is `max_tasks`) and `connect_timeout` / `read_timeout` (only
`total_timeout`), and resolves DNS with a blocking call.

For watching: each worker's `task.gen` is its generator; `suspension(task)` walks its
`gi_yieldfrom` chain down to the Future it waits on, with each frame's line and
`f_lasti`. The loop shows its watched sockets and ready queue (stage 1's methods), the
queue its items, unfinished count, waiting getters and join future.
"""

from __future__ import annotations

import errno
import inspect
import os
import selectors
import socket
import time
import traceback
from collections import deque
from collections.abc import Callable, Generator
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from ..config import CrawlConfig
from ..ledger import REDIRECT_STATUSES, Answer, Ledger
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
from .stage_callbacks import SelectorLoop, StepHook
from .steps import SleepEnded

__all__ = [
    "FETCH_ERRORS",
    "Cancelled",
    "Coroutine",
    "Future",
    "GeneratorCrawler",
    "GeneratorWorker",
    "Link",
    "Queue",
    "StopError",
    "Task",
    "TaskLoop",
    "connect",
    "read",
    "read_all",
    "send_all",
    "show_coroutine_traceback",
    "sleep",
    "suspension",
]

T = TypeVar("T")
# A generator-based coroutine: yields Futures, is sent their results, returns T.
Coroutine = Generator["Future[Any]", Any, T]

FETCH_ERRORS = (OSError, HttpError)  # how a try fails; rawhttp.retryable() says if again


class Cancelled(BaseException):
    """Thrown into a task's generator by `cancel()`.

    A BaseException, as asyncio's CancelledError is, so the `except Exception` that
    turns a page's surprise into a failure record cannot swallow a cancellation.
    """


class StopError(BaseException):
    """Raised by the done callback of `run_until_complete`'s task to stop the loop."""


class InvalidState(Exception):
    """A future was resolved twice, or its result read before it was resolved."""


class Future(Generic[T]):
    """A result that is not there yet; `yield from future` waits for it."""

    def __init__(self, loop: TaskLoop, label: str = "future") -> None:
        self.loop = loop
        self.label = label  # what it stands for, shown by observers and step mode
        self._done = False
        self._result: T | None = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[[Future[T]], Any]] = []

    def done(self) -> bool:
        return self._done

    def result(self) -> T:
        if not self._done:
            raise InvalidState(f"{self!r} is not done")
        if self._exception is not None:
            raise self._exception
        return self._result  # type: ignore[return-value]

    def exception(self) -> BaseException | None:
        return self._exception

    def add_done_callback(self, fn: Callable[[Future[T]], Any]) -> None:
        if self._done:
            self.loop.call_soon(fn, self)
        else:
            self._callbacks.append(fn)

    def remove_done_callback(self, fn: Callable[[Future[T]], Any]) -> bool:
        try:
            self._callbacks.remove(fn)
        except ValueError:
            return False
        return True

    def set_result(self, result: T) -> None:
        self._resolve(result, None)

    def set_exception(self, exc: BaseException) -> None:
        self._resolve(None, exc)

    def _resolve(self, result: T | None, exc: BaseException | None) -> None:
        if self._done:
            raise InvalidState(f"{self!r} is already done")
        self._result, self._exception, self._done = result, exc, True
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            # From the loop, not from here: whoever resolves a future (a worker putting
            # a URL on the queue, say) finishes its own step before a waiter resumes.
            self.loop.call_soon(fn, self)

    def __iter__(self) -> Generator[Future[T], Any, T]:
        if not self._done:
            yield self  # tell the Task to resume me here, once I am resolved
        # Done already: resume at once, without a trip through the loop (footnote 9).
        return self.result()

    def __repr__(self) -> str:
        if not self._done:
            state = "pending"
        elif self._exception is not None:
            state = f"failed ({type(self._exception).__name__})"
        else:
            state = "done"
        return f"<{type(self).__name__} {self.label} {state}>"


class Task(Future[T]):
    """A coroutine wrapped in a Future: resolved by its generator's return value."""

    def __init__(self, gen: Coroutine[T], loop: TaskLoop, name: str = "task") -> None:
        super().__init__(loop, name)
        self.gen = gen  # kept, so gi_frame and gi_yieldfrom can be read (figure 5.3)
        self.name = name
        self.waiting_on: Future[Any] | None = None  # the future it is suspended on
        self.steps = 0
        self._cancelled = False
        self._running = False
        loop.call_soon(self.step)

    def cancelled(self) -> bool:
        return self._cancelled

    def step(self, value: Any = None, exc: BaseException | None = None) -> None:
        """Resume the generator with `value` (or raise `exc` in it), up to its next yield."""
        if self._done:
            return  # cancelled before its first step, say
        self.waiting_on = None
        self._running = True
        self.loop.current_task = self
        self.steps += 1
        try:
            yielded = self.gen.send(value) if exc is None else self.gen.throw(exc)
        except StopIteration as stop:
            self.set_result(stop.value)  # the task resolves itself
        except Cancelled as cancelled:
            self._cancelled = True
            self.set_exception(cancelled)
        except Exception as error:
            self.set_exception(error)
        else:
            if isinstance(yielded, Future):
                self.waiting_on = yielded
                yielded.add_done_callback(self._wakeup)
            else:
                # A bare `yield` or `yield 1`: a bug in the coroutine; tell it so.
                bad = TypeError(f"a task's coroutine yielded {yielded!r}, not a Future")
                self.loop.call_soon(self.step, None, bad)
        finally:
            self._running = False
            self.loop.current_task = None

    def _wakeup(self, future: Future[Any]) -> None:
        if future is not self.waiting_on:
            return  # a stale wake-up: the task was thrown into while this was queued
        if future._exception is not None:
            self.step(None, future._exception)
        else:
            self.step(future._result)

    def throw(self, exc: BaseException) -> None:
        """Raise `exc` in the generator where it is suspended (cancel, timeouts)."""
        if self._done:
            return
        if self._running:
            # A generator cannot be thrown into while it runs; do it on the next turn.
            self.loop.call_soon(self.step, None, exc)
            return
        waiting, self.waiting_on = self.waiting_on, None
        if waiting is not None:
            waiting.remove_done_callback(self._wakeup)
        self.step(None, exc)

    def cancel(self) -> bool:
        """The chapter's cancel: throw Cancelled into the generator. False if done."""
        if self._done:
            return False
        self.throw(Cancelled())
        return True

    def __repr__(self) -> str:
        if self._cancelled:
            return f"<Task {self.name} cancelled>"
        return super().__repr__()


class TaskLoop(SelectorLoop):
    """Stage 1's selector loop; all that coroutines add is a way to run one to its end."""

    def __init__(self, on_step: StepHook | None = None) -> None:
        super().__init__(on_step)
        self.current_task: Task[Any] | None = None  # the task whose step is running

    def run_until_complete(self, coro: Coroutine[T] | Future[T]) -> T:
        """Run the loop until `coro` (wrapped in a Task) or the future is done."""
        task = coro if isinstance(coro, Future) else Task(coro, self, "main")
        task.add_done_callback(_stop_callback)
        with suppress(StopError):  # raised by _stop_callback: the normal way out
            self.run_forever()
        return task.result()


def _stop_callback(future: Future[Any]) -> None:
    raise StopError


# ---- coroutines on sockets and timers ------------------------------------------------


def sleep(loop: TaskLoop, delay: float, backoff_of: str | None = None) -> Coroutine[None]:
    """Wait `delay` seconds: a Future that a timer resolves. `backoff_of` names the
    worker whose backoff this is, so step mode can say whose timer fired."""
    ended = SleepEnded(delay, backoff_of)
    future: Future[None] = Future(loop, ended.about)
    timer = loop.call_later(delay, future.set_result, None, step=ended)
    try:
        yield from future
    finally:
        timer.cancel()  # when thrown out early (cancelled), the timer must not fire


def writable(loop: TaskLoop, sock: socket.socket) -> Coroutine[None]:
    """Wait until `sock` can be written to."""
    future: Future[None] = Future(loop, f"socket {sock.fileno()} writable")

    def on_writable(key: selectors.SelectorKey, mask: int) -> None:
        # One-shot: the selector keeps reporting a writable socket until unwatched.
        loop.unwatch(sock)
        future.set_result(None)

    loop.watch(sock, selectors.EVENT_WRITE, on_writable)
    try:
        yield from future
    finally:
        loop.unwatch(sock)


def connect(loop: TaskLoop, sock: socket.socket, address: Any) -> Coroutine[None]:
    """Connect a non-blocking socket: wait on a Future the selector callback resolves."""
    error = sock.connect_ex(address)
    if error not in (0, errno.EINPROGRESS):
        raise OSError(error, os.strerror(error))
    yield from writable(loop, sock)
    # The chapter stops at "writable"; a refused connection is writable too.
    error = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if error:
        raise OSError(error, os.strerror(error))  # becomes ConnectionRefusedError, ...


def send_all(loop: TaskLoop, sock: socket.socket, data: bytes) -> Coroutine[None]:
    """Send all of `data`, waiting for the socket whenever its buffer is full."""
    unsent = memoryview(data)
    while unsent:
        try:
            sent = sock.send(unsent)
        except BlockingIOError:
            sent = 0
        unsent = unsent[sent:]
        if unsent:
            yield from writable(loop, sock)


def read(loop: TaskLoop, sock: socket.socket) -> Coroutine[bytes]:
    """Receive one chunk (b"" at EOF): the chapter's `read`."""
    future: Future[bytes] = Future(loop, f"socket {sock.fileno()} readable")

    def on_readable(key: selectors.SelectorKey, mask: int) -> None:
        try:
            chunk = sock.recv(CHUNK)
        except BlockingIOError:
            return  # a spurious wake-up; stay registered
        except OSError as exc:
            loop.unwatch(sock)
            future.set_exception(exc)
            return
        loop.unwatch(sock)
        future.set_result(chunk)

    loop.watch(sock, selectors.EVENT_READ, on_readable)
    try:
        chunk = yield from future
    finally:
        loop.unwatch(sock)
    return chunk


def read_all(loop: TaskLoop, sock: socket.socket, reader: ResponseReader) -> Coroutine[RawResponse]:
    """Read until the response is complete: the chapter's `read_all`, which stopped at
    EOF; this one also stops at Content-Length or the size limit."""
    while not reader.complete:
        chunk = yield from read(loop, sock)
        reader.feed(chunk)
    return reader.response()


# ---- watching a task: figure 5.3 -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class Link:
    """One generator on a task's yield-from chain."""

    function: str  # qualified name, e.g. "GeneratorCrawler.fetch"
    file: str  # base name of the source file
    line: int  # gi_frame.f_lineno: the line it is suspended on
    lasti: int  # gi_frame.f_lasti: the last bytecode offset it ran

    def __str__(self) -> str:
        return f"{self.function} {self.file}:{self.line}"


_MAX_DEPTH = 64  # deeper than any real chain; guards against a pathological one


def suspension(task: Task[Any]) -> tuple[tuple[Link, ...], Future[Any] | None]:
    """The task's generators from outermost to innermost, and the future it waits on.

    Follows `gi_yieldfrom` down from `task.gen`: the worker, `fetch`, `request`,
    `read_all`, `read`, and last `Future.__iter__`, whose `self` is the future. Cheap (a
    few attribute reads per level) and never raises, since a UI calls it every frame.
    """
    links: list[Link] = []
    gen: Any = task.gen
    try:
        for _ in range(_MAX_DEPTH):
            if not inspect.isgenerator(gen) or gen.gi_frame is None:
                break
            frame = gen.gi_frame
            code = gen.gi_code
            name = os.path.basename(code.co_filename)
            links.append(Link(code.co_qualname, name, frame.f_lineno or 0, frame.f_lasti))
            gen = gen.gi_yieldfrom
    except Exception:
        pass  # an observer must not crash on an exotic iterator
    return tuple(links), task.waiting_on


MOST_LOCALS = 12


def own_locals(task: Task[Any]) -> tuple[str, list[tuple[str, Any]]]:
    """The crawler's innermost method on the task's chain (`fetch`, `request`: where its
    url, response and links are; else its innermost generator but the Future's), and that
    frame's locals, `self` left out. Never raises: a UI calls it at each step."""
    gen: Any = task.gen
    own: Any = None
    crawler: Any = None
    try:
        for _ in range(_MAX_DEPTH):
            if not inspect.isgenerator(gen) or gen.gi_frame is None:
                break
            name = gen.gi_code.co_qualname
            if name != "Future.__iter__":
                own = gen
            if name.startswith("GeneratorCrawler."):
                crawler = gen
            gen = gen.gi_yieldfrom
        own = crawler or own
        if own is None:
            return "", []
        names = [(k, v) for k, v in own.gi_frame.f_locals.items() if k != "self"]
        return own.gi_code.co_qualname, names[:MOST_LOCALS]
    except Exception:
        return "", []


def waiting_callbacks(future: Future[Any]) -> tuple[str, ...]:
    """What runs when `future` is resolved: each done callback, with the task it wakes."""
    out = []
    for fn in list(future._callbacks)[:MOST_LOCALS]:
        owner = getattr(fn, "__self__", None)
        name = getattr(fn, "__qualname__", type(fn).__name__)
        out.append(f"{name} [{owner.name}]" if isinstance(owner, Task) else name)
    return tuple(out)


# ---- the queue -----------------------------------------------------------------------


class Queue(Generic[T]):
    """The chapter's queue: `get()` waits for an item; `join()` waits until every item
    put has been matched by a `task_done()`."""

    def __init__(self, loop: TaskLoop) -> None:
        self.loop = loop
        self.items: deque[T] = deque()
        self.getters: deque[Future[None]] = deque()  # one per coroutine waiting in get()
        self.unfinished = 0  # items put and not yet marked task_done()
        self.join_future: Future[None] = Future(loop, "queue join")

    def qsize(self) -> int:
        return len(self.items)

    def put_nowait(self, item: T) -> None:
        self.items.append(item)
        self.unfinished += 1
        if self.join_future.done():
            # A Future cannot go back to pending (footnote 13): work came after the
            # count reached zero, so a later join() needs a fresh one.
            self.join_future = Future(self.loop, "queue join")
        self._wake_getter()

    def _wake_getter(self) -> None:
        while self.getters:
            getter = self.getters.popleft()
            if not getter.done():
                getter.set_result(None)
                return

    def get(self) -> Coroutine[T]:
        while not self.items:
            getter: Future[None] = Future(self.loop, "queue get")
            self.getters.append(getter)
            try:
                yield from getter
            except BaseException:
                # Thrown out (cancelled) while waiting: leave the line. If a put had
                # woken us already, pass the wake-up on, or its item waits with idle
                # workers all asleep.
                with suppress(ValueError):
                    self.getters.remove(getter)
                if getter.done() and self.items:
                    self._wake_getter()
                raise
            # Woken, but another coroutine may have taken the item first: check again.
        return self.items.popleft()

    def task_done(self) -> None:
        if self.unfinished <= 0:
            raise ValueError("task_done() called more times than items were put")
        self.unfinished -= 1
        if self.unfinished == 0:
            self.join_future.set_result(None)

    def join(self) -> Coroutine[None]:
        if self.unfinished > 0:
            yield from self.join_future


# ---- the crawler ---------------------------------------------------------------------


@dataclass(slots=True, eq=False)
class GeneratorWorker:
    """One worker coroutine's plain state, as engine/observe/workers.py's Worker keeps it."""

    id: int
    state: WorkerState = WorkerState.WAITING
    url: str | None = None  # the URL it holds, from q.get() until its record is kept
    max_redirect: int = 0
    since: float = field(default_factory=time.monotonic)
    pages: int = 0
    task: Task[None] | None = None

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done()

    def enter(self, state: WorkerState) -> None:
        self.state = state
        self.since = time.monotonic()


def _expire(task: Task[Any], timeout: float) -> None:
    task.throw(TimeoutError(f"no complete answer within {timeout} s"))


class GeneratorCrawler:
    """The crawl as generator coroutines: `run()` blocks until every URL is done.

    Satisfies report.py's protocol (`config`, `ledger`, `elapsed`, `accounting()`), and
    calls `ledger.keep(record)` for each URL, so `record_listeners` see every record.
    """

    engine = "generators"

    def __init__(self, config: CrawlConfig, on_step: StepHook | None = None) -> None:
        self.config = config
        self.loop = TaskLoop(on_step)
        self.q: Queue[tuple[str, int]] = Queue(self.loop)
        self.ledger = Ledger(config)
        self.workers: dict[int, GeneratorWorker] = {}
        self.robots: dict[str, Task[RobotsRules]] = {}  # origin -> the task fetching it
        self.addresses: dict[tuple[str, int], Address] = {}
        self.main: Task[None] | None = None
        self.phase = Phase.IDLE
        self.t0: float | None = None
        self.t1: float | None = None
        self.started_at: float | None = None

    # -- the crawl --

    def start(self) -> Task[None]:
        """The main task, scheduled; `loop.step()` or `loop.run_once()` then drive it."""
        self.main = Task(self.crawl(), self.loop, "crawl")
        return self.main

    def run(self) -> GeneratorCrawler:
        """Crawl to the end, as the chapter does: loop.run_until_complete(crawl())."""
        try:
            self.loop.run_until_complete(self.start())
        except Cancelled:
            pass  # stop() cancelled the main task: a normal end
        finally:
            self.loop.close()
        return self

    def crawl(self) -> Coroutine[None]:
        """The main coroutine: start the workers, wait for the queue to be done, then
        cancel the workers (alive but suspended in get(), waiting for URLs none will put)."""
        self.t0 = time.monotonic()
        self.started_at = time.time()
        self.phase = Phase.RUNNING
        for pair in self.ledger.add_roots():
            self.q.put_nowait(pair)
        for i in range(self.config.max_tasks):
            worker = GeneratorWorker(i)
            worker.task = Task(self.work(worker), self.loop, f"worker-{i}")
            self.workers[i] = worker
        stopped = True
        try:
            yield from self.q.join()
            stopped = False
        finally:
            self.phase = Phase.STOPPING
            for worker in self.workers.values():
                if worker.task is not None:
                    worker.task.cancel()
            for robots in self.robots.values():
                robots.cancel()
            self.t1 = time.monotonic()
            self.phase = Phase.STOPPED if stopped else Phase.FINISHED

    def stop(self) -> None:
        """End the crawl now: the main task is cancelled, and its `finally` cancels the
        workers; a URL a worker held goes back on the queue."""
        if self.main is not None:
            self.main.cancel()

    def work(self, w: GeneratorWorker) -> Coroutine[None]:
        try:
            while True:
                w.enter(WorkerState.WAITING)
                url, max_redirect = yield from self.q.get()
                w.url, w.max_redirect = url, max_redirect
                try:
                    yield from self.fetch(w, url, max_redirect)
                except Exception as exc:
                    # A surprise in one fetch is that URL's failure, not the worker's end.
                    record = self.ledger.failure(url, describe_exception(exc), 1, w.id, time.time())
                    self._finish(w, record)
                finally:
                    if w.url is not None:
                        # Cancelled before its record was written: the URL goes back.
                        self.q.put_nowait((w.url, w.max_redirect))
                        w.url = None
                    self.q.task_done()
        finally:
            w.enter(WorkerState.STOPPED)

    def fetch(self, w: GeneratorWorker, url: str, max_redirect: int) -> Coroutine[None]:
        t_start = time.time()
        if not url.startswith("http:"):
            # Checked before robots.txt: that fetch would fail the same way.
            error = describe_exception(UnsupportedScheme())
            self._finish(w, self.ledger.failure(url, error, 1, w.id, t_start))
            return
        if self.config.obey_robots:
            rules = yield from self.robots_for(w, origin_of(url))
            if not rules.allows(url):
                self.ledger.drop(url, rules.refusal_of(url))
                for pair in self.ledger.refill():  # its place under max_pages goes on
                    self.q.put_nowait(pair)
                w.url = None
                return
        tries = 0
        while True:
            tries += 1
            try:
                response = yield from self.request(w, url, self.config.max_size)
                break
            except FETCH_ERRORS as exc:
                if tries >= self.config.max_tries or not retryable(exc):
                    record = self.ledger.failure(url, describe_exception(exc), tries, w.id, t_start)
                    self._finish(w, record)
                    return
            w.enter(WorkerState.BACKOFF)
            delay = min(self.config.backoff * 2 ** (tries - 1), self.config.max_backoff)
            yield from sleep(self.loop, delay, backoff_of=f"worker-{w.id}")
        answer: Answer = response.answer()
        if self.ledger.will_parse(answer):
            w.enter(WorkerState.PARSING)
        # Synchronous: nothing else runs between the answer and its record.
        record, new = self.ledger.answered(url, max_redirect, answer, tries, w.id, t_start)
        for pair in new:
            self.q.put_nowait(pair)
        self._finish(w, record)

    def request(
        self, w: GeneratorWorker | None, url: str, max_size: int, truncate: bool = False
    ) -> Coroutine[RawResponse]:
        """One try: connect, send the GET, read the whole response, within the deadline."""
        request = Request.get(url, self.config.user_agent)
        family, kind, proto, address = resolve(request.host, request.port, self.addresses)
        task = self.loop.current_task
        assert task is not None, "request() runs inside a task"
        sock = socket.socket(family, kind, proto)
        sock.setblocking(False)
        timeout = self.config.total_timeout
        # At the deadline, TimeoutError is thrown into the task wherever it waits below;
        # the finally clauses on the way out unwatch and close the socket.
        deadline = self.loop.call_later(timeout, _expire, task, timeout)
        try:
            if w is not None:
                w.enter(WorkerState.CONNECTING)
            yield from connect(self.loop, sock, address)
            yield from send_all(self.loop, sock, request.data)
            if w is not None:
                w.enter(WorkerState.HEADERS)
            reader = ResponseReader(max_size, truncate)
            while not reader.headers_done and not reader.complete:
                reader.feed((yield from read(self.loop, sock)))
            if w is not None:
                w.enter(WorkerState.BODY)
            return (yield from read_all(self.loop, sock, reader))
        finally:
            deadline.cancel()
            self.loop.unwatch(sock)
            sock.close()

    def robots_for(self, w: GeneratorWorker, origin: str) -> Coroutine[RobotsRules]:
        """The origin's robots.txt rules, fetched once by a task of their own: a Task is
        a Future, so every worker that asks just waits on it (`yield from task`)."""
        task = self.robots.get(origin)
        if task is None:
            task = Task(self.fetch_robots(origin), self.loop, f"robots {origin}")
            self.robots[origin] = task
        if not task.done():
            w.enter(WorkerState.ROBOTS)
        return (yield from task)

    def fetch_robots(self, origin: str) -> Coroutine[RobotsRules]:
        url = origin + "/robots.txt"
        for _ in range(ROBOTS_MAX_HOPS + 1):
            try:
                # One try, as politeness.py does: unreachable means "disallow all".
                response = yield from self.request(None, url, ROBOTS_MAX_BYTES, truncate=True)
            except (*FETCH_ERRORS, UnsupportedScheme) as exc:
                return robots_unreachable(exc)
            target = None
            if response.status in REDIRECT_STATUSES and response.location:
                target = normalize(response.location, url)
            if target is None:
                return robots_rules(response)
            url = target
        return robots_unreachable(TooManyRedirects(f"more than {ROBOTS_MAX_HOPS} redirects"))

    def _finish(self, w: GeneratorWorker, record: FetchRecord) -> None:
        # One synchronous step: the URL leaves the worker's hands and lands in the books.
        self.ledger.keep(record)
        w.url = None
        w.pages += 1

    # -- what an observer reads --

    @property
    def elapsed(self) -> float:
        if self.t0 is None:
            return 0.0
        return (self.t1 or time.monotonic()) - self.t0

    @property
    def unfinished(self) -> int:
        return self.q.unfinished

    def accounting(self) -> Accounting:
        held = sum(1 for w in self.workers.values() if w.url is not None)
        return self.ledger.accounting(self.q.qsize(), held)


# ---- a coroutine's traceback, for contrast with stage 1 ------------------------------


class _CarelessCrawler(GeneratorCrawler):
    """The chapter's mistake again: a page parser that raises."""

    caught: Exception | None = None

    def fetch(self, w: GeneratorWorker, url: str, max_redirect: int) -> Coroutine[None]:
        try:
            yield from self.request(w, url, self.config.max_size)
            self.parse_links()
        except Exception as exc:
            # Kept to show later: its traceback grows as it unwinds to work()'s handler.
            self.caught = exc
            raise

    def parse_links(self) -> None:
        raise Exception("parse error")


def show_coroutine_traceback(url: str) -> str:
    """Crawl `url` with a parser that raises, and return the traceback: unlike stage 1's,
    it runs through `work` and `fetch` to the parser, the coroutine's own stack, because
    a coroutine keeps its frames while it waits."""
    config = CrawlConfig(roots=(url,), max_tasks=1, max_tries=1, obey_robots=False)
    crawler = _CarelessCrawler(config)
    crawler.run()
    if crawler.caught is None:
        raise RuntimeError(f"the crawl of {url} ended without reaching the parser")
    return "".join(traceback.format_exception(crawler.caught))
