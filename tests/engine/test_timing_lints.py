"""The timing lints (engine/timing/loop_health.py) raised by real crawls of real servers:
LOOP_BLOCKED, STUCK and JOIN_STALLED, and loop health in the snapshot."""

from __future__ import annotations

import asyncio
import io
import linecache
import os
import sys
import time

import pytest
from aiohttp import web
from timing_support import DENSE_LINKS, Handler, Serve, dense_site, page

from crawlscope.engine import crawler as crawler_module
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.lints.lint import Lint, LintKind
from crawlscope.engine.observe.snapshot import Phase, Snapshot
from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.report import write_report
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import until


def where(line: str) -> tuple[int, str]:
    """For a lint's "Qualname file.py:N": the line the function's `def` is on, and the
    source text of line N, read from the module imported here."""
    qualname, place = line.split(" ")
    filename, number = place.rsplit(":", 1)
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None) or ""
        if os.path.basename(path) != filename:
            continue
        found: object = module
        for part in qualname.split("."):
            found = getattr(found, part, None)
        code = getattr(found, "__code__", None)
        if code is not None:
            return code.co_firstlineno, linecache.getline(path, int(number))
    raise AssertionError(f"no function {qualname} in a module {filename}")


async def crawl_dense(serve: Serve, workers: int, pages: int) -> tuple[Crawler, str]:
    """The dense site (a root linking /big, a page of DENSE_LINKS links) crawled to the
    end: the crawler, and the site's base URL."""
    base = (await serve(dense_site())).rstrip("/")
    config = CrawlConfig(roots=(base + "/",), max_tasks=workers, max_links=DENSE_LINKS,
                         max_pages=pages)  # fmt: skip
    crawler = Crawler(config)
    await crawler.crawl()
    return crawler, base


def of_kind(snap: Snapshot, kind: LintKind) -> list[Lint]:
    return [lint for lint in snap.warnings if lint.kind is kind]


@pytest.mark.slow
async def test_a_link_dense_page_raises_loop_blocked_naming_worker_and_url(
    serve: Serve,
) -> None:
    crawler, base = await crawl_dense(serve, workers=3, pages=8)
    snap = crawler.snapshot()
    big = base + "/big"
    blocked = [lint for lint in of_kind(snap, LintKind.LOOP_BLOCKED) if lint.url == big]
    assert blocked, snap.warnings
    lint = blocked[0]
    assert lint.worker == crawler.ledger.done[big].worker
    assert f"worker {lint.worker} held the loop" in lint.text and big in lint.text
    assert lint.host == base
    # Where it gave the loop back, "function file.py:line": the line of the await the
    # step ended at, not the line its function starts on.
    first_line, source = where(lint.line)
    assert not lint.line.endswith(f":{first_line}"), (lint.line, "the def line")
    assert "await " in source, (lint.line, source)
    # The same step is among the longest holds, put down to the page's parse.
    hold = next(h for h in snap.holds if h.url == big)
    assert hold.worker == lint.worker and hold.state == WorkerState.PARSING.value
    assert hold.seconds >= 0.05
    assert snap.warning_count == len(snap.warnings)


@pytest.mark.slow
async def test_a_long_step_is_put_down_to_the_page_it_parsed_not_the_request_after(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One worker, /big parsed on the loop as a page under the threads' threshold is: the
    # step that reads its last bytes parses it, then takes /p0 from the queue and sends
    # its request (body -> parsing -> waiting -> connecting -> headers) before it gives
    # the loop back.
    monkeypatch.setattr(crawler_module, "PARSE_IN_THREAD_BYTES", 1 << 40)
    crawler, base = await crawl_dense(serve, workers=1, pages=4)
    snap = crawler.snapshot()
    big = base + "/big"
    blocked = of_kind(snap, LintKind.LOOP_BLOCKED)
    assert blocked, snap.warnings
    for lint in blocked:  # the fast pages after it never held the loop
        assert lint.url == big and f"ms parsing {big}" in lint.text, lint.text
    longest = max(snap.holds, key=lambda h: h.seconds)
    assert (longest.url, longest.state) == (big, WorkerState.PARSING.value)


async def test_a_small_demo_site_crawl_raises_no_warning() -> None:
    async with DemoServer(DemoConfig(pages=30)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=4))
        await crawler.crawl()
    snap = crawler.snapshot()
    assert crawler.phase is Phase.FINISHED
    assert snap.warnings == () and snap.warning_count == 0


@pytest.mark.slow
async def test_a_worker_far_past_its_states_usual_time_raises_stuck(serve: Serve) -> None:
    release = asyncio.Event()

    async def slow(_request: web.Request) -> web.Response:
        await release.wait()
        return web.Response(body=b"late", content_type="text/html")

    links = b"".join(b"<a href=/f%d>f</a>" % i for i in range(20)) + b"<a href=/slow>s</a>"
    routes = {"/": page(links), "/f{n}": page(b"f"), "/slow": slow}
    base = (await serve(routes)).rstrip("/")
    crawler = Crawler(CrawlConfig(roots=(base + "/",), max_tasks=2))
    crawler.health.stuck_min = 0.5  # ten times a fast page's wait, and half a second
    crawl = asyncio.create_task(crawler.crawl())
    try:
        await until(
            lambda: any(
                lint.url == base + "/slow" for lint in of_kind(crawler.snapshot(), LintKind.STUCK)
            ),
            "a STUCK warning",
        )
    finally:
        release.set()
    await crawl
    lint = of_kind(crawler.snapshot(), LintKind.STUCK)[0]
    assert lint.worker == crawler.ledger.done[base + "/slow"].worker
    assert f"worker {lint.worker} headers for" in lint.text
    assert "usual" in lint.text


def record_checks(crawler: Crawler, times: list[float]) -> None:
    """Add to `times` the time of each loop-health check of `crawler` (one a second)."""
    crawler.health.check_listeners.append(lambda _: times.append(time.monotonic()))


def held_for_checks(checks: list[float], *, after: float, count: int = 1) -> Handler:
    """A page answered once `count` checks came at least `after` seconds into its request:
    a worker in one state for as long as the test needs, whatever the machine's load."""

    async def handler(_request: web.Request) -> web.Response:
        started = time.monotonic()
        what = f"{count} check(s) {after} s into the request"
        await until(lambda: sum(t >= started + after for t in checks) >= count, what)
        return web.Response(body=b"held", content_type="text/html")

    return handler


async def crawl_held(
    serve: Serve,
    routes: dict[str, Handler],
    *,
    after: float,
    count: int = 1,
    max_tasks: int,
    **health: float,
) -> Crawler:
    """A crawl of `routes` plus /slow, held until `count` checks came `after` seconds into
    it (held_for_checks), with the loop-health settings `health`; /slow fetched in the end."""
    checks: list[float] = []
    routes = {**routes, "/slow": held_for_checks(checks, after=after, count=count)}
    base = (await serve(routes)).rstrip("/")
    crawler = Crawler(CrawlConfig(roots=(base + "/",), max_tasks=max_tasks))
    record_checks(crawler, checks)
    for name, value in health.items():
        setattr(crawler.health, name, value)
    await crawler.crawl()
    assert base + "/slow" in crawler.ledger.done
    return crawler


def steady(body: bytes, seconds: float) -> Handler:
    async def handler(_request: web.Request) -> web.Response:
        await asyncio.sleep(seconds)
        return web.Response(body=body, content_type="text/html")

    return handler


@pytest.mark.slow
async def test_a_fetch_slower_than_usual_but_not_ten_times_is_not_stuck(serve: Serve) -> None:
    # Each page takes 0.3 s; /slow is held until a check saw it 0.9 s in: three times the
    # usual, past `stuck_min`, but short of the tenfold that makes a worker stuck.
    links = b"".join(b"<a href=/f%d>f</a>" % i for i in range(4)) + b"<a href=/slow>s</a>"
    routes = {"/": steady(links, 0.3), "/f{n}": steady(b"f", 0.3)}
    crawler = await crawl_held(serve, routes, after=0.9, max_tasks=1, stuck_min=0.5)
    assert of_kind(crawler.snapshot(), LintKind.STUCK) == []


@pytest.mark.slow
async def test_workers_waiting_out_a_host_delay_are_not_stuck(serve: Serve) -> None:
    # The second and third pages wait 1.5 s and 3 s at the host's gate, past `stuck_min`:
    # a wait the config asked for, which the host lints watch, not a stuck worker.
    routes = {"/": page(b"<a href=/a>a</a><a href=/b>b</a>"), "/a": page(b"a"), "/b": page(b"b")}
    base = (await serve(routes)).rstrip("/")
    crawler = Crawler(CrawlConfig(roots=(base + "/",), max_tasks=2, host_delay=1.5))
    checks: list[float] = []
    record_checks(crawler, checks)
    crawler.health.stuck_min = 0.3
    throttled: list[float] = []
    crawler.health.check_listeners.append(
        lambda _: throttled.extend(
            time.monotonic() - w.since
            for w in crawler.workers.values()
            if w.state is WorkerState.THROTTLED
        )
    )
    await crawler.crawl()
    assert len(crawler.ledger.done) == 3
    assert checks and max(throttled, default=0.0) >= 0.3, throttled  # a check saw the wait
    assert of_kind(crawler.snapshot(), LintKind.STUCK) == []


@pytest.mark.slow
async def test_a_still_counter_while_a_worker_fetches_is_no_stall(serve: Serve) -> None:
    # One worker fetches /slow for two checks while the other waits on the queue: the
    # counter is still, but join() is not stalled.
    routes = {"/": page(b'<a href="/slow">s</a>')}
    crawler = await crawl_held(serve, routes, after=0, count=2, max_tasks=2, stall_after=0.5)
    assert of_kind(crawler.snapshot(), LintKind.JOIN_STALLED) == []


@pytest.mark.slow
async def test_the_counter_still_while_every_worker_waits_raises_join_stalled(serve: Serve) -> None:
    routes = {"/": page(b'<a href="/a">a</a>'), "/a": page(b"a")}
    base = (await serve(routes)).rstrip("/")
    crawler = Crawler(CrawlConfig(roots=(base + "/",), max_tasks=2))
    crawler.health.stall_after = 0.5
    # Something other than a worker takes the root and never says it is done: the
    # unfinished counter stays at 1 and join() would wait for ever.
    taken = asyncio.ensure_future(crawler.q.get())
    await asyncio.sleep(0)
    crawl = asyncio.create_task(crawler.crawl())
    await until(lambda: bool(of_kind(crawler.snapshot(), LintKind.JOIN_STALLED)), "JOIN_STALLED")
    lint = of_kind(crawler.snapshot(), LintKind.JOIN_STALLED)[0]
    assert lint.text.startswith("1 unfinished for")
    assert "all 2 workers wait on the queue" in lint.text
    crawler.q.task_done(await taken)
    await crawl
    assert crawler.phase is Phase.FINISHED
    assert len(of_kind(crawler.snapshot(), LintKind.JOIN_STALLED)) == 1  # told once


async def test_the_snapshot_reads_loop_lag_over_the_last_minute() -> None:
    async with DemoServer(DemoConfig(pages=5)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=2))
        crawler.pause_all()  # the probe runs on while the crawl waits
        crawl = asyncio.create_task(crawler.crawl())

        def blocked_once() -> None:
            time.sleep(0.5)  # holds the loop over a probe due time: it runs 0.25 s late or more

        asyncio.get_running_loop().call_later(0.3, blocked_once)
        await until(lambda: crawler.snapshot().loop_lag_p99 >= 0.2, "a late probe")
        crawler.stop()
        await crawl
    snap = crawler.snapshot()
    assert 0 <= snap.loop_lag_p50 <= snap.loop_lag_p99


@pytest.mark.slow
async def test_the_crawl_commands_report_has_a_warnings_section(serve: Serve) -> None:
    base = (await serve(dense_site())).rstrip("/")
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crawlscope", "crawl", base + "/", "--max-tasks", "3",
        "--max-links", str(DENSE_LINKS), "--max-pages", "8",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    report = out.decode()
    assert "Warnings (" in report, report[-3000:]
    section = report[report.index("Warnings (") :]
    assert "loop-blocked: worker" in section and base + "/big" in section
    assert section.index("Warnings (") < section.index("Finished ")


async def test_a_report_without_warnings_has_no_warnings_section() -> None:
    async with DemoServer(DemoConfig(pages=10)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=2))
        await crawler.crawl()
    out = io.StringIO()
    write_report(crawler, out)
    assert "Warnings" not in out.getvalue()
    assert "Accounting:" in out.getvalue()
