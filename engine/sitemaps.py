"""Sitemaps (sitemaps.org): more roots for a crawl, read before its workers start.

Where they are looked for: the `Sitemap:` lines of each root's robots.txt (when robots.txt
is obeyed; `--ignore-robots` never fetches it) and `/sitemap.xml` of each root's origin.
A sitemap index names more sitemaps; a gzipped one is unpacked. Every page URL found is
a root at depth 0 for the crawl (the ledger applies the scope and the page limits).

A sitemap is untrusted input like any page, and is held to the same limits: its body,
after decompression, is read up to `max_size`; at most `max_links` URLs are taken from
one file; a sitemap URL outside the crawl's scope, or one robots.txt forbids, is not
fetched. The XML parser expands no entity, loads no DTD and reaches no network; a file
that declares a DTD at all is refused (a sitemap has no use for one, and entity tricks,
the billion laughs among them, all start there).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import aiohttp
from lxml import etree  # type: ignore[import-untyped]

from .observe.text import printable
from .politeness import RobotsCache
from .records import describe_exception
from .urls import normalize, origin_of

# Sitemap files read per crawl, indexes included: an index of indexes cannot make a crawl
# read sitemaps forever.
MAX_SITEMAPS = 100
SITEMAP_REDIRECTS = 5
GZIP_MAGIC = b"\x1f\x8b"
_NAMESPACES = {"urlset": "url", "sitemapindex": "sitemap"}


class SitemapRefused(Exception):
    """A sitemap that is not read; the message says why, for the report."""


@dataclass
class SitemapFindings:
    """What the sitemaps gave: page URLs (normalised, in order, once each) and one note
    per sitemap file looked at."""

    urls: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class SitemapLimits:
    max_size: int  # bytes of a body, after decompression
    max_links: int  # URLs taken from one file
    obey_robots: bool


def parse_sitemap(data: bytes, max_links: int) -> tuple[str, list[str]]:
    """("urlset" or "sitemapindex", the `<loc>` texts, at most `max_links` of them).

    Raises SitemapRefused for anything else: not XML, a DTD, another root element."""
    parser = etree.XMLParser(
        resolve_entities=False,
        load_dtd=False,
        no_network=True,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )
    try:
        root = etree.fromstring(data, parser)
    except etree.XMLSyntaxError as exc:
        # libxml2's own guard stops an entity bomb here, before any expansion.
        raise SitemapRefused(f"not well-formed XML ({exc})") from None
    if root.getroottree().docinfo.internalDTD is not None:
        raise SitemapRefused("declares a DTD (entities are never expanded)")
    kind = etree.QName(root).localname
    entry = _NAMESPACES.get(kind)
    if entry is None:
        raise SitemapRefused(f"not a sitemap (its root element is <{kind}>)")
    locs: list[str] = []
    for element in root:
        if not isinstance(element.tag, str) or etree.QName(element).localname != entry:
            continue
        for child in element:
            if isinstance(child.tag, str) and etree.QName(child).localname == "loc":
                text = (child.text or "").strip()
                if text:
                    locs.append(text)
                break
        if len(locs) >= max_links:
            break
    return kind, locs


def unpack(body: bytes, max_size: int) -> bytes:
    """The body itself, or, if it is gzip data, what it unpacks to; SitemapRefused past
    `max_size` (a gzip bomb stops there, having unpacked at most that much)."""
    if not body.startswith(GZIP_MAGIC):
        return body
    unpacker = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = unpacker.decompress(body, max_size + 1)
    except zlib.error as exc:
        raise SitemapRefused(f"broken gzip data ({exc})") from None
    if len(data) > max_size:
        raise SitemapRefused(f"larger than {max_size} bytes unpacked (--max-size)")
    return data


async def read_body(response: aiohttp.ClientResponse, max_size: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_any():
        chunks.append(chunk)
        size += len(chunk)
        if size > max_size:
            response.close()  # the rest is never read: the connection cannot be reused
            raise SitemapRefused(f"larger than {max_size} bytes (--max-size)")
    return b"".join(chunks)


class SitemapReader:
    """Reads the sitemaps of some origins, within the limits; see the module docstring."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        limits: SitemapLimits,
        robots: RobotsCache,
        in_scope: Callable[[str], bool],
    ) -> None:
        self.session = session
        self.limits = limits
        self.robots = robots
        self.in_scope = in_scope
        self.findings = SitemapFindings()
        self._seen_pages: set[str] = set()

    async def read(self, roots: Iterable[str]) -> SitemapFindings:
        todo: list[str] = []
        for origin in dict.fromkeys(origin_of(root) for root in roots):
            todo.extend(await self._start_points(origin))
        seen: set[str] = set()
        while todo and len(seen) < MAX_SITEMAPS:
            url = todo.pop(0)
            if url in seen:
                continue
            seen.add(url)
            todo.extend(await self._read_one(url))
        if todo:
            self._note(f"{len(todo)} more sitemaps not read (at most {MAX_SITEMAPS} a crawl)")
        return self.findings

    async def _start_points(self, origin: str) -> list[str]:
        listed: list[str] = []
        if self.limits.obey_robots:
            rules = await self.robots.rules(origin)
            if rules.parser is not None:
                listed = list(rules.parser.sitemaps)
        found = [url for url in (normalize(line, origin + "/") for line in listed) if url]
        return list(dict.fromkeys([*found, origin + "/sitemap.xml"]))

    async def _read_one(self, url: str) -> list[str]:
        """Read one sitemap: its pages join the findings; an index's sitemaps are returned."""
        try:
            kind, locs = await self._fetch(url)
        except SitemapRefused as exc:
            self._note(f"{url}: {exc}")
            return []
        links = [u for u in (normalize(loc, url) for loc in locs) if u is not None]
        if kind == "sitemapindex":
            self._note(f"{url}: an index of {len(links)} sitemaps")
            return links
        new = [u for u in links if u not in self._seen_pages]
        self._seen_pages.update(new)
        self.findings.urls.extend(new)
        self._note(f"{url}: {len(links)} URLs")
        return []

    async def _fetch(self, url: str) -> tuple[str, list[str]]:
        if not self.in_scope(url):
            raise SitemapRefused("out of the crawl's scope")
        if self.limits.obey_robots:
            rules = await self.robots.rules(origin_of(url))
            if not rules.allows(url):
                raise SitemapRefused("disallowed by robots.txt")
        try:
            async with self.session.get(url, max_redirects=SITEMAP_REDIRECTS) as response:
                if response.status != 200:
                    raise SitemapRefused(f"answered {response.status}")
                body = await read_body(response, self.limits.max_size)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise SitemapRefused(f"unreachable ({describe_exception(exc)})") from None
        return parse_sitemap(unpack(body, self.limits.max_size), self.limits.max_links)

    def _note(self, line: str) -> None:
        self.findings.notes.append(printable(line, 300))
