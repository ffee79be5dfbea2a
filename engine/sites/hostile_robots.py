"""The hostile site's robots.txt cases. robots.txt is per origin, so each case is a small
server of its own on another port of 127.0.0.1, started and stopped with the hostile
site's application; /hostile/robots/ links to them.

- long-robots: a robots.txt of about 198 KB sent in pieces with pauses between them,
  whose last line is `Disallow: /secret`. A crawler that parses only its first network
  read fetches /secret.
- late-robots: a 2 KB robots.txt whose `Disallow: /secret` line comes 0.5 s after the
  rest, as a slow network or a busy server splits it.
- crawl-delay: a robots.txt asking for `Crawl-delay: 86400`, a day between pages; five
  pages to crawl. A crawler must cap it (`--max-crawl-delay`) and say so.
"""

from __future__ import annotations

import asyncio
import html
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from .origins_page import origins_page

__all__ = [
    "CASES",
    "CRAWL_DELAY_PAGES",
    "INDEX",
    "LATE_PAUSE",
    "LONG_ROBOTS_SIZE",
    "ORIGIN_REQUESTS",
    "ROBOTS_CASES",
    "ROBOTS_ORIGINS",
    "RobotsOrigin",
    "build_origin_app",
    "origin_lines",
    "robots_routes",
]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

LONG_ROBOTS_SIZE = 198 * 1000  # bytes, about
LONG_PIECE = 16 * 1024  # sent in pieces this big...
LONG_PAUSE = 0.05  # ...this many seconds apart
LATE_ROBOTS_SIZE = 2 * 1000  # bytes before the late line, about
LATE_PAUSE = 0.5  # seconds before the late line comes
ASKED_CRAWL_DELAY = 86400  # seconds: a day
CRAWL_DELAY_PAGES = 5  # the root and four pages behind it
SECRET = "/secret"
INDEX = "/hostile/robots/"


@dataclass(frozen=True)
class RobotsOrigin:
    """One case: what it shows, and its robots.txt as (pause before, bytes) pieces."""

    name: str
    about: str
    pieces: tuple[tuple[float, bytes], ...]
    links: tuple[str, ...]  # what its root page links to


def _filler_lines(size: int) -> bytes:
    # Rules for other paths, as a big real robots.txt has: every one of them harmless,
    # so only the last line decides whether /secret may be fetched.
    lines = []
    total = 0
    n = 0
    while total < size:
        line = f"Disallow: /archive/{n:06d}/\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines).encode()


def _in_pieces(data: bytes, size: int, pause: float) -> tuple[tuple[float, bytes], ...]:
    return tuple(
        (0.0 if at == 0 else pause, data[at : at + size]) for at in range(0, len(data), size)
    )


def _long_robots() -> tuple[tuple[float, bytes], ...]:
    head = b"# A long robots.txt; the rule that matters is the last line.\nUser-agent: *\n"
    body = head + _filler_lines(LONG_ROBOTS_SIZE - len(head)) + f"Disallow: {SECRET}\n".encode()
    return _in_pieces(body, LONG_PIECE, LONG_PAUSE)


def _late_robots() -> tuple[tuple[float, bytes], ...]:
    head = b"User-agent: *\n" + _filler_lines(LATE_ROBOTS_SIZE)
    return ((0.0, head), (LATE_PAUSE, f"Disallow: {SECRET}\n".encode()))


def _cases() -> tuple[RobotsOrigin, ...]:
    pages = tuple(f"/p{n}" for n in range(1, CRAWL_DELAY_PAGES))
    delay_robots = f"User-agent: *\nCrawl-delay: {ASKED_CRAWL_DELAY}\n".encode()
    return (
        RobotsOrigin(
            "long-robots",
            f"robots.txt of about {LONG_ROBOTS_SIZE // 1000} KB in {LONG_PIECE // 1024} KB"
            f" pieces {LONG_PAUSE:g} s apart; its last line is Disallow: {SECRET}",
            _long_robots(),
            (SECRET, "/open"),
        ),
        RobotsOrigin(
            "late-robots",
            f"robots.txt of about {LATE_ROBOTS_SIZE // 1000} KB whose Disallow: {SECRET}"
            f" line comes {LATE_PAUSE:g} s after the rest",
            _late_robots(),
            (SECRET, "/open"),
        ),
        RobotsOrigin(
            "crawl-delay",
            f"robots.txt asks for Crawl-delay: {ASKED_CRAWL_DELAY} (a day per page);"
            f" {CRAWL_DELAY_PAGES} pages",
            ((0.0, delay_robots),),
            pages,
        ),
    )


CASES = _cases()

ROBOTS_CASES: dict[str, str] = {
    INDEX: "robots.txt cases, each on an origin of its own (another port): "
    + "; ".join(f"{case.name}: {case.about}" for case in CASES),
}
"""path -> description, for the hostile site's table of cases."""

ROBOTS_ORIGINS: web.AppKey[dict[str, str]] = web.AppKey("crawlscope_robots_origins", dict)
"""App key of case name -> root URL of its server, filled in when the hostile app starts."""

ORIGIN_REQUESTS: web.AppKey[Counter[str]] = web.AppKey("crawlscope_origin_requests", Counter)
"""App key of one origin's request counter (path -> requests), so a test can see that a
disallowed page was never fetched."""


def _page(title: str, links: tuple[str, ...]) -> web.Response:
    items = "".join(
        f'<li><a href="{html.escape(href)}">{html.escape(href)}</a></li>\n' for href in links
    )
    text = (
        f"<!DOCTYPE html>\n<html><head><title>{html.escape(title)}</title></head>\n"
        f"<body>\n<h1>{html.escape(title)}</h1>\n<ul>\n{items}</ul>\n</body></html>\n"
    )
    return web.Response(text=text, content_type="text/html", charset="utf-8")


def build_origin_app(case: RobotsOrigin) -> web.Application:
    """One case's site: "/", its robots.txt and the pages "/" links to."""

    @web.middleware
    async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
        request.app[ORIGIN_REQUESTS][request.path] += 1
        return await handler(request)

    async def robots(request: web.Request) -> web.StreamResponse:
        # No Content-Length, so nothing but the end of the stream says the file is over.
        response = web.StreamResponse(headers={"Content-Type": "text/plain; charset=utf-8"})
        await response.prepare(request)
        try:
            for pause, piece in case.pieces:
                if pause:
                    await asyncio.sleep(pause)
                await response.write(piece)
            await response.write_eof()
        except ConnectionError:
            pass  # the crawler stopped reading: nothing to finish
        return response

    async def root(request: web.Request) -> web.Response:
        return _page(f"robots.txt case: {case.name}", case.links)

    async def leaf(request: web.Request) -> web.Response:
        if request.path == SECRET:
            return _page(f"{SECRET}: robots.txt forbids this page", ())
        return _page(f"{request.path}: nothing more", ())

    app = web.Application(middlewares=[count])
    app[ORIGIN_REQUESTS] = Counter()
    app.router.add_get("/", root)
    app.router.add_get("/robots.txt", robots)
    for path in case.links:
        app.router.add_get(path, leaf)
    return app


async def _serve_origins(app: web.Application) -> AsyncIterator[None]:
    """Start every case's server with the hostile app, and stop them with it."""
    runners: list[web.AppRunner] = []
    try:
        for case in CASES:
            runner = web.AppRunner(build_origin_app(case), access_log=None, shutdown_timeout=1.0)
            runners.append(runner)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            app[ROBOTS_ORIGINS][case.name] = f"http://127.0.0.1:{runner.addresses[0][1]}/"
        yield
    finally:
        app[ROBOTS_ORIGINS].clear()
        for runner in runners:
            await runner.cleanup()


async def _index(request: web.Request) -> web.Response:
    origins: dict[str, str] = request.app[ROBOTS_ORIGINS]
    return origins_page(
        "robots.txt cases",
        "robots.txt is per origin, so each case is a server of its own.",
        ((case.name, case.about) for case in CASES),
        origins,
    )


def robots_routes(app: web.Application) -> dict[str, Handler]:
    """Have `app` (not yet started) start the cases' servers, and give its routes."""
    if ROBOTS_ORIGINS not in app:
        app[ROBOTS_ORIGINS] = {}
        app.cleanup_ctx.append(_serve_origins)
    return {INDEX: _index}


def origin_lines(app: web.Application) -> list[str]:
    """One line per running case: its URL and what it shows (for `demo-site` to print)."""
    origins = app.get(ROBOTS_ORIGINS, {})
    return [
        f"  {case.name} on {origins[case.name]}  {case.about}"
        for case in CASES
        if case.name in origins
    ]
