"""--sitemaps: robots.txt's Sitemap: lines and /sitemap.xml give more roots, indexes and
gzipped sitemaps included, within the crawl's scope and limits; a hostile sitemap (an
entity bomb, a gzip bomb) is refused, in bounded time and memory."""

from __future__ import annotations

import asyncio
import gzip
import resource
from collections.abc import Awaitable, Callable

import pytest
from aiohttp import web

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sitemaps import SitemapRefused, parse_sitemap, unpack
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import CLI, Handler, assert_accounted, expected, html, path

NO_HANG = 60.0  # a guard against a hang on a loaded machine, never a speed target
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def urlset(*urls: str) -> bytes:
    entries = "".join(f"<url><loc>{url}</loc><lastmod>2026-01-01</lastmod></url>" for url in urls)
    return f'<?xml version="1.0"?><urlset {NS}>{entries}</urlset>'.encode()


def index(*urls: str) -> bytes:
    entries = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls)
    return f'<?xml version="1.0"?><sitemapindex {NS}>{entries}</sitemapindex>'.encode()


def body(data: bytes | Callable[[str], bytes], content_type: str = "application/xml") -> Handler:
    """A handler answering `data`, or `data(root)` for the server's own root URL."""

    async def handler(request: web.Request) -> web.Response:
        made = data if isinstance(data, bytes) else data(f"{request.url.origin()}/")
        return web.Response(body=made, content_type=content_type)

    return handler


def billion_laughs() -> bytes:
    """Ten levels of ten: 10**9 "lol"s, 3 GB, if an entity were ever expanded."""
    lines = ['<!ENTITY lol0 "lol">']
    lines += [f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)]
    return (
        f'<?xml version="1.0"?>\n<!DOCTYPE urlset [\n{chr(10).join(lines)}\n]>\n'
        f"<urlset {NS}><url><loc>http://x/&lol9;</loc></url></urlset>\n"
    ).encode()


async def crawl(root: str, **options: object) -> Crawler:
    crawler = Crawler(CrawlConfig(roots=(root,), **options))  # type: ignore[arg-type]
    await asyncio.wait_for(crawler.crawl(), NO_HANG)
    return crawler


# ---- the parser -------------------------------------------------------------------------


def test_a_urlset_and_an_index_are_read() -> None:
    assert parse_sitemap(urlset("http://a/1", "http://a/2"), 10) == (
        "urlset",
        ["http://a/1", "http://a/2"],
    )
    assert parse_sitemap(index("http://a/s.xml"), 10) == ("sitemapindex", ["http://a/s.xml"])


def test_at_most_max_links_urls_are_taken_from_one_sitemap() -> None:
    _kind, locs = parse_sitemap(urlset(*(f"http://a/{n}" for n in range(50))), 7)
    assert locs == [f"http://a/{n}" for n in range(7)]


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (billion_laughs(), "not well-formed XML"),
        # One entity, harmless in size: refused all the same, a sitemap needs no DTD.
        (b'<!DOCTYPE u [<!ENTITY e "x">]><urlset><url><loc>&e;</loc></url></urlset>', "DTD"),
        (b'<!DOCTYPE u SYSTEM "http://127.0.0.1:9/evil.dtd"><urlset/>', "DTD"),
        (b"<html><body>not a sitemap</body></html>", "not a sitemap"),
        (b"\x00\x01 binary", "not well-formed XML"),
    ],
)
def test_a_hostile_or_foreign_document_is_refused(data: bytes, why: str) -> None:
    with pytest.raises(SitemapRefused, match=why):
        parse_sitemap(data, 100)


def test_a_gzip_bomb_stops_at_max_size() -> None:
    bomb = gzip.compress(b"\0" * (50 * 1024 * 1024))  # 50 MB in about 50 KB
    with pytest.raises(SitemapRefused, match="larger than 1048576 bytes unpacked"):
        unpack(bomb, 1024 * 1024)
    assert unpack(gzip.compress(b"<urlset/>"), 100) == b"<urlset/>"
    assert unpack(b"<urlset/>", 100) == b"<urlset/>"


# ---- a crawl ----------------------------------------------------------------------------


async def test_an_index_with_a_gzipped_child_gives_roots_at_depth_0(
    serve: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    # The orphans are linked from nowhere: only the sitemaps can bring them to the crawl.
    root = await serve({
        "/": html("<p>no links</p>"),
        "/robots.txt": body(lambda r: f"User-agent: *\nSitemap: {r}maps/index.xml\n".encode(),
                            "text/plain"),
        "/maps/index.xml": body(lambda r: index(f"{r}maps/a.xml.gz", f"{r}maps/b.xml")),
        "/maps/a.xml.gz": body(lambda r: gzip.compress(urlset(f"{r}orphan/1", f"{r}orphan/2")),
                               "application/gzip"),
        "/maps/b.xml": body(lambda r: urlset(f"{r}orphan/3", "http://elsewhere.invalid/x")),
        "/orphan/{n}": html("<p>an orphan</p>"),
    })  # fmt: skip
    crawler = await crawl(root, sitemaps=True)
    done = {path(url): record.depth for url, record in crawler.ledger.done.items()}
    assert done == {"/": 0, "/orphan/1": 0, "/orphan/2": 0, "/orphan/3": 0}
    # Another host named in a sitemap is filtered by the scope, as a link would be.
    assert crawler.ledger.filtered == {"http://elsewhere.invalid/x": "out of scope"}
    assert any("an index of 2 sitemaps" in note for note in crawler.sitemap_notes)
    assert_accounted(crawler)

    without = await crawl(root)
    assert set(map(path, without.ledger.done)) == {"/"}


async def test_sitemaps_obey_robots_txt_and_the_scope(
    serve: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    root = await serve({
        "/": html("<p>home</p>"),
        "/robots.txt": body(b"User-agent: *\nDisallow: /sitemap.xml\n"
                            b"Sitemap: http://elsewhere.invalid/map.xml\n", "text/plain"),
        "/sitemap.xml": body(lambda r: urlset(f"{r}secret")),
        "/secret": html("<p>never</p>"),
    })  # fmt: skip
    crawler = await crawl(root, sitemaps=True)
    assert set(map(path, crawler.ledger.done)) == {"/"}
    notes = "\n".join(crawler.sitemap_notes)
    assert "http://elsewhere.invalid/map.xml: out of the crawl's scope" in notes
    assert f"{root}sitemap.xml: disallowed by robots.txt" in notes


async def test_the_demo_sites_sitemaps_bring_the_same_pages_at_depth_0() -> None:
    config = DemoConfig()
    async with DemoServer(config) as server:
        crawler = await crawl(server.url, sitemaps=True)
    fetched = {path(url): r.depth for url, r in crawler.ledger.done.items()}
    fetched |= {path(url): r.depth for url, r in crawler.ledger.failed.items()}
    assert set(fetched) == set(expected(config))  # the same URLs as without sitemaps
    assert all(fetched[f"/page/{n}"] == 0 for n in range(config.pages))
    notes = crawler.sitemap_notes
    assert f"{server.url}sitemap.xml: an index of 2 sitemaps" in notes
    assert f"{server.url}sitemaps/pages.xml.gz: {config.pages} URLs" in notes
    assert_accounted(crawler)


async def test_a_billion_laughs_sitemap_is_refused_in_bounded_memory(
    serve: Callable[[dict[str, Handler]], Awaitable[str]],
) -> None:
    """The real command, in a process that may not grow past 2 GiB of address space: one
    expansion of the bomb would need 3 GB."""
    root = await serve({"/": html("<p>home</p>"), "/sitemap.xml": body(billion_laughs())})
    limit = 2 * 1024**3

    def cap_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    proc = await asyncio.create_subprocess_exec(
        *CLI, "crawl", root, "--sitemaps", stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, preexec_fn=cap_memory,
    )  # fmt: skip
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(), NO_HANG)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 0, stderr.decode()
    report = stdout.decode()
    assert f"{root}sitemap.xml: not well-formed XML" in report
    assert f"{root} 200 text/html" in report  # the crawl went on without it
