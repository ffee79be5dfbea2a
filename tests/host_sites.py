"""Sites whose every page request is counted at the server, and what tests ask of a
crawl about one host: what the hosts tests, engine and screen, share."""

from __future__ import annotations

import asyncio
import time

from aiohttp import web

from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import HostView, Snapshot
from helpers import Handler


def counted_site(
    prefix: str,
    pages: int,
    hits: list[str],
    latency: float = 0.03,
    arrivals: list[float] | None = None,
) -> dict[str, Handler]:
    """A root linking to `pages` pages of `latency` each; every page request is noted,
    and with `arrivals`, the monotonic time it reached the server."""

    def page(body: str) -> Handler:
        async def handler(request: web.Request) -> web.Response:
            hits.append(request.path)
            if arrivals is not None:
                arrivals.append(time.monotonic())
            await asyncio.sleep(latency)
            return web.Response(text=body, content_type="text/html")

        return handler

    links = " ".join(f'<a href="/{prefix}{i}">{i}</a>' for i in range(pages))
    routes = {"/": page(links)}
    routes.update({f"/{prefix}{i}": page("") for i in range(pages)})
    return routes


def holding(crawler: Crawler, origin: str) -> bool:
    """Does a worker hold a URL of `origin`, or a request to it run?"""
    held = any(w.url is not None and w.url.startswith(origin) for w in crawler.workers.values())
    return held or bool(crawler.hosts.in_flight.get(origin))


def host_row(snapshot: Snapshot, root: str) -> HostView:
    origin = root.rstrip("/")
    (row,) = [row for row in snapshot.hosts if row.origin == origin]
    return row
