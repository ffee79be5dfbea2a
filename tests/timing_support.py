"""Servers and waits shared by the timing tests (tests/engine/test_timing*.py,
tests/trace/test_timing_replay.py, tests/tui/test_timing_screens.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

# Distinct links, each admitted on the loop in the step after the page's parse: some
# hundreds of ms of one step on this machine (over 50 ms on any; 40,000 were not, once
# plain paths were resolved without normalize()).
DENSE_LINKS = 200_000


def page(body: bytes) -> Handler:
    async def handler(_request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/html")

    return handler


def dense_site() -> dict[str, Handler]:
    """A root that links to /big: a page of DENSE_LINKS distinct links to /pN."""
    dense = b"<html><body>" + b"".join(b"<a href=/p%d>p</a>" % i for i in range(DENSE_LINKS))
    return {"/": page(b'<a href="/big">big</a>'), "/big": page(dense), "/p{n}": page(b"p")}


# The conftest's `serve` fixture: serve path -> handler on 127.0.0.1, get the root URL.
Serve = Callable[[dict[str, Handler]], Awaitable[str]]
