"""robots.txt, the per-host limit and delay, and the User-Agent, against real servers."""

from __future__ import annotations

import argparse
import asyncio
import io
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from aiohttp import web

from crawlscope.cli.headless import progress_line
from crawlscope.cli.options import add_crawl_options, crawl_config
from crawlscope.engine.config import ConfigError, CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.politeness import ROBOTS_MAX_BYTES, CrawlDelay, robots_text
from crawlscope.engine.report import write_report
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.sites.hostile_robots import CASES as ROBOTS_ORIGIN_CASES
from crawlscope.engine.sites.hostile_robots import (
    CRAWL_DELAY_PAGES,
    LATE_PAUSE,
    ORIGIN_REQUESTS,
    RobotsOrigin,
    build_origin_app,
)
from helpers import CLI, Handler, assert_accounted, html, path, run_crawl

Serve = Callable[[dict[str, Handler]], Awaitable[str]]

SITE = '<a href="/a">a</a> <a href="/private/b">b</a> <a href="/c">c</a>'


def robots(status: int, text: str = "") -> Handler:
    async def handler(_request: web.Request) -> web.Response:
        return web.Response(status=status, text=text, content_type="text/plain")

    return handler


def site(robots_handler: Handler | None) -> dict[str, Handler]:
    routes = {"/": html(SITE), "/a": html("a"), "/private/b": html("b"), "/c": html("c")}
    if robots_handler is not None:
        routes["/robots.txt"] = robots_handler
    return routes


async def test_robots_rules_are_obeyed(serve: Serve) -> None:
    root = await serve(site(robots(200, "User-agent: *\nDisallow: /private/\n")))
    crawler = await run_crawl(root)
    assert set(crawler.ledger.done) == {root, root + "a", root + "c"}
    assert crawler.ledger.filtered == {
        root + "private/b": "disallowed by robots.txt (Disallow: /private/)"
    }
    assert_accounted(crawler)


async def test_ignore_robots_fetches_everything(serve: Serve) -> None:
    root = await serve(site(robots(200, "User-agent: *\nDisallow: /\n")))
    crawler = await run_crawl(root, obey_robots=False)
    assert len(crawler.ledger.done) == 4


async def test_robots_4xx_allows_everything(serve: Serve) -> None:
    root = await serve(site(None))  # no robots.txt at all: 404
    crawler = await run_crawl(root)
    assert len(crawler.ledger.done) == 4
    assert crawler.ledger.filtered == {}


async def test_robots_5xx_disallows_everything(serve: Serve) -> None:
    root = await serve(site(robots(503)))
    crawler = await run_crawl(root)
    assert crawler.ledger.done == {}
    assert crawler.ledger.filtered == {root: "robots.txt answered 503: all disallowed (RFC 9309)"}


async def test_robots_is_fetched_once_per_host(serve: Serve) -> None:
    hits = 0

    async def counted(_request: web.Request) -> web.Response:
        nonlocal hits
        hits += 1
        await asyncio.sleep(0.05)  # so that many workers ask while the fetch is in flight
        return web.Response(text="User-agent: *\nAllow: /\n")

    links = "".join(f'<a href="/p{i}">p</a>' for i in range(30))
    routes = {"/": html(links), "/robots.txt": counted}
    routes.update({f"/p{i}": html("p") for i in range(30)})
    root = await serve(routes)
    crawler = await run_crawl(root, max_tasks=10)
    assert hits == 1
    assert len(crawler.ledger.done) == 31


async def test_crawl_delay_spaces_requests(serve: Serve) -> None:
    starts: list[float] = []

    async def page(_request: web.Request) -> web.Response:
        starts.append(time.monotonic())
        return web.Response(text="<p>x</p>", content_type="text/html")

    links = "".join(f'<a href="/p{i}">p</a>' for i in range(4))
    routes: dict[str, Handler] = {
        "/": html(links),
        "/robots.txt": robots(200, "User-agent: *\nCrawl-delay: 0.2\n"),
    }
    routes.update({f"/p{i}": page for i in range(4)})
    root = await serve(routes)
    await run_crawl(root, max_tasks=4)
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(gaps) == 3
    assert min(gaps) >= 0.15  # a lower bound only: the delay held


async def test_per_host_limit_holds(serve: Serve) -> None:
    in_flight = 0
    peak = 0

    async def page(_request: web.Request) -> web.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.02)
        in_flight -= 1
        return web.Response(text="<p>x</p>", content_type="text/html")

    links = "".join(f'<a href="/p{i}">p</a>' for i in range(40))
    routes: dict[str, Handler] = {"/": html(links)}
    routes.update({f"/p{i}": page for i in range(40)})
    root = await serve(routes)
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=20, per_host=3))
    throttled_seen = False

    async def watch() -> None:
        nonlocal throttled_seen
        while True:
            states = {w.state.value for w in crawler.workers.values()}
            throttled_seen |= "throttled" in states
            await asyncio.sleep(0.005)

    watcher = asyncio.create_task(watch())
    await crawler.crawl()
    watcher.cancel()
    assert len(crawler.ledger.done) == 41
    assert peak == 3
    assert throttled_seen


async def test_user_agent_is_sent(serve: Serve) -> None:
    agents: list[str] = []

    async def page(request: web.Request) -> web.Response:
        agents.append(request.headers.get("User-Agent", ""))
        return web.Response(text="<p>x</p>", content_type="text/html")

    root = await serve({"/": page})
    await run_crawl(root, user_agent="crawlscope/0.1 (+ops@example.com)")
    assert agents == ["crawlscope/0.1 (+ops@example.com)"]


async def test_oversize_bodies_are_cut_and_recorded(serve: Serve) -> None:
    async def big(_request: web.Request) -> web.Response:
        return web.Response(text="<p>" + "x" * 5000 + "</p>", content_type="text/html")

    root = await serve({"/": html('<a href="/big">big</a>'), "/big": big})
    crawler = await run_crawl(root, max_size=1000)
    record = crawler.ledger.done[root + "big"]
    assert record.status == 200
    assert record.exception is not None and record.exception.startswith("TooLarge")
    assert record.num_urls == 0


async def test_links_per_page_are_capped(serve: Serve) -> None:
    links = "".join(f'<a href="/p{i}">p</a>' for i in range(500))
    root = await serve({"/": html(links)})
    crawler = await run_crawl(root, max_links=50, max_pages=1)
    assert crawler.ledger.done[root].num_urls == 50
    assert len(crawler.ledger.seen_urls) == 51


async def peak_concurrency(per_host: int) -> tuple[int, Crawler]:
    async with DemoServer(DemoConfig(pages=80, latency=0.01, jitter=0.01)) as server:
        crawler = await run_crawl(server.url, max_tasks=30, per_host=per_host)
    return server.concurrency.peak[server.url.split("/")[2]], crawler


async def test_the_demo_site_sees_the_per_host_limit_hold() -> None:
    limited_peak, limited = await peak_concurrency(per_host=4)
    free_peak, free = await peak_concurrency(per_host=0)
    assert limited_peak == 4
    assert free_peak > 4  # the measurement can see more, when more happens
    assert {path(u) for u in limited.ledger.done} == {path(u) for u in free.ledger.done}
    assert limited.accounting().balanced


# --------------------------------------------------------------------------------------
# robots.txt read whole (issue 10, item 1), over servers that send it in pieces.


@asynccontextmanager
async def served(app: web.Application) -> AsyncIterator[str]:
    """`app` on 127.0.0.1 and a free port; yields its root URL."""
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}/"
    finally:
        await runner.cleanup()


def robots_case(name: str) -> RobotsOrigin:
    return next(case for case in ROBOTS_ORIGIN_CASES if case.name == name)


@pytest.mark.parametrize("name", ["long-robots", "late-robots"])
async def test_a_robots_txt_sent_in_pieces_is_obeyed_to_its_last_line(name: str) -> None:
    case = robots_case(name)
    app = build_origin_app(case)
    async with served(app) as root:
        crawler = await run_crawl(root)
    robots = b"".join(piece for _pause, piece in case.pieces)
    assert robots.endswith(b"Disallow: /secret\n")
    assert len(case.pieces) > 1 and all(pause > 0 for pause, _ in case.pieces[1:])
    assert app[ORIGIN_REQUESTS]["/secret"] == 0
    assert crawler.ledger.filtered == {
        root + "secret": "disallowed by robots.txt (Disallow: /secret)"
    }
    assert set(crawler.ledger.done) == {root, root + "open"}
    assert_accounted(crawler)


def test_the_long_case_is_about_198_kb_and_the_late_one_2_kb() -> None:
    long_size = sum(len(piece) for _, piece in robots_case("long-robots").pieces)
    late = robots_case("late-robots").pieces
    assert 190_000 < long_size < 205_000
    assert 1_900 < len(late[0][1]) < 2_200 and late[1][0] == LATE_PAUSE


def pieces(data: bytes, size: int = 64 * 1024) -> Handler:
    """A robots.txt handler sending `data` in `size` pieces, each after a pause."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/plain"})
        await response.prepare(request)
        try:
            for at in range(0, len(data), size):
                await asyncio.sleep(0.01)
                await response.write(data[at : at + size])
            await response.write_eof()
        except ConnectionError:
            pass  # the crawler read what RFC 9309 asks of it and hung up
        return response

    return handler


async def test_past_500_kib_rules_are_ignored_and_a_line_the_limit_cuts_is_dropped(
    serve: Serve,
) -> None:
    # The limit falls inside "Disallow: /private/": cut at that byte, the file would
    # end in "Disallow: /", which forbids everything.
    head = b"User-agent: *\nDisallow: /early\n"
    cut_line = b"Disallow: /private/\n"
    filler_line = b"# " + b"x" * 77 + b"\n"
    room = ROBOTS_MAX_BYTES - len(head) - len("Disallow: /")
    filler = filler_line * (room // len(filler_line)) + b"#" * (room % len(filler_line) - 1) + b"\n"
    body = head + filler + cut_line + b"Disallow: /late\n"
    assert body[:ROBOTS_MAX_BYTES].endswith(b"Disallow: /")
    links = '<a href="/early">e</a> <a href="/private/">p</a> <a href="/late">l</a>'
    routes = {"/": html(links), "/robots.txt": pieces(body)}
    routes.update({p: html(p) for p in ("/early", "/private/", "/late")})
    root = await serve(routes)
    crawler = await run_crawl(root)
    assert crawler.ledger.filtered == {
        root + "early": "disallowed by robots.txt (Disallow: /early)"
    }
    assert set(crawler.ledger.done) == {root, root + "private/", root + "late"}


def test_robots_text_keeps_whole_lines_and_all_of_a_file_within_the_limit() -> None:
    small = b"User-agent: *\nDisallow: /a"  # no newline at the end: still a whole file
    assert robots_text(small) == small.decode()
    exact = b"#" * (ROBOTS_MAX_BYTES - 1) + b"\n"
    assert robots_text(exact) == exact.decode()
    over = b"Disallow: /a\r\n" + b"#" * ROBOTS_MAX_BYTES
    assert robots_text(over) == "Disallow: /a\r\n"
    assert robots_text(b"#" * (ROBOTS_MAX_BYTES + 1)) == ""  # one line too long for the limit


# --------------------------------------------------------------------------------------
# Crawl-delay with a limit, and a word (issue 10, item 6).


async def test_a_crawl_delay_over_the_cap_is_capped_recorded_and_reported() -> None:
    case = robots_case("crawl-delay")
    async with served(build_origin_app(case)) as root:
        crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=2, max_crawl_delay=0.05))
        # Uncapped, the crawl would sleep a day per page: a bound turns that into a failure.
        await asyncio.wait_for(crawler.crawl(), 60)
    origin = root.rstrip("/")
    assert len(crawler.ledger.done) == CRAWL_DELAY_PAGES
    assert crawler.robots.crawl_delays == {origin: CrawlDelay(origin, 86400.0, 0.05)}
    out = io.StringIO()
    write_report(crawler, out)
    report = out.getvalue()
    assert (
        f"Crawl-delay (robots.txt):\n  {origin} asked for Crawl-delay 86400 s;"
        " 0.05 s used (--max-crawl-delay)\n"
    ) in report
    assert progress_line(crawler).endswith(f"  Crawl-delay: {origin} asked 86400 s, 0.05 s used")


# The capped delay, small so that the test is quick; the robots.txt asks for a day.
CAP = 0.4
# Request starts are stamped where the server sees them, a little after the crawler sent
# them, by however long the request took to arrive: two arrivals one cap apart may seem
# this much closer. (Under load they only come later; a gap never shrinks for that.)
ARRIVAL_SLACK = 0.1


def stamped_site(starts: list[float], pages: int = 4) -> dict[str, Handler]:
    """A robots.txt asking for Crawl-delay 86400 and `pages` pages behind "/", each
    request's arrival put in `starts` by the server (robots.txt's aside)."""
    links = "".join(f'<a href="/p{i}">p</a>' for i in range(pages))

    def page(body: str) -> Handler:
        async def handler(_request: web.Request) -> web.Response:
            starts.append(time.monotonic())
            return web.Response(text=body, content_type="text/html")

        return handler

    routes = {"/": page(links), "/robots.txt": robots(200, "User-agent: *\nCrawl-delay: 86400\n")}
    routes.update({f"/p{i}": page("<p>x</p>") for i in range(pages)})
    return routes


def assert_spaced_by_the_cap(starts: list[float]) -> None:
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert len(gaps) == 4
    # Not 0 (the delay ignored), and not a day (the crawl would not have ended).
    assert min(gaps) >= CAP - ARRIVAL_SLACK, f"requests {min(gaps):.3f} s apart"


@pytest.mark.slow
async def test_a_capped_crawl_delay_spaces_the_requests_the_server_sees(serve: Serve) -> None:
    starts: list[float] = []
    root = await serve(stamped_site(starts))
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=4, max_crawl_delay=CAP))
    # Uncapped, the second request would wait a day: a bound turns that into a failure.
    await asyncio.wait_for(crawler.crawl(), 60)
    origin = root.rstrip("/")
    assert crawler.robots.crawl_delays == {origin: CrawlDelay(origin, 86400.0, CAP)}
    assert len(crawler.ledger.done) == 5
    assert_spaced_by_the_cap(starts)


@pytest.mark.slow
async def test_max_crawl_delay_on_the_command_line_spaces_the_requests(serve: Serve) -> None:
    starts: list[float] = []
    root = await serve(stamped_site(starts))
    command = [*CLI, "crawl", root, "--max-crawl-delay", str(CAP), "--max-tasks", "4"]
    proc = await asyncio.create_subprocess_exec(
        *command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), 120)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, err.decode()
    assert f"{CAP:g} s used (--max-crawl-delay)" in out.decode()
    assert_spaced_by_the_cap(starts)


async def test_a_crawl_delay_under_the_cap_is_obeyed_and_reported(serve: Serve) -> None:
    routes = {"/": html("x"), "/robots.txt": robots(200, "User-agent: *\nCrawl-delay: 0.01\n")}
    root = await serve(routes)
    crawler = await run_crawl(root)
    origin = root.rstrip("/")
    assert crawler.robots.crawl_delays == {origin: CrawlDelay(origin, 0.01, 0.01)}
    assert not crawler.robots.crawl_delays[origin].capped
    out = io.StringIO()
    write_report(crawler, out)
    assert f"  {origin} asked for Crawl-delay 0.01 s; obeyed\n" in out.getvalue()
    assert progress_line(crawler).endswith(f"  Crawl-delay: {origin} 0.01 s")


async def test_no_crawl_delay_says_nothing(serve: Serve) -> None:
    root = await serve(site(robots(200, "User-agent: *\nDisallow: /private/\n")))
    crawler = await run_crawl(root)
    out = io.StringIO()
    write_report(crawler, out)
    assert "Crawl-delay" not in out.getvalue() and "Crawl-delay" not in progress_line(crawler)


def crawl_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_crawl_options(parser)
    return parser.parse_args([*argv])


def test_max_crawl_delay_option_defaults_to_30_s_and_reaches_the_config() -> None:
    roots = ["http://h/"]
    assert crawl_config(crawl_args(), roots).max_crawl_delay == 30.0
    assert crawl_config(crawl_args("--max-crawl-delay", "2.5"), roots).max_crawl_delay == 2.5


@pytest.mark.parametrize("bad", ["-1", "nan", "soon"])
def test_a_bad_max_crawl_delay_is_refused_in_one_line(bad: str) -> None:
    with pytest.raises(argparse.ArgumentError, match="max-crawl-delay"):
        crawl_args("--max-crawl-delay", bad)
    with pytest.raises(ConfigError, match="max_crawl_delay must be 0 or more"):
        CrawlConfig(roots=("http://h/",), max_crawl_delay=float("nan"))


def test_the_rule_that_refused_a_url_is_the_longest_that_matches() -> None:
    from crawlscope.engine.politeness import refusing_rule

    text = (
        "User-agent: otherbot\nDisallow: /\n\n"
        "User-agent: *\nDisallow: /private/\nAllow: /private/open\nDisallow: /*.pdf$\n"
        "Disallow: /private/deeper/\n"
    )
    base = "http://h/"
    assert refusing_rule(text, base + "private/x") == "Disallow: /private/"
    assert refusing_rule(text, base + "private/deeper/x") == "Disallow: /private/deeper/"
    assert refusing_rule(text, base + "private/open") is None  # an Allow, longer
    assert refusing_rule(text, base + "files/a.pdf") == "Disallow: /*.pdf$"
    assert refusing_rule(text, base + "files/a.pdf?x=1") is None  # "$": the end
    assert refusing_rule(text, base + "public") is None  # otherbot's group is not ours
