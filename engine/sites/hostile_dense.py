"""The hostile site's link-dense pages: 10 MB that are nothing but links.

- /hostile/dense/same: `<a href=x>` a million times (10 MB, just under the default
  max_size of 10 MiB). One link, so the parse cannot stop at max_links; a parser that
  builds a tree (or keeps every tag) holds about 75 times the page in memory.
- /hostile/dense/many: about 650,000 distinct links in 10 MB, far past max_links. They
  lead out of scope (to dense.invalid, through a <base href>), so a crawl records them
  as filtered and fetches none.

/hostile/dense/same/N and /hostile/dense/many/N (any number N) are the same pages under
other URLs, so that several can be fetched and parsed at once (bench/linkdense.py).
Each page is built once per application, on its first request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

__all__ = ["DENSE_BYTES", "DENSE_CASES", "MANY", "SAME", "SAME_TAGS", "dense_routes"]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

SAME = "/hostile/dense/same"
MANY = "/hostile/dense/many"
LEAF = "/hostile/dense/leaf/"  # where the same page's one link leads
SAME_TAGS = 1_000_000
DENSE_BYTES = 10_000_000  # about; under CrawlConfig's max_size (10 MiB), so it is parsed
MANY_BASE = "http://dense.invalid/"  # out of scope for any crawl of this site

DENSE_CASES: dict[str, str] = {
    SAME: f"<a href=x> {SAME_TAGS:,} times: 10 MB of tags, one link",
    MANY: "10 MB of distinct links (about 650,000), out of scope, far past max_links",
}
"""path -> one-line description of the case (the /hostile/ index lists them)."""


def _head(title: str, base: str) -> bytes:
    return (
        f'<!DOCTYPE html>\n<html><head><title>{title}</title><base href="{base}"></head><body>\n'
    ).encode()


def same_page(tags: int = SAME_TAGS) -> bytes:
    """One href, `tags` times."""
    return _head("one link, a million times", LEAF) + b"<a href=x>" * tags


def many_page(size: int = DENSE_BYTES) -> bytes:
    """Distinct links, about `size` bytes of them."""
    parts = [_head("links and nothing else", MANY_BASE)]
    total = len(parts[0])
    n = 0
    while total < size:
        tag = b"<a href=%d>" % n
        parts.append(tag)
        total += len(tag)
        n += 1
    return b"".join(parts)


class _DensePages:
    def __init__(self) -> None:
        self._bodies: dict[str, bytes] = {}

    def _body(self, name: str, make: Callable[[], bytes]) -> web.Response:
        body = self._bodies.get(name)
        if body is None:
            body = self._bodies[name] = make()
        return web.Response(body=body, headers={"Content-Type": "text/html; charset=utf-8"})

    async def same(self, request: web.Request) -> web.Response:
        return self._body("same", same_page)

    async def many(self, request: web.Request) -> web.Response:
        return self._body("many", many_page)

    async def leaf(self, request: web.Request) -> web.Response:
        return web.Response(text="<p>Nothing more.</p>\n", content_type="text/html")


def dense_routes(app: web.Application) -> dict[str, Handler]:
    """The routes of the link-dense cases (for add_hostile_routes)."""
    pages = _DensePages()
    return {
        SAME: pages.same,
        SAME + "/{copy:[0-9]+}": pages.same,
        MANY: pages.many,
        MANY + "/{copy:[0-9]+}": pages.many,
        LEAF + "{tail:.*}": pages.leaf,
    }
