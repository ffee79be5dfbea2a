"""A built-in demo website for crawling: deterministic from a seed, served by aiohttp.web.

The site is what lectures and tests crawl when no network is wanted. It contains the
situations the chapter's crawler has to handle: many interlinked pages, relative,
absolute and fragment links, out-of-scope and non-http links, the chapter's redirect
cases, errors (404, 500, a connection that drops), non-HTML files, robots.txt, and
sitemaps (an index at /sitemap.xml naming a plain and a gzipped sitemap).

Benchmarks crawl tens of thousands of pages per second against it, so everything that
can be decided up front (the link graph, which pages fail, the fixed pages' bytes) is
decided once in `build_demo_app`; a request only formats one small page.
"""

from __future__ import annotations

import asyncio
import gzip
import html
import random
import struct
import zlib
from collections import Counter, deque
from collections.abc import Awaitable, Callable
from types import TracebackType

from aiohttp import web

from .demo_config import DemoConfig
from .hostile import add_hostile_routes
from .hostile_robots import origin_lines

__all__ = [
    "CONCURRENCY",
    "REQUESTS",
    "DemoConfig",
    "DemoServer",
    "HostConcurrency",
    "build_demo_app",
    "expected_outcomes",
    "serve_forever",
]


# --------------------------------------------------------------------------------------
# The fixed part of the site, as data. The server and `expected_outcomes` both read these
# tables, so the prediction cannot drift away from what is served.

_INDEX_LINKS: tuple[str, ...] = (
    "/page/0",
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
)
# Links every crawler must drop without fetching: another host, and a non-http scheme.
_EXTERNAL_LINK = "http://example.invalid/"
_MAILTO_LINK = "mailto:demo@example.invalid"

_CHAIN_LENGTH = 12  # longer than the usual max_redirect of 10, so the limit is reached

_REDIRECTS: dict[str, tuple[int, str]] = {
    # Relative Location values, as real servers send them; the crawler must resolve them.
    "/353": (301, "/353/"),
    "/foo": (302, "/baz"),
    "/bar": (302, "/baz"),
    "/loop/a": (302, "/loop/b"),
    "/loop/b": (302, "/loop/a"),
    **{f"/chain/{i}": (302, f"/chain/{i + 1}") for i in range(_CHAIN_LENGTH)},
}

# path -> (title, links). These pages link back home only, which is always already seen.
_PLAIN_PAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "/353/": ("Chapter 353", ("/",)),
    "/baz": ("Baz: where /foo and /bar meet", ("/",)),
    f"/chain/{_CHAIN_LENGTH}": ("End of the redirect chain", ("/",)),
    "/private/secret": ("Private: robots.txt disallows this page", ("/",)),
}
_FLAKY_PAGE = ("Flaky: answered at last", ("/",))

_ERROR_PAGES: dict[str, int] = {"/missing": 404, "/broken": 500}

_ROBOTS_TXT = "User-agent: *\nDisallow: /private/\n"


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _tiny_png() -> bytes:
    # A real 1x1 grey PNG rather than arbitrary bytes, so a viewer or a type sniffer
    # that a user points at the demo agrees that it is an image.
    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)  # 1x1, 8-bit greyscale
    pixels = zlib.compress(b"\x00\x80")  # filter byte "none", then one mid-grey pixel
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", pixels)
        + _png_chunk(b"IEND", b"")
    )


_TINY_PDF = (
    b"%PDF-1.4\n"
    b"%\xe2\xe3\xcf\xd3\n"  # high bytes mark the file as binary, as PDF writers do
    b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
    b"trailer << /Root 1 0 R >>\n"
    b"%%EOF\n"
)

_FILES: dict[str, tuple[str, bytes]] = {
    "/files/diagram.png": ("image/png", _tiny_png()),
    "/files/chapter.pdf": ("application/pdf", _TINY_PDF),
}


# --------------------------------------------------------------------------------------
# The generated part: which pages fail, and which pages each page links to.


def _error_pages(config: DemoConfig) -> frozenset[int]:
    candidates = config.pages - 1  # page 0 never fails: it is the way into the graph
    count = min(round(config.error_rate * config.pages), candidates)
    if count <= 0:
        return frozenset()
    # A generator of its own, so changing error_rate leaves the link graph's stream alone.
    rng = random.Random(f"crawlscope-demo-errors-{config.seed}")
    return frozenset(rng.sample(range(1, config.pages), count))


def _link_graph(config: DemoConfig, errors: frozenset[int]) -> list[tuple[int, ...]]:
    """For each page, the page numbers it links to, in link order.

    Every page reachable from page 0 needs a path of pages that answer 200, because a
    500 page's links are never read. So a working page links forward to n+1 and, when
    that page fails, on through the run of failing pages to the next working one. The
    other links are drawn at random and do not depend on which pages fail.
    """
    pages = config.pages
    rng = random.Random(config.seed)
    graph: list[tuple[int, ...]] = []
    for n in range(pages):
        forward: list[int] = []
        nxt = n + 1
        while nxt < pages:
            forward.append(nxt)
            if n in errors or nxt not in errors:
                break
            nxt += 1

        has_next = n + 1 < pages
        excluded = 2 if has_next else 1  # the page itself and its successor
        wanted = config.links_per_page - 1 if has_next else config.links_per_page
        wanted = max(0, min(wanted, pages - excluded))
        picked: dict[int, None] = {}  # insertion-ordered set: link order is part of the seed
        while len(picked) < wanted:
            k = rng.randrange(pages)
            if k != n and k != n + 1:
                picked[k] = None

        links = dict.fromkeys(forward)
        links.update(picked)
        graph.append(tuple(links))
    return graph


# --------------------------------------------------------------------------------------
# Rendering.

_HTML_TYPE = "text/html"


def _document(title: str, body: str) -> str:
    safe_title = html.escape(title)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n'
        '<head><meta charset="utf-8"><title>'
        f"{safe_title}</title></head>\n"
        f'<body>\n<h1 id="top">{safe_title}</h1>\n{body}</body>\n</html>\n'
    )


def _link_list(hrefs: tuple[str, ...] | list[str]) -> str:
    items = "".join(
        f'<li><a href="{html.escape(href)}">{html.escape(href)}</a></li>\n' for href in hrefs
    )
    return f"<ul>\n{items}</ul>\n"


def _index_html(hostile: bool = False) -> str:
    links = [*_INDEX_LINKS, "/hostile/"] if hostile else list(_INDEX_LINKS)
    body = (
        "<p>A site built for crawling: pages, redirects, errors and files.</p>\n"
        + _link_list(links)
        + f'<p><a href="{_EXTERNAL_LINK}">another host</a> '
        f'<a href="{_MAILTO_LINK}">write to us</a></p>\n'
    )
    return _document("crawlscope demo site", body)


def _page_html(n: int, targets: tuple[int, ...], host: str) -> str:
    # Four spellings of a link to /page/k, rotated so that every page mixes them and a
    # crawler's URL resolution is exercised on each one. From /page/n, "k" and
    # "../page/k" both resolve to /page/k.
    items: list[str] = []
    for i, k in enumerate(targets):
        style = (n + i) % 4
        if style == 0:
            href = f"/page/{k}"
        elif style == 1:
            href = str(k)
        elif style == 2:
            href = f"http://{host}/page/{k}"
        else:
            href = f"../page/{k}"
        items.append(f'<li><a href="{href}">page {k}</a></li>\n')
    # Fragments name a part of a page, not a new page: both must collapse onto URLs
    # that are already known.
    anchor_target = targets[0] if targets else n
    private = '<p><a href="/private/secret">staff only</a></p>\n' if n == 0 else ""
    body = (
        f"<ul>\n{''.join(items)}</ul>\n"
        f'<p id="section"><a href="/page/{anchor_target}#section">a section</a> '
        '<a href="#top">back to top</a></p>\n'
        f"{private}"
        f'<p><a href="/">home</a> <a href="{_EXTERNAL_LINK}">another host</a> '
        f'<a href="{_MAILTO_LINK}">write to us</a></p>\n'
    )
    return _document(f"Page {n}", body)


# --------------------------------------------------------------------------------------
# The application.

REQUESTS: web.AppKey[Counter[str]] = web.AppKey("crawlscope_demo_requests", Counter)
"""App key of the per-path request counter (path -> requests received)."""

CONCURRENCY: web.AppKey[HostConcurrency] = web.AppKey("crawlscope_demo_concurrency")
"""App key of the per-host concurrency record, so a test can prove a politeness limit."""


class HostConcurrency:
    """Requests in flight per Host header, now and at their peak."""

    def __init__(self) -> None:
        self.now: Counter[str] = Counter()
        self.peak: Counter[str] = Counter()

    def enter(self, host: str) -> None:
        self.now[host] += 1
        if self.now[host] > self.peak[host]:
            self.peak[host] = self.now[host]

    def leave(self, host: str) -> None:
        self.now[host] -= 1


class _Site:
    """Precomputed state and request handlers of one demo application."""

    def __init__(self, config: DemoConfig) -> None:
        self.config = config
        self.errors = _error_pages(config)
        self.graph = _link_graph(config, self.errors)
        self.requests: Counter[str] = Counter()
        self.concurrency = HostConcurrency()
        self.flaky_drops = 0
        # Seeded, so a single-worker crawl sees the same delays every run; with many
        # workers the order of draws depends on scheduling anyway.
        self.jitter_rng = random.Random(config.seed)
        self.index_body = _index_html(config.hostile)
        self.plain_bodies = {
            path: _document(title, _link_list(links))
            for path, (title, links) in _PLAIN_PAGES.items()
        }
        self.flaky_body = _document(_FLAKY_PAGE[0], _link_list(_FLAKY_PAGE[1]))

    @web.middleware
    async def observe(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        # Counted before the delay, so a test can see a request that is still waiting.
        self.requests[request.path] += 1
        host = request.host
        self.concurrency.enter(host)
        try:
            config = self.config
            if config.latency or config.jitter:
                delay = config.latency
                if config.jitter:
                    delay += self.jitter_rng.uniform(0.0, config.jitter)
                await asyncio.sleep(delay)
            return await handler(request)
        finally:
            self.concurrency.leave(host)

    async def index(self, request: web.Request) -> web.Response:
        return _html_response(self.index_body)

    async def page(self, request: web.Request) -> web.Response:
        raw = request.match_info["n"]
        # Only the canonical spelling exists, so /page/007 cannot alias /page/7.
        if not raw.isdigit() or (raw != "0" and raw.startswith("0")):
            return _not_found(request.path)
        n = int(raw)
        if n >= self.config.pages:
            return _not_found(request.path)
        if n in self.errors:
            return _error_response(500, request.path)
        return _html_response(_page_html(n, self.graph[n], html.escape(request.host)))

    async def redirect(self, request: web.Request) -> web.Response:
        status, location = _REDIRECTS[request.path]
        return web.Response(status=status, headers={"Location": location})

    async def plain(self, request: web.Request) -> web.Response:
        return _html_response(self.plain_bodies[request.path])

    async def error(self, request: web.Request) -> web.Response:
        return _error_response(_ERROR_PAGES[request.path], request.path)

    async def file(self, request: web.Request) -> web.Response:
        content_type, body = _FILES[request.path]
        return web.Response(body=body, content_type=content_type)

    async def flaky(self, request: web.Request) -> web.Response:
        if self.flaky_drops < self.config.flaky_failures:
            self.flaky_drops += 1
            transport = request.transport
            if transport is not None:
                transport.close()
            # Nothing has been written yet, so the client sees the connection end before
            # any response byte. aiohttp then fails to write this response to the closed
            # transport and treats that as a client that went away: no log, no 500.
            # (Raising an exception instead would be logged as a server error.)
            return web.Response(status=503)
        return _html_response(self.flaky_body)

    async def robots(self, request: web.Request) -> web.Response:
        return web.Response(text=_ROBOTS_TXT, content_type="text/plain", charset="utf-8")

    # The sitemaps (crawl --sitemaps): an index at the usual place, naming a plain child
    # and a gzipped one, as big sites serve them. They list pages the links reach anyway,
    # so a crawl with or without them fetches the same URLs.

    async def sitemap_index(self, request: web.Request) -> web.Response:
        origin = str(request.url.origin())
        return _xml_response(_sitemap_xml("sitemapindex", "sitemap", [
            origin + path for path in _SITEMAP_CHILDREN
        ]))  # fmt: skip

    async def sitemap_home(self, request: web.Request) -> web.Response:
        return _xml_response(_sitemap_xml("urlset", "url", [str(request.url.origin()) + "/"]))

    async def sitemap_pages(self, request: web.Request) -> web.Response:
        origin = str(request.url.origin())
        pages = [f"{origin}/page/{n}" for n in range(self.config.pages)]
        body = gzip.compress(_sitemap_xml("urlset", "url", pages).encode("utf-8"), mtime=0)
        return web.Response(body=body, content_type="application/gzip")

    async def unknown(self, request: web.Request) -> web.Response:
        return _not_found(request.path)


_SITEMAP_CHILDREN = ("/sitemaps/home.xml", "/sitemaps/pages.xml.gz")


def _sitemap_xml(root: str, entry: str, urls: list[str]) -> str:
    entries = "".join(f"<{entry}><loc>{html.escape(url)}</loc></{entry}>\n" for url in urls)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<{root} xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{entries}</{root}>\n'
    )


def _xml_response(text: str) -> web.Response:
    return web.Response(text=text, content_type="application/xml", charset="utf-8")


def _html_response(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type=_HTML_TYPE, charset="utf-8")


def _error_response(status: int, path: str) -> web.Response:
    reason = {404: "Not Found", 500: "Internal Server Error"}[status]
    body = f"<p>{status} {reason}: {html.escape(path)} (on purpose; this is the demo site)</p>\n"
    return _html_response(_document(f"{status} {reason}", body), status)


def _not_found(path: str) -> web.Response:
    return _error_response(404, path)


def build_demo_app(config: DemoConfig = DemoConfig()) -> web.Application:  # noqa: B008 (frozen)
    """Build the demo site's application; the link graph is computed here, once."""
    site = _Site(config)
    app = web.Application(middlewares=[site.observe])
    app[REQUESTS] = site.requests
    app[CONCURRENCY] = site.concurrency
    router = app.router
    router.add_get("/", site.index)
    router.add_get("/page/{n}", site.page)
    for path in _REDIRECTS:
        router.add_get(path, site.redirect)
    for path in _PLAIN_PAGES:
        router.add_get(path, site.plain)
    for path in _ERROR_PAGES:
        router.add_get(path, site.error)
    for path in _FILES:
        router.add_get(path, site.file)
    router.add_get("/flaky", site.flaky)
    router.add_get("/robots.txt", site.robots)
    router.add_get("/sitemap.xml", site.sitemap_index)
    router.add_get(_SITEMAP_CHILDREN[0], site.sitemap_home)
    router.add_get(_SITEMAP_CHILDREN[1], site.sitemap_pages)
    if config.hostile:
        add_hostile_routes(app)
    # Last, so it only catches what nothing else claims, and answers in HTML like the
    # rest of the site instead of aiohttp's plain-text 404.
    router.add_get("/{tail:.*}", site.unknown)
    return app


# --------------------------------------------------------------------------------------
# Predicting a crawl.


def expected_outcomes(
    config: DemoConfig, max_redirect: int = 10, max_tries: int = 4
) -> dict[str, str]:
    """Predict how each URL ends in a full crawl from "/" of a fresh demo server.

    Returns path -> outcome, one entry per path the crawl fetches:

    - "html": 200 with an HTML body, "other": 200 with any other content type;
    - "redirect": a 3xx, whether its target was followed, already seen, or dropped
      because the redirect budget ran out;
    - "404", "500": those statuses;
    - "error": no response at all (only /flaky, when it drops more often than the
      crawler tries).

    The crawl is assumed to follow the crawler's default rules: one host only,
    non-http(s) links dropped, fragments removed, robots.txt ignored (so
    /private/secret is fetched), links read from 200 HTML responses only, and each
    URL fetched at most once.

    Redirect budget: the root and every link found on a page are queued with budget
    `max_redirect`. A URL queued with budget b that answers a redirect queues its
    target with budget b - 1, but only if b > 0 and the target is not already seen.
    So from /chain/0 with budget m the crawl fetches /chain/0 .. /chain/m: if
    m < 12 the last of them is a redirect whose target is never fetched; if m >= 12,
    /chain/12 is fetched as "html".

    /flaky drops the connection `flaky_failures` times (counted per server, not per
    crawl) before it answers, so it ends as "html" when `max_tries` is larger than
    `flaky_failures`. A crawler on aiohttp may reach the server more often than it
    tries: aiohttp's ClientSession quietly repeats a GET once when the server
    disconnects, so each try can use up two of the failures.

    The site is laid out so that the result does not depend on the order in which
    workers fetch: every redirect target is reachable only through its redirects.
    """
    errors = _error_pages(config)
    graph = _link_graph(config, errors)
    flaky_outcome = "html" if max_tries > config.flaky_failures else "error"

    def visit(path: str) -> tuple[str, str | None, tuple[str, ...]]:
        """A path's outcome, its redirect target, and the links it yields."""
        if path == "/":
            return "html", None, _INDEX_LINKS
        if path.startswith("/page/"):
            n = int(path.removeprefix("/page/"))
            if n in errors:
                return "500", None, ()
            links = (*(f"/page/{k}" for k in graph[n]), "/")
            if n == 0:
                links += ("/private/secret",)
            return "html", None, links
        if path in _REDIRECTS:
            return "redirect", _REDIRECTS[path][1], ()
        if path in _PLAIN_PAGES:
            return "html", None, _PLAIN_PAGES[path][1]
        if path in _ERROR_PAGES:
            return str(_ERROR_PAGES[path]), None, ()
        if path in _FILES:
            return "other", None, ()
        if path == "/flaky":
            return flaky_outcome, None, _FLAKY_PAGE[1] if flaky_outcome == "html" else ()
        raise AssertionError(f"the demo site never links to {path}")

    outcomes: dict[str, str] = {}
    seen = {"/"}
    queue: deque[tuple[str, int]] = deque([("/", max_redirect)])
    while queue:
        path, budget = queue.popleft()
        outcome, target, links = visit(path)
        outcomes[path] = outcome
        if target is not None:
            if target not in seen and budget > 0:
                seen.add(target)
                queue.append((target, budget - 1))
            continue
        for link in links:
            if link not in seen:
                seen.add(link)
                queue.append((link, max_redirect))
    return outcomes


# --------------------------------------------------------------------------------------
# Serving.


class DemoServer:
    """The demo site on a real socket, for use inside a running event loop.

    `async with DemoServer() as server:` then crawl `server.url`. Port 0 asks the OS for
    a free port, so tests and parallel runs never collide.
    """

    def __init__(
        self,
        config: DemoConfig = DemoConfig(),  # noqa: B008 (a frozen dataclass)
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.config = config
        self.host = host
        self.app = build_demo_app(config)
        # The very counter the app updates, so reading it never needs the app.
        self.requests: Counter[str] = self.app[REQUESTS]
        self.concurrency: HostConcurrency = self.app[CONCURRENCY]
        self._requested_port = port
        self._port: int | None = None
        self._runner: web.AppRunner | None = None

    @property
    def port(self) -> int:
        """The port actually listened on (resolved from port 0 at start)."""
        if self._port is None:
            raise RuntimeError("DemoServer is not started")
        return self._port

    @property
    def url(self) -> str:
        """Root URL of the running site, e.g. "http://127.0.0.1:43817/"."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def start(self) -> DemoServer:
        if self._runner is not None:
            raise RuntimeError("DemoServer is already started")
        runner = web.AppRunner(
            self.app,
            # One log line per request would cost more than serving the page.
            access_log=None,
            # Stop the handler (say, a latency sleep) of a client that has gone, instead
            # of finishing work nobody will read.
            handler_cancellation=True,
            # Closing must not wait up to a minute for in-flight slow responses.
            shutdown_timeout=1.0,
        )
        await runner.setup()
        try:
            # A deep backlog, because benchmarks open hundreds of connections at once.
            site = web.TCPSite(runner, self.host, self._requested_port, backlog=1024)
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        self._port = int(runner.addresses[0][1])
        return self

    async def close(self) -> None:
        runner, self._runner = self._runner, None
        if runner is not None:
            await runner.cleanup()

    async def __aenter__(self) -> DemoServer:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def _print_now(line: str) -> None:
    print(line, flush=True)


async def serve_forever(
    config: DemoConfig,
    host: str,
    port: int,
    announce: Callable[[str], None],
    tell: Callable[[str], None] = _print_now,
) -> None:
    """Serve the demo site until cancelled; `announce(url)` is called once listening, then
    `tell(line)` for each server of its own a hostile case runs (its URL, what it shows)."""
    async with DemoServer(config, host, port) as server:
        announce(server.url)
        for line in origin_lines(server.app):
            tell(line)
        await asyncio.Event().wait()
