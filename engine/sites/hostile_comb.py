"""The hostile site's comb: thousands of redirects into one long redirect chain.

/hostile/comb/ links N "teeth" s/0 .. s/N-1 and the N + 1 hops h/0 .. h/N of one chain
(N = 2,400: 4,801 links, under the default max_links of 5,000). Each s/i redirects to
h/i, each h/i to h/i+1, and h/N answers 200. Every URL is fetched once (the chain is
coalesced through seen_urls), but listing the chain once per tooth repeats its tail:
N chains of up to N hops, N^2 / 2 URLs (2.9 million for 2,400), in a report or on the
screen. Listed so that every URL appears once, they are about 3 N.

/hostile/comb/N/ is the same for another N (up to MAX_TEETH), for smaller combs in tests
and lectures, and larger ones in benchmarks.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

__all__ = ["COMB", "COMB_CASES", "MAX_TEETH", "TEETH", "comb_routes", "comb_url"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

COMB = "/hostile/comb/"
TEETH = 2_400
MAX_TEETH = 20_000

COMB_CASES: dict[str, str] = {
    COMB: f"{TEETH:,} URLs redirecting into one {TEETH:,}-hop chain, each hop linked too",
}
"""path -> one-line description of the case (the /hostile/ index lists them)."""


def comb_url(teeth: int) -> str:
    """The path of the comb with `teeth` teeth."""
    return f"{COMB}{teeth}/"


def _number(request: web.Request, name: str, most: int) -> int:
    """A path segment of digits (the route says so), at most `most`; else 404."""
    digits = request.match_info[name]
    if len(digits) > len(str(most)) or int(digits) > most:
        raise web.HTTPNotFound()
    return int(digits)


def _teeth(request: web.Request) -> int:
    if "teeth" not in request.match_info:
        return TEETH
    teeth = _number(request, "teeth", MAX_TEETH)
    if teeth == 0:
        raise web.HTTPNotFound()
    return teeth


async def _index(request: web.Request) -> web.Response:
    teeth = _teeth(request)
    here = comb_url(teeth)
    hops = "".join(f'<a href="{here}h/{i}">h{i}</a>\n' for i in range(teeth + 1))
    starts = "".join(f'<a href="{here}s/{i}">s{i}</a>\n' for i in range(teeth))
    body = (
        f"<!DOCTYPE html>\n<html><head><title>A comb of {teeth} redirects</title></head>"
        f"<body>\n<h1>{teeth} teeth into one chain of {teeth} hops</h1>\n{hops}{starts}"
        "</body></html>\n"
    )
    return web.Response(text=body, content_type="text/html")


async def _tooth(request: web.Request) -> web.Response:
    teeth = _teeth(request)
    i = _number(request, "i", teeth - 1)
    raise web.HTTPFound(f"{comb_url(teeth)}h/{i}")


async def _hop(request: web.Request) -> web.Response:
    teeth = _teeth(request)
    i = _number(request, "i", teeth)
    if i < teeth:
        raise web.HTTPFound(f"{comb_url(teeth)}h/{i + 1}")
    return web.Response(text="<p>The end of the chain.</p>\n", content_type="text/html")


def comb_routes(app: web.Application) -> dict[str, Handler]:
    """The routes of the comb (for add_hostile_routes)."""
    teeth = "{teeth:[0-9]+}"
    return {
        COMB: _index,
        f"{COMB}{teeth}/": _index,
        f"{COMB}{teeth}/s/{{i:[0-9]+}}": _tooth,
        f"{COMB}{teeth}/h/{{i:[0-9]+}}": _hop,
    }
