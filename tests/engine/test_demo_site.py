"""The demo site, exercised over real sockets with an aiohttp client."""

from __future__ import annotations

import asyncio
import html
import re
import time
from collections import deque
from collections.abc import AsyncIterator
from urllib.parse import urldefrag, urljoin, urlsplit

import aiohttp
import pytest

from crawlscope.engine.sites.demo import (
    REQUESTS,
    DemoConfig,
    DemoServer,
    build_demo_app,
    expected_outcomes,
    serve_forever,
)

HREF = re.compile(r'href="([^"]*)"')
TITLE = re.compile(r"<title>([^<]*)</title>")
SPECIAL_LINKS = {
    "/353",
    "/foo",
    "/bar",
    "/loop/a",
    "/chain/0",
    "/missing",
    "/broken",
    "/flaky",
    "/files/diagram.png",
    "/files/chapter.pdf",
}


@pytest.fixture
async def server() -> AsyncIterator[DemoServer]:
    async with DemoServer() as running:
        yield running


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    # A timeout, so a server that forgets to answer fails the test instead of hanging it.
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as client:
        yield client


async def fetch(session: aiohttp.ClientSession, url: str) -> tuple[int, dict[str, str], bytes]:
    async with session.get(url, allow_redirects=False) as resp:
        return resp.status, dict(resp.headers), await resp.read()


def links_of(page_url: str, body: str) -> list[str]:
    """Absolute, fragment-free URLs of every href, resolved as a browser would."""
    return [urldefrag(urljoin(page_url, html.unescape(h))).url for h in HREF.findall(body)]


def page_numbers(server: DemoServer, page_url: str, body: str) -> set[int]:
    prefix = server.url + "page/"
    return {int(u.removeprefix(prefix)) for u in links_of(page_url, body) if u.startswith(prefix)}


async def crawl_by_hand(
    session: aiohttp.ClientSession, root: str, max_redirect: int, max_tries: int = 4
) -> dict[str, str]:
    """An independent, sequential crawl with the rules expected_outcomes describes."""
    host = urlsplit(root).netloc
    outcomes: dict[str, str] = {}
    seen = {root}
    queue: deque[tuple[str, int]] = deque([(root, max_redirect)])
    while queue:
        url, budget = queue.popleft()
        path = urlsplit(url).path
        for _ in range(max_tries):
            try:
                async with session.get(url, allow_redirects=False) as resp:
                    status, ctype = resp.status, resp.content_type
                    location = resp.headers.get("Location")
                    body = await resp.text() if status == 200 and ctype == "text/html" else ""
                break
            except aiohttp.ClientConnectionError:
                continue
        else:
            outcomes[path] = "error"
            continue

        if 300 <= status < 400:
            outcomes[path] = "redirect"
            assert location is not None
            target = urljoin(url, location)
            if target not in seen and budget > 0:
                seen.add(target)
                queue.append((target, budget - 1))
            continue
        if status != 200:
            outcomes[path] = str(status)
            continue
        outcomes[path] = "html" if ctype == "text/html" else "other"
        for link in links_of(url, body):
            parts = urlsplit(link)
            if parts.scheme in ("http", "https") and parts.netloc == host and link not in seen:
                seen.add(link)
                queue.append((link, max_redirect))
    return outcomes


# --- routes ------------------------------------------------------------------------------


async def test_index_links_every_special_route(
    server: DemoServer, session: aiohttp.ClientSession
) -> None:
    status, headers, body = await fetch(session, server.url)
    assert status == 200
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    text = body.decode()
    assert text.startswith("<!DOCTYPE html>")
    assert TITLE.findall(text) == ["crawlscope demo site"]
    links = links_of(server.url, text)
    paths = {urlsplit(u).path for u in links if u.startswith(server.url)}
    assert paths == SPECIAL_LINKS | {"/page/0"}
    assert "http://example.invalid/" in links
    assert any(u.startswith("mailto:") for u in links)


@pytest.mark.parametrize(
    ("path", "status", "location"),
    [
        ("/353", 301, "/353/"),
        ("/foo", 302, "/baz"),
        ("/bar", 302, "/baz"),
        ("/loop/a", 302, "/loop/b"),
        ("/loop/b", 302, "/loop/a"),
        ("/chain/0", 302, "/chain/1"),
        ("/chain/7", 302, "/chain/8"),
        ("/chain/11", 302, "/chain/12"),
    ],
)
async def test_redirects(
    server: DemoServer, session: aiohttp.ClientSession, path: str, status: int, location: str
) -> None:
    got_status, headers, _ = await fetch(session, server.url.rstrip("/") + path)
    assert (got_status, headers["Location"]) == (status, location)


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/353/", 200),
        ("/baz", 200),
        ("/chain/12", 200),
        ("/private/secret", 200),
        ("/missing", 404),
        ("/broken", 500),
        ("/chain/13", 404),
        ("/page/60", 404),
        ("/page/-1", 404),
        ("/page/abc", 404),
        ("/page/007", 404),
        ("/nowhere/at/all", 404),
    ],
)
async def test_html_statuses(
    server: DemoServer, session: aiohttp.ClientSession, path: str, status: int
) -> None:
    got_status, headers, body = await fetch(session, server.url.rstrip("/") + path)
    assert got_status == status
    assert headers["Content-Type"] == "text/html; charset=utf-8"
    assert body.startswith(b"<!DOCTYPE html>") and body.rstrip().endswith(b"</html>")


async def test_files_and_robots(server: DemoServer, session: aiohttp.ClientSession) -> None:
    status, headers, png = await fetch(session, server.url + "files/diagram.png")
    assert (status, headers["Content-Type"]) == (200, "image/png")
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 8

    status, headers, pdf = await fetch(session, server.url + "files/chapter.pdf")
    assert (status, headers["Content-Type"]) == (200, "application/pdf")
    assert pdf.startswith(b"%PDF-1.4")

    status, headers, robots = await fetch(session, server.url + "robots.txt")
    assert status == 200
    assert headers["Content-Type"].startswith("text/plain")
    assert robots == b"User-agent: *\nDisallow: /private/\n"


async def test_page_links(server: DemoServer, session: aiohttp.ClientSession) -> None:
    spellings: set[str] = set()
    for n in range(8):
        url = f"{server.url}page/{n}"
        status, headers, body = await fetch(session, url)
        assert status == 200
        assert headers["Content-Type"] == "text/html; charset=utf-8"
        text = body.decode()
        assert TITLE.findall(text) == [f"Page {n}"]
        hrefs = [html.unescape(h) for h in HREF.findall(text)]
        numbers = page_numbers(server, url, text)
        assert n + 1 in numbers
        assert len(numbers - {n}) == DemoConfig().links_per_page
        assert any(re.fullmatch(r"/page/\d+#section", h) for h in hrefs)
        assert "/" in hrefs
        assert "http://example.invalid/" in hrefs
        assert any(h.startswith("mailto:") for h in hrefs)
        assert ("/private/secret" in hrefs) == (n == 0)
        for h in hrefs:
            if re.fullmatch(r"\d+", h):
                spellings.add("relative")
            elif h.startswith("../page/"):
                spellings.add("dot-relative")
            elif h.startswith(f"http://127.0.0.1:{server.port}/page/"):
                spellings.add("absolute")
            elif re.fullmatch(r"/page/\d+", h):
                spellings.add("root-relative")
    assert spellings == {"relative", "dot-relative", "absolute", "root-relative"}


# --- the link graph ----------------------------------------------------------------------


async def graph_of(
    server: DemoServer, session: aiohttp.ClientSession, pages: range
) -> dict[int, set[int]]:
    graph: dict[int, set[int]] = {}
    for n in pages:
        url = f"{server.url}page/{n}"
        _, _, body = await fetch(session, url)
        graph[n] = page_numbers(server, url, body.decode())
    return graph


async def test_link_graph_depends_on_the_seed_only(session: aiohttp.ClientSession) -> None:
    config = DemoConfig(pages=40, seed=7)
    async with DemoServer(config) as first, DemoServer(config) as second:
        assert first.port != second.port
        one = await graph_of(first, session, range(40))
        two = await graph_of(second, session, range(40))
    async with DemoServer(DemoConfig(pages=40, seed=8)) as other:
        three = await graph_of(other, session, range(40))
    assert one == two
    assert one != three


@pytest.mark.parametrize("config", [DemoConfig(), DemoConfig(pages=80, error_rate=0.3, seed=3)])
async def test_every_page_is_reachable_from_page_0(
    session: aiohttp.ClientSession, config: DemoConfig
) -> None:
    async with DemoServer(config) as server:
        reached = {0}
        queue = deque([0])
        while queue:
            n = queue.popleft()
            url = f"{server.url}page/{n}"
            status, _, body = await fetch(session, url)
            if status != 200:
                continue  # an error page's links are never seen by a crawler
            for k in page_numbers(server, url, body.decode()) - reached:
                reached.add(k)
                queue.append(k)
    assert reached == set(range(config.pages))


async def test_error_rate_picks_pages_but_never_page_0(session: aiohttp.ClientSession) -> None:
    async with DemoServer(DemoConfig(pages=100, error_rate=0.2)) as server:
        statuses = [(await fetch(session, f"{server.url}page/{n}"))[0] for n in range(100)]
    assert statuses[0] == 200
    assert statuses.count(500) == 20
    assert statuses.count(200) == 80


# --- flaky, latency, counting ------------------------------------------------------------


async def raw_get(port: int, path: str) -> bytes:
    """One request on its own connection, read to the end: b"" means dropped unanswered."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n\r\n".encode())
        await writer.drain()
        return await asyncio.wait_for(reader.read(), timeout=5)
    finally:
        writer.close()


@pytest.mark.parametrize("failures", [0, 2, 3])
async def test_flaky_drops_exactly_n_connections(failures: int) -> None:
    async with DemoServer(DemoConfig(flaky_failures=failures)) as server:
        for _ in range(failures):
            assert await raw_get(server.port, "/flaky") == b""
        for _ in range(2):
            assert (await raw_get(server.port, "/flaky")).startswith(b"HTTP/1.1 200 OK\r\n")
        assert server.requests["/flaky"] == failures + 2


async def test_flaky_raises_a_connection_error_in_aiohttp(session: aiohttp.ClientSession) -> None:
    # aiohttp repeats a GET once by itself when the server hangs up, so one call may use
    # up two of the failures; the server's counter is the ground truth.
    async with DemoServer(DemoConfig(flaky_failures=3)) as server:
        errors = 0
        while True:
            try:
                status, _, _ = await fetch(session, server.url + "flaky")
            except aiohttp.ClientConnectionError:
                errors += 1
                continue
            break
        assert status == 200
        assert errors >= 1
        assert server.requests["/flaky"] == 4


async def test_latency_delays_each_response(session: aiohttp.ClientSession) -> None:
    async with DemoServer(DemoConfig(latency=0.05, jitter=0.01)) as server:
        for path in ("", "page/1", "foo", "missing"):
            started = time.perf_counter()
            await fetch(session, server.url + path)
            assert time.perf_counter() - started >= 0.05


async def test_requests_are_counted_per_path(
    server: DemoServer, session: aiohttp.ClientSession
) -> None:
    for path in ("page/3", "page/3", "foo", "no/such/page"):
        await fetch(session, server.url + path)
    assert server.requests == {"/page/3": 2, "/foo": 1, "/no/such/page": 1}
    assert server.app[REQUESTS] is server.requests


async def test_many_concurrent_requests(server: DemoServer, session: aiohttp.ClientSession) -> None:
    results = await asyncio.gather(
        *(fetch(session, f"{server.url}page/{n % 60}") for n in range(300))
    )
    assert {status for status, _, _ in results} == {200}
    assert sum(server.requests.values()) == 300


# --- expected_outcomes -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "max_redirect"),
    [
        (DemoConfig(), 10),
        (DemoConfig(pages=30, links_per_page=3, error_rate=0.25, seed=5), 3),
        (DemoConfig(pages=10, seed=2), 12),
        (DemoConfig(pages=10, flaky_failures=9), 0),
    ],
)
async def test_expected_outcomes_match_a_real_crawl(
    session: aiohttp.ClientSession, config: DemoConfig, max_redirect: int
) -> None:
    async with DemoServer(config) as server:
        crawled = await crawl_by_hand(session, server.url, max_redirect)
    assert crawled == expected_outcomes(config, max_redirect)


def test_expected_outcomes_for_the_default_site() -> None:
    outcomes = expected_outcomes(DemoConfig())
    assert all(path.startswith("/") for path in outcomes)
    assert {f"/page/{n}" for n in range(60)} <= outcomes.keys()
    assert outcomes["/"] == "html"
    assert outcomes["/353"] == outcomes["/foo"] == outcomes["/bar"] == "redirect"
    assert outcomes["/353/"] == outcomes["/baz"] == "html"
    assert outcomes["/loop/a"] == outcomes["/loop/b"] == "redirect"
    assert [outcomes[f"/chain/{i}"] for i in range(11)] == ["redirect"] * 11
    assert "/chain/11" not in outcomes and "/chain/12" not in outcomes
    assert (outcomes["/missing"], outcomes["/broken"]) == ("404", "500")
    assert outcomes["/flaky"] == "html"
    assert outcomes["/files/diagram.png"] == outcomes["/files/chapter.pdf"] == "other"
    assert outcomes["/private/secret"] == "html"
    assert "/robots.txt" not in outcomes


@pytest.mark.parametrize(("budget", "last"), [(0, 0), (1, 1), (10, 10), (11, 11), (12, 12)])
def test_redirect_budget_bounds_the_chain(budget: int, last: int) -> None:
    outcomes = expected_outcomes(DemoConfig(pages=3), max_redirect=budget)
    fetched = sorted(int(p.removeprefix("/chain/")) for p in outcomes if p.startswith("/chain/"))
    assert fetched == list(range(last + 1))
    assert outcomes.get("/chain/12") == ("html" if budget >= 12 else None)
    # With no budget at all, no redirect is followed anywhere.
    assert ("/353/" in outcomes) == (budget > 0)


def test_flaky_outcome_depends_on_tries() -> None:
    assert expected_outcomes(DemoConfig(flaky_failures=3), max_tries=4)["/flaky"] == "html"
    assert expected_outcomes(DemoConfig(flaky_failures=4), max_tries=4)["/flaky"] == "error"


# --- configuration and lifecycle ---------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"pages": 0},
        {"links_per_page": -1},
        {"latency": -0.1},
        {"jitter": -1.0},
        {"error_rate": 1.5},
        {"flaky_failures": -1},
    ],
)
def test_config_rejects_nonsense(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        DemoConfig(**bad)  # type: ignore[arg-type]


def test_build_is_cheap_for_large_sites() -> None:
    app = build_demo_app(DemoConfig(pages=20_000))
    assert app[REQUESTS] == {}


async def test_server_lifecycle(session: aiohttp.ClientSession) -> None:
    server = DemoServer()
    with pytest.raises(RuntimeError):
        _ = server.url
    await server.start()
    try:
        assert re.fullmatch(rf"http://127\.0\.0\.1:{server.port}/", server.url)
        assert (await fetch(session, server.url))[0] == 200
    finally:
        await server.close()
    await server.close()  # closing twice is harmless
    with pytest.raises(aiohttp.ClientConnectionError):
        await fetch(session, server.url)


async def test_serve_forever_announces_and_stops_when_cancelled(
    session: aiohttp.ClientSession,
) -> None:
    announced: asyncio.Queue[str] = asyncio.Queue()
    task = asyncio.create_task(serve_forever(DemoConfig(), "127.0.0.1", 0, announced.put_nowait))
    url = await asyncio.wait_for(announced.get(), timeout=5)
    assert (await fetch(session, url))[0] == 200
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert announced.empty()
    with pytest.raises(aiohttp.ClientConnectionError):
        await fetch(session, url)
