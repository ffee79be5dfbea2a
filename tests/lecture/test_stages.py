"""The chapter's three stages side by side, over real sockets against the demo site.

The lecture engines (callbacks, generators) block while they crawl, so the demo site
runs on an asyncio loop in a thread of its own; every crawl gets a fresh server, so the
flaky page's drop counter starts again for each engine.
"""

from __future__ import annotations

import asyncio
import io
import json
import re
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.lecture.rawhttp import ResponseReader, parse_content_type
from crawlscope.engine.lecture.stage_callbacks import CallbackCrawler, show_stack_ripping
from crawlscope.engine.lecture.stage_generators import (
    Cancelled,
    Future,
    GeneratorCrawler,
    Queue,
    Task,
    TaskLoop,
    show_coroutine_traceback,
    sleep,
    suspension,
)
from crawlscope.engine.lecture.stages import ENGINES, create, run_blocking
from crawlscope.engine.lecture.steps import (
    ClockJumped,
    FutureResolved,
    SleepEnded,
    SocketReady,
    Step,
    TimerFired,
)
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.records import FIELDS, JsonlWriter
from crawlscope.engine.redirects import ChainEnd
from crawlscope.engine.report import Crawl, write_report
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import expected, outcome

LECTURE = ("callbacks", "generators")
Serve = Callable[[DemoConfig], AbstractContextManager[DemoServer]]


@pytest.fixture(scope="module")
def serve() -> Iterator[Serve]:
    """Start demo servers on an asyncio loop running in a background thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="demo-site", daemon=True)
    thread.start()

    @contextmanager
    def start(config: DemoConfig) -> Iterator[DemoServer]:
        server = DemoServer(config)
        asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)
        try:
            yield server
        finally:
            asyncio.run_coroutine_threadsafe(server.close(), loop).result(10)

    yield start
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)
    loop.close()


def crawl(name: str, demo: DemoServer, **options: Any) -> Crawl:
    options.setdefault("backoff", 0.01)
    return run_blocking(name, CrawlConfig(roots=(demo.url,), **options))


def rel(url: str | None, demo: DemoServer) -> str | None:
    """A URL with the server's origin taken out, so crawls of two servers compare."""
    return None if url is None else url.replace(demo.url.rstrip("/"), "")


def outcomes(result: Crawl, demo: DemoServer) -> dict[str | None, str]:
    records = [*result.ledger.done.values(), *result.ledger.failed.values()]
    return {rel(record.url, demo): outcome(record) for record in records}


def report_lines(result: Crawl, demo: DemoServer) -> list[str]:
    out = io.StringIO()
    write_report(result, out)
    text = out.getvalue().replace(demo.url.rstrip("/"), "http://demo")
    # Timing and the date differ from run to run; everything else must not. So does the
    # asyncio engine's "Hosts" section (answer times), which the lecture's stages, with
    # no per-host figures, leave out.
    lines, in_hosts = [], False
    for line in text.splitlines():
        in_hosts = line.startswith("Hosts (") or (in_hosts and line.startswith("  "))
        if not in_hosts and not line.startswith(("Finished", "Date:")):
            lines.append(line)
    return lines


# ---- the three engines agree ----------------------------------------------------------


@pytest.mark.parametrize(
    "site",
    [DemoConfig(), DemoConfig(error_rate=0.1, latency=0.01)],
    ids=["default", "errors-and-latency"],
)
def test_the_three_engines_find_the_same_urls_with_the_same_outcomes(
    serve: Serve, site: DemoConfig
) -> None:
    found: dict[str, tuple[dict[str | None, str], set[str | None], dict[str | None, str]]] = {}
    for name in ENGINES:
        with serve(site) as demo:
            result = crawl(name, demo, max_tasks=10)
            books = result.ledger
            assert outcomes(result, demo) == expected(site), name
            assert result.accounting().balanced and result.accounting().held == 0
            found[name] = (
                outcomes(result, demo),
                {rel(url, demo) for url in books.seen_urls},
                {rel(url, demo): why for url, why in books.filtered.items()},
            )
            # The flaky page is retried until it answers (aiohttp may use up two drops
            # per try, so only the lecture engines' count of tries is certain).
            flaky = books.done[demo.url + "flaky"]
            assert flaky.status == 200
            if name in LECTURE:
                assert flaky.tries == site.flaky_failures + 1
                assert demo.requests["/flaky"] == site.flaky_failures + 1
    assert found["callbacks"] == found["generators"] == found["asyncio"]


def test_with_one_worker_reports_and_records_are_identical(serve: Serve, tmp_path: Path) -> None:
    # One worker makes the order of fetches the queue's order in every engine, so even
    # who found a link first (num_new_urls, depth, referrer) is the same.
    reports: dict[str, list[str]] = {}
    records: dict[str, dict[str, dict[str, Any]]] = {}
    chains: dict[str, list[tuple[Any, ...]]] = {}
    for name in ENGINES:
        with serve(DemoConfig()) as demo:
            out = tmp_path / f"{name}.jsonl"
            writer = JsonlWriter(out)
            result = run_blocking(
                name, CrawlConfig(roots=(demo.url,), max_tasks=1, backoff=0.01), [writer]
            )
            writer.close()
            reports[name] = report_lines(result, demo)
            lines = [json.loads(line) for line in out.read_text().splitlines()]
            assert all(tuple(line) == FIELDS for line in lines)
            assert len(lines) == len(result.ledger.done) + len(result.ledger.failed)
            for line in lines:
                for key in ("url", "next_url", "referrer"):
                    line[key] = rel(line[key], demo)
                for key in ("t_start", "t_end", "tries"):  # aiohttp may try /flaky less often
                    del line[key]
            records[name] = {line["url"]: line for line in lines}
            chains[name] = [
                (tuple(rel(u, demo) for u in c.urls), c.end, c.status, c.meets)
                for c in result.ledger.chains()
            ]
    assert reports["callbacks"] == reports["generators"] == reports["asyncio"]
    assert records["callbacks"] == records["generators"] == records["asyncio"]
    assert chains["callbacks"] == chains["generators"] == chains["asyncio"]
    by_start = {c[0][0]: c for c in chains["callbacks"]}
    for start in ("/foo", "/bar"):
        assert by_start[start] == ((start, "/baz"), ChainEnd.FETCHED, 200, True)
    assert by_start["/loop/a"][:2] == (("/loop/a", "/loop/b", "/loop/a"), ChainEnd.LOOP)
    limit = by_start["/chain/0"]
    assert limit[0] == tuple(f"/chain/{i}" for i in range(12)) and limit[1] is ChainEnd.LIMIT


def test_a_body_over_max_size_is_recorded_alike(serve: Serve) -> None:
    seen = {}
    for name in ENGINES:
        with serve(DemoConfig()) as demo:
            result = crawl(name, demo, max_tasks=1, max_size=630)
            seen[name] = report_lines(result, demo)
    assert seen["callbacks"] == seen["generators"] == seen["asyncio"]
    assert any("TooLarge: Content-Length" in line for line in seen["callbacks"])


# ---- failures ------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize("name", LECTURE)
def test_a_refused_root_fails_with_a_record_after_max_tries(name: str) -> None:
    root = f"http://127.0.0.1:{free_port()}/"
    config = CrawlConfig(roots=(root,), max_tries=3, backoff=0.01, obey_robots=False)
    result = run_blocking(name, config)
    record = result.ledger.failed[root]
    assert record.exception is not None
    assert record.exception.startswith("ConnectionRefusedError: ")
    assert record.tries == 3
    assert result.accounting().balanced


def test_an_unreachable_robots_txt_disallows_everything_in_every_engine() -> None:
    root = f"http://127.0.0.1:{free_port()}/"
    shape = re.compile(r"robots\.txt unreachable \(.+\): all disallowed \(RFC 9309\)")
    for name in ENGINES:
        result = run_blocking(name, CrawlConfig(roots=(root,), backoff=0.01))
        assert shape.fullmatch(result.ledger.filtered[root]), name
        assert not result.ledger.done and not result.ledger.failed


@pytest.mark.parametrize("name", LECTURE)
def test_a_server_that_never_answers_times_out_and_is_retried(name: str) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nobody ever reads
        root = f"http://127.0.0.1:{silent.getsockname()[1]}/"
        config = CrawlConfig(
            roots=(root,), max_tries=2, backoff=0.01, total_timeout=0.1, obey_robots=False
        )
        started = time.monotonic()
        result = run_blocking(name, config)
    assert time.monotonic() - started >= 0.2
    record = result.ledger.failed[root]
    assert record.exception == "TimeoutError: no complete answer within 0.1 s"
    assert record.tries == 2


@pytest.mark.parametrize("name", LECTURE)
def test_https_fails_with_a_record(name: str) -> None:
    root = "https://127.0.0.1:9/"
    result = run_blocking(name, CrawlConfig(roots=(root,)))
    record = result.ledger.failed[root]
    assert record.exception == "UnsupportedScheme: the lecture engines speak plain http"
    assert record.tries == 1


# ---- stage 1 ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", LECTURE)
def test_no_more_than_max_tasks_requests_are_in_flight(serve: Serve, name: str) -> None:
    with serve(DemoConfig(pages=30, latency=0.02)) as demo:
        result = crawl(name, demo, max_tasks=3)
        assert outcomes(result, demo) == expected(demo.config)
        host = demo.url.split("/")[2]
        assert demo.concurrency.peak[host] == 3


def test_stack_ripping_hides_the_code_that_started_the_fetch(serve: Serve) -> None:
    with serve(DemoConfig()) as demo:
        ripped = show_stack_ripping(demo.url)
        whole = show_coroutine_traceback(demo.url)
    frames = re.findall(r", in (\S+)\n", ripped)
    assert frames[-3:] == ["read_response", "page_done", "parse_links"]
    assert "run_forever" in frames and ripped.endswith("Exception: parse error\n")
    # Nothing of how the fetch began: those frames returned before the socket was ready.
    assert not {"start", "dispatch", "begin", "fetch"} & set(frames)
    # Stage 2, for contrast: the coroutine's own stack, from the worker down.
    assert re.findall(r", in (\S+)\n", whole) == ["work", "fetch", "parse_links"]


# ---- stepping and watching -------------------------------------------------------------


@pytest.mark.parametrize("engine", [CallbackCrawler, GeneratorCrawler])
def test_step_mode_runs_one_callback_at_a_time(
    serve: Serve, engine: type[CallbackCrawler] | type[GeneratorCrawler]
) -> None:
    told: list[Step] = []
    with serve(DemoConfig()) as demo:
        crawler = engine(CrawlConfig(roots=(demo.url,), max_tasks=4), on_step=told.append)
        crawler.start()
        steps = 0
        while crawler.phase not in (Phase.FINISHED, Phase.STOPPED):
            if crawler.loop.step(max_wait=5.0) is not None:
                steps += 1
                assert len(told) == steps  # one description per callback run
        crawler.loop.close()
        assert outcomes(crawler, demo) == expected(demo.config)
    assert any(isinstance(step, SocketReady) and step.readable for step in told)
    if engine is GeneratorCrawler:
        assert any(
            isinstance(step, FutureResolved)
            and (step.future, step.callback) == ("queue get", "Task._wakeup")
            and (step.about or "").startswith("worker-")
            for step in told
        )


def test_a_worker_can_be_watched_down_to_the_future_it_waits_on(serve: Serve) -> None:
    chains: set[tuple[str, ...]] = set()
    futures: set[str] = set()
    crawler: GeneratorCrawler

    def look(_: Step) -> None:
        for worker in crawler.workers.values():
            if worker.task is None or worker.task.done():
                continue
            links, future = suspension(worker.task)
            if future is not None:
                chains.add(tuple(link.function for link in links))
                futures.add(re.sub(r"\d+", "N", future.label))
                assert links[-1].function == "Future.__iter__" and links[-1].line > 0

    with serve(DemoConfig()) as demo:
        crawler = GeneratorCrawler(CrawlConfig(roots=(demo.url,), max_tasks=3), on_step=look)
        crawler.run()
    # Figure 5.3, live: the worker, its fetch, the sub-coroutine, and the Future.
    assert ("GeneratorCrawler.work", "Queue.get", "Future.__iter__") in chains
    read_chain = (
        "GeneratorCrawler.work",
        "GeneratorCrawler.fetch",
        "GeneratorCrawler.request",
        "read",
        "Future.__iter__",
    )
    assert read_chain in chains
    assert {"queue get", "socket N readable", "socket N writable"} <= futures
    assert crawler.q.unfinished == 0 and crawler.q.join_future.done()
    assert all(not w.alive for w in crawler.workers.values())


@pytest.mark.parametrize("engine", [CallbackCrawler, GeneratorCrawler])
def test_stop_mid_crawl_puts_held_urls_back(
    serve: Serve, engine: type[CallbackCrawler] | type[GeneratorCrawler]
) -> None:
    with serve(DemoConfig(latency=0.01)) as demo:
        crawler = engine(CrawlConfig(roots=(demo.url,), max_tasks=4))
        crawler.loop.on_step = lambda _: len(crawler.ledger.done) >= 10 and crawler.stop()
        crawler.run()
    accounting = crawler.accounting()
    assert crawler.phase is Phase.STOPPED
    assert accounting.balanced and accounting.held == 0 and accounting.queued > 0
    assert 10 <= accounting.done < len(expected(DemoConfig()))


def test_a_held_clock_keeps_timers_from_firing() -> None:
    loop = TaskLoop()
    fired: list[str] = []
    loop.call_later(0.05, fired.append, "timer")
    loop.hold_clock()
    time.sleep(0.08)
    assert loop.step(max_wait=0) is None and not fired  # held: no time has passed
    assert loop.step(max_wait=1.0) is not None and fired == ["timer"]  # runs while stepping
    loop.release_clock()
    loop.close()


def test_a_step_jumps_the_clock_to_a_timer_only_when_no_socket_is_watched() -> None:
    loop = TaskLoop()
    told: list[Step] = []
    loop.on_step = told.append
    fired: list[str] = []
    loop.hold_clock()
    loop.call_later(3600, fired.append, "backoff")
    quiet, _other_end = socket.socketpair()
    with quiet, _other_end:
        loop.watch(quiet, selectors.EVENT_READ, lambda key, mask: fired.append("read"))
        # A watched socket may be answered first: no jump, so no deadline fires early.
        assert loop.step(0, jump=True) is None and not fired
        loop.unwatch(quiet)
    before = loop.time()
    assert loop.step(0, jump=True) is not None and fired == ["backoff"]
    [jumped] = told
    assert isinstance(jumped, ClockJumped) and jumped.then == TimerFired("list.append")
    assert jumped.seconds == pytest.approx(3600)
    assert str(jumped) == "clock jumped 3600 s: timer fired: list.append"
    assert loop.time() - before == pytest.approx(3600)  # held, yet an hour on
    assert loop.step(0, jump=True) is None  # nothing left to jump to
    loop.close()


def test_the_loop_shows_what_it_watches(serve: Serve) -> None:
    seen: list[list[tuple[int, str, Step]]] = []
    with serve(DemoConfig()) as demo:
        crawler = create("callbacks", CrawlConfig(roots=(demo.url,), max_tasks=2))
        assert isinstance(crawler, CallbackCrawler)
        crawler.loop.on_step = lambda _: seen.append(crawler.loop.registered())
        crawler.run()
    watched = {(events, step.callback) for rows in seen for _, events, step in rows}
    assert {("write", "Fetcher.connected"), ("read", "Fetcher.read_response")} <= watched


# ---- stage 2's machinery ---------------------------------------------------------------


def test_a_done_future_resumes_its_waiter_at_once() -> None:
    loop = TaskLoop()
    done: Future[int] = Future(loop)
    done.set_result(42)

    def waiter() -> Any:
        return (yield from done)

    gen = waiter()
    with pytest.raises(StopIteration) as stop:
        gen.send(None)  # no yield: footnote 9's deficiency fixed
    assert stop.value.value == 42
    task = Task(waiter(), loop)
    assert loop.run_until_complete(task) == 42
    assert task.steps == 1
    loop.close()


def test_a_pending_future_is_yielded_to_the_task_and_its_result_sent_back() -> None:
    loop = TaskLoop()
    future: Future[str] = Future(loop, "answer")

    def waiter() -> Any:
        value = yield from future
        return value.upper()

    task = Task(waiter(), loop)
    loop.run_once(0)
    assert task.waiting_on is future and not task.done()
    loop.call_later(0.01, future.set_result, "resolved")
    assert loop.run_until_complete(task) == "RESOLVED"
    loop.close()


def test_an_exception_in_a_coroutine_fails_its_task() -> None:
    loop = TaskLoop()

    def broken() -> Any:
        yield from sleep(loop, 0)
        raise ValueError("inside")

    with pytest.raises(ValueError, match="inside"):
        loop.run_until_complete(broken())
    loop.close()


def test_cancel_throws_into_the_generator_and_the_task_ends_cancelled() -> None:
    loop = TaskLoop()
    q: Queue[int] = Queue(loop)
    log: list[str] = []

    def worker() -> Any:
        try:
            yield from q.get()
        except Cancelled:
            log.append("cancelled where it waited")
            raise
        finally:
            log.append("finally ran")

    task = Task(worker(), loop)
    loop.run_once(0)
    assert len(q.getters) == 1
    assert task.cancel()
    assert log == ["cancelled where it waited", "finally ran"]
    assert task.done() and task.cancelled()
    assert task.gen.gi_frame is None  # the generator is finished
    assert not q.getters  # it left the line
    with pytest.raises(Cancelled):
        task.result()
    assert not task.cancel()  # already done
    loop.close()


def test_a_woken_getter_that_is_cancelled_passes_the_item_on() -> None:
    loop = TaskLoop()
    q: Queue[str] = Queue(loop)
    got: list[str] = []

    def getter() -> Any:
        got.append((yield from q.get()))

    first, second = Task(getter(), loop, "first"), Task(getter(), loop, "second")
    loop.run_once(0)
    q.put_nowait("item")  # wakes the first getter...
    first.cancel()  # ...which is cancelled before it runs
    loop.run_until_complete(second)
    assert got == ["item"] and first.cancelled()
    loop.close()


def test_join_resolves_when_the_unfinished_count_reaches_zero() -> None:
    loop = TaskLoop()
    q: Queue[int] = Queue(loop)
    q.put_nowait(1)
    q.put_nowait(2)
    assert q.unfinished == 2 and not q.join_future.done()
    taken: list[int] = []

    def consumer() -> Any:
        while True:
            taken.append((yield from q.get()))
            q.task_done()

    def main() -> Any:
        workers = [Task(consumer(), loop, f"consumer-{i}") for i in range(2)]
        yield from q.join()
        assert q.unfinished == 0
        for worker in workers:
            worker.cancel()
        return [worker.cancelled() for worker in workers]

    assert loop.run_until_complete(main()) == [True, True]
    assert sorted(taken) == [1, 2] and q.join_future.done()
    # Work after the count reached zero needs a fresh join future (a Future cannot reset).
    q.put_nowait(3)
    assert not q.join_future.done()
    q.items.clear()
    q.task_done()
    assert q.join_future.done()
    with pytest.raises(ValueError):
        q.task_done()
    loop.close()


def test_sleep_waits_on_a_timer() -> None:
    loop = TaskLoop()
    started = time.monotonic()
    loop.run_until_complete(sleep(loop, 0.05))
    assert time.monotonic() - started >= 0.05
    assert not loop.timers or all(h.cancelled for _, _, h in loop.timers)
    loop.close()


def test_a_sleeps_timer_is_told_as_the_end_of_that_sleep() -> None:
    told: list[Step] = []
    loop = TaskLoop(told.append)
    loop.run_until_complete(sleep(loop, 0.01, backoff_of="worker-3"))
    assert SleepEnded(0.01, "worker-3") in told
    woke = [s.future for s in told if isinstance(s, FutureResolved)]
    assert "sleep 0.01s: backoff of worker-3" in woke
    loop.close()


def test_a_task_can_wait_on_another_task() -> None:
    loop = TaskLoop()

    def inner() -> Any:
        yield from sleep(loop, 0)
        return 7

    def outer() -> Any:
        return 6 * (yield from Task(inner(), loop, "inner"))

    assert loop.run_until_complete(outer()) == 42
    loop.close()


# ---- raw HTTP ---------------------------------------------------------------------------


def test_the_response_reader_parses_what_recv_gives_in_pieces() -> None:
    raw = (
        b'HTTP/1.1 302 Found\r\nLocation: /next\r\nContent-Type: Text/HTML; Charset="latin-1"'
        b"\r\nContent-Length: 5\r\n\r\nhello and more"
    )
    reader = ResponseReader(max_size=100)
    for i in range(len(raw)):
        reader.feed(raw[i : i + 1])
        if reader.complete:
            break
    response = reader.response()
    assert (response.status, response.location, response.body) == (302, "/next", b"hello")
    assert parse_content_type(response.headers["content-type"]) == ("text/html", "latin-1")
    assert parse_content_type(None) == (None, None)
    assert parse_content_type("foo; charset=utf-8") == ("foo", "utf-8")  # as the server said
