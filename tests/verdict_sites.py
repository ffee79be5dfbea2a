"""Sites that each limit a crawl in one known way (issue 42's verdict): served by the
conftest's `serve` on 127.0.0.1, crawled over real sockets."""

from __future__ import annotations

import asyncio

from aiohttp import web

from helpers import Handler


def _page(links: list[str]) -> str:
    return "<html><body>" + " ".join(f'<a href="{h}">x</a>' for h in links) + "</body></html>"


def _html(text: str) -> web.Response:
    return web.Response(text=text, content_type="text/html")


def tree(latency: float, fanout: int = 4, robots: str = "") -> dict[str, Handler]:
    """Pages of `latency` seconds, each linking `fanout` new ones: never short of work."""

    async def page(request: web.Request) -> web.Response:
        n = int(request.match_info.get("n", "0"))
        await asyncio.sleep(latency)
        return _html(_page([f"/p/{n * fanout + i}" for i in range(1, fanout + 1)]))

    routes: dict[str, Handler] = {"/": page, "/p/{n}": page}
    if robots:

        async def robots_txt(_request: web.Request) -> web.Response:
            return web.Response(text=robots)

        routes["/robots.txt"] = robots_txt
    return routes


def chain(latency: float) -> dict[str, Handler]:
    """Each page links one new page: one worker's work at a time."""

    async def page(request: web.Request) -> web.Response:
        n = int(request.match_info.get("n", "0"))
        await asyncio.sleep(latency)
        return _html(_page([f"/p/{n + 1}"]))

    return {"/": page, "/p/{n}": page}


def dense(links: int) -> dict[str, Handler]:
    """No latency, `links` new links a page: the parse and the bookkeeping are the work."""

    async def page(request: web.Request) -> web.Response:
        n = int(request.match_info.get("n", "0"))
        return _html(_page([f"/p/{n * links + i}" for i in range(1, links + 1)]))

    return {"/": page, "/p/{n}": page}


HUGE_LINKS = 200_000  # admitted on the loop in one step: some hundreds of ms


def huge(latency: float) -> dict[str, Handler]:
    """A slow tree of two links a page whose page 8 also links /big, a page of HUGE_LINKS
    distinct links under /x/ (a crawl excludes them: admitting them is the one long step)."""
    big = "<html><body>" + "".join(f"<a href=/x/{i}>x</a>" for i in range(HUGE_LINKS))

    async def page(request: web.Request) -> web.Response:
        n = int(request.match_info.get("n", "0"))
        await asyncio.sleep(latency)
        return _html(_page([f"/p/{n * 2 + i}" for i in (1, 2)] + (["/big"] if n == 8 else [])))

    async def big_page(_request: web.Request) -> web.Response:
        return _html(big)

    return {"/": page, "/p/{n}": page, "/big": big_page}
