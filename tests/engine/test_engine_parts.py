"""URL rules, link extraction, config checks and safe text: the engine's small parts."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.abc import AbstractResolver, ResolveResult

from crawlscope.engine import crawler as crawler_module
from crawlscope.engine.config import ConfigError, CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.links import parse_links
from crawlscope.engine.observe.text import printable
from crawlscope.engine.urls import Scope, normalize, registrable_domain
from helpers import Handler, html, run_crawl

Serve = Callable[[dict[str, Handler]], Awaitable[str]]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("HTTP://Example.COM:80/a/../b/./c#frag", "http://example.com/b/c"),
        ("https://h:443", "https://h/"),
        ("http://h:8080/x?q=1#f", "http://h:8080/x?q=1"),
        ("  http://h/spaced  ", "http://h/spaced"),
        ("http://[::1]:8080/v6", "http://[::1]:8080/v6"),
        ("http://h/a/b/..", "http://h/a/"),
        ("http://h", "http://h/"),
        ("http://h?q=1", "http://h/?q=1"),
        ("http://h/a%2fb%7e%41", "http://h/a%2Fb~A"),
        ("http://h/a b\tc\n", "http://h/a%20bc"),
        ("http://bücher.example/é", "http://xn--bcher-kva.example/%C3%A9"),
        ("http://h/100%", "http://h/100%25"),
        ("http://[::1", None),
        ("https://h[::1]@", None),
        ("mailto:someone@example.com", None),
        ("javascript:alert(1)", None),
        ("data:text/html,hi", None),
        ("ftp://h/file", None),
        ("http://h:99999/", None),
        ("http:///nohost", None),
        ("", None),
    ],
)
def test_normalize(url: str, expected: str | None) -> None:
    assert normalize(url) == expected


def test_normalize_resolves_against_a_base() -> None:
    assert normalize("../x", "http://h/a/b/") == "http://h/a/x"
    assert normalize("//other/p", "https://h/") == "https://other/p"
    assert normalize("?q=2", "http://h/p?q=1") == "http://h/p?q=2"
    assert normalize("#top", "http://h/p") == "http://h/p"


def scope(roots: list[str], strict: bool = True, exclude: tuple[str, ...] = ()) -> Scope:
    return Scope(roots, strict, [re.compile(p) for p in exclude])


def test_strict_scope_is_the_same_host_with_www_ignored() -> None:
    s = scope(["http://example.com/"])
    assert s.why_not("http://example.com/a") is None
    assert s.why_not("http://www.example.com/a") is None
    assert s.why_not("https://example.com/a") == "out of scope"  # another port (443)
    assert s.why_not("http://docs.example.com/") == "out of scope"
    assert s.why_not("http://example.org/") == "out of scope"


def test_lenient_scope_is_the_same_registrable_domain() -> None:
    s = scope(["http://www.example.com/"], strict=False)
    assert s.why_not("http://docs.example.com/") is None
    assert s.why_not("https://a.b.example.com:8443/") is None
    assert s.why_not("http://example.com/") is None
    assert s.why_not("http://example.org/") == "out of scope"
    assert s.why_not("http://notexample.com/") == "out of scope"


@pytest.mark.parametrize(
    ("root", "inside", "outside"),
    [
        # A public suffix of two labels (ICANN section of the list).
        (
            "http://www.example.co.uk/",
            ["http://example.co.uk/", "https://docs.example.co.uk/"],
            ["http://other.co.uk/", "http://co.uk/", "http://www.example.uk/"],
        ),
        # A suffix where anyone can have a site (private section): each site is its own.
        (
            "https://alice.github.io/",
            ["https://alice.github.io/repo/", "http://docs.alice.github.io:8080/"],
            ["https://bob.github.io/", "https://github.io/", "https://github.com/"],
        ),
        # A root that is itself a public suffix has only itself.
        ("http://github.io/", ["http://github.io:81/x"], ["http://alice.github.io/"]),
        # localhost and IP addresses compare as whole hosts (any port, leniently).
        (
            "http://localhost:8000/",
            ["http://localhost:9000/"],
            ["http://a.localhost:8000/", "http://127.0.0.1:8000/"],
        ),
        (
            "http://127.0.0.1:8000/",
            ["http://127.0.0.1:9000/"],
            ["http://127.0.0.2:8000/", "http://localhost:8000/"],
        ),
        ("http://[::1]:8000/", ["http://[::1]:9000/"], ["http://[::2]:8000/"]),
        # IDN hosts (normalised to punycode) find their suffix all the same.
        (
            normalize("http://www.bücher.de/") or "",
            [normalize("http://shop.bücher.de/") or ""],
            [normalize("http://bücher.com/") or ""],
        ),
    ],
)
def test_lenient_scope_never_crosses_a_public_suffix(
    root: str, inside: list[str], outside: list[str]
) -> None:
    s = scope([root], strict=False)
    for url in inside:
        assert s.why_not(url) is None, url
    for url in outside:
        assert s.why_not(url) == "out of scope", url


def test_registrable_domain_by_the_public_suffix_list() -> None:
    assert registrable_domain("www.example.co.uk") == "example.co.uk"
    assert registrable_domain("a.b.alice.github.io") == "alice.github.io"
    assert registrable_domain("co.uk") == "co.uk"  # a public suffix has none: itself
    assert registrable_domain("localhost") == "localhost"
    assert registrable_domain("192.168.1.1") == "192.168.1.1"
    assert registrable_domain("") == ""


def test_the_public_suffix_list_is_never_fetched_nor_cached(tmp_path: Path) -> None:
    """A lenient scope works with no network and writes nothing: in a fresh process whose
    sockets cannot connect or resolve, with HOME and the cache directories empty."""
    script = textwrap.dedent(
        """
        import socket

        def refuse(*args, **kwargs):
            raise OSError("no network in this test")

        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from crawlscope.engine.urls import Scope

        s = Scope(["https://alice.github.io/"], strict=False)
        assert s.why_not("https://bob.github.io/") == "out of scope"
        assert s.why_not("https://www.alice.github.io/") is None
        print("ok")
        """
    )
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **os.environ,
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TLDEXTRACT_CACHE": str(home / "tldextract"),
    }
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ok\n"
    assert list(home.iterdir()) == []


class Resolver(AbstractResolver):
    """Every name resolves to 127.0.0.1, so one local server can be many hosts."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        return [
            ResolveResult(
                hostname=host, host="127.0.0.1", port=port, family=socket.AF_INET, proto=0, flags=0
            )
        ]

    async def close(self) -> None:
        pass


async def test_a_lenient_crawl_stays_on_its_registrable_domain(serve: Serve) -> None:
    async def by_host(request: web.Request) -> web.Response:
        host = request.host.split(":")[0]
        if host != "alice.github.io":
            return web.Response(text=f"<p>{host}</p>", content_type="text/html")
        port = request.url.port
        links = "".join(
            f'<a href="http://{name}:{port}/">{name}</a>'
            for name in ("docs.alice.github.io", "bob.github.io", "github.io")
        )
        return web.Response(text=links, content_type="text/html")

    root = await serve({"/": by_host})
    port = root.split(":")[2].rstrip("/")
    start = f"http://alice.github.io:{port}/"
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(resolver=Resolver()))
    async with session:
        crawler = Crawler(CrawlConfig(roots=(start,), strict=False), session=session)
        await crawler.crawl()
    assert set(crawler.ledger.done) == {start, f"http://docs.alice.github.io:{port}/"}
    assert crawler.ledger.filtered == {
        f"http://bob.github.io:{port}/": "out of scope",
        f"http://github.io:{port}/": "out of scope",
    }


def test_ip_hosts_match_exactly_in_both_modes() -> None:
    for strict in (True, False):
        s = scope(["http://127.0.0.1:8000/"], strict=strict)
        assert s.why_not("http://127.0.0.1:8000/x") is None
        assert s.why_not("http://127.0.0.2:8000/x") == "out of scope"
    assert scope(["http://127.0.0.1:8000/"]).why_not("http://127.0.0.1:9000/") == "out of scope"


def test_exclude_patterns_search_the_whole_url() -> None:
    s = scope(["http://h/"], exclude=(r"\.pdf$", "private"))
    assert s.why_not("http://h/doc.pdf") == "excluded by '\\\\.pdf$'"
    assert s.why_not("http://h/private/x") == "excluded by 'private'"
    assert s.why_not("http://h/doc.html") is None


def test_parse_links_honours_base_href_and_drops_what_is_not_http() -> None:
    page = b"""<html><head><base href="/docs/"></head><body>
        <a href="intro">i</a> <a href="intro#part2">i2</a> <a href="  spaced  ">s</a>
        <a href="mailto:x@y">m</a> <a href="javascript:void(0)">j</a> <a>no href</a>
        <area href="/map"> <a href="https://other.example/">o</a></body></html>"""
    encoding, links = parse_links(page, "http://h/a/b", None)
    assert encoding == "utf-8"
    assert links == [
        "http://h/docs/intro",
        "http://h/docs/spaced",
        "http://h/map",
        "https://other.example/",
    ]


@pytest.mark.parametrize(
    ("body", "charset", "encoding"),
    [
        ('<a href="/é">x</a>'.encode(), None, "utf-8"),
        ('<meta charset="latin-1"><a href="/é">x</a>'.encode("latin-1"), None, "iso8859-1"),
        ('<a href="/é">x</a>'.encode("latin-1"), "iso-8859-1", "iso8859-1"),
        ('<a href="/é">x</a>'.encode(), "no-such-charset", "utf-8"),
        ('<a href="/é">x</a>'.encode("utf-16"), None, "utf-16le"),
    ],
)
def test_parse_links_decodes_with_the_right_charset(
    body: bytes, charset: str | None, encoding: str
) -> None:
    used, links = parse_links(body, "http://h/", charset)
    assert used == encoding
    assert links == ["http://h/%C3%A9"]


async def test_base_href_over_a_real_socket(serve: Serve) -> None:
    root = await serve(
        {
            "/": html('<base href="/deep/dir/"><a href="leaf">leaf</a>'),
            "/deep/dir/leaf": html("<p>the leaf</p>"),
        }
    )
    crawler = await run_crawl(root)
    assert set(crawler.ledger.done) == {root, root + "deep/dir/leaf"}


async def test_non_html_bodies_are_never_parsed(serve: Serve) -> None:
    async def fake_png(_request: web.Request) -> web.Response:
        # Bytes that would yield a link if anyone parsed them as HTML.
        return web.Response(body=b'\x89PNG<a href="/hidden">', content_type="image/png")

    root = await serve({"/": html('<a href="/img.png">img</a>'), "/img.png": fake_png})
    crawler = await run_crawl(root)
    assert root + "hidden" not in crawler.ledger.seen_urls
    assert crawler.ledger.done[root + "img.png"].num_urls == 0


async def test_charset_from_the_header_is_recorded(serve: Serve) -> None:
    async def latin(_request: web.Request) -> web.Response:
        return web.Response(
            body='<a href="/caf\xe9">x</a>'.encode("latin-1"),
            headers={"Content-Type": "text/html; charset=ISO-8859-1"},
        )

    async def cafe(_request: web.Request) -> web.Response:
        return web.Response(text="ok", content_type="text/html")

    root = await serve({"/": latin, "/café": cafe})
    crawler = await run_crawl(root)
    assert crawler.ledger.done[root].encoding == "iso8859-1"
    assert root + "caf%C3%A9" in crawler.ledger.done


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_tasks": 0}, "max_tasks must be at least 1"),
        ({"max_tries": -1}, "max_tries must be at least 1"),
        ({"max_redirect": -1}, "max_redirect must be 0 or more"),
        ({"total_timeout": 0}, "total_timeout must be more than 0"),
        ({"exclude": ("(",)}, "bad --exclude pattern"),
    ],
)
def test_bad_settings_give_clear_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        CrawlConfig(roots=("http://h/",), **options)  # type: ignore[arg-type]


def test_roots_must_be_http() -> None:
    with pytest.raises(ConfigError, match="not an http"):
        CrawlConfig(roots=("ftp://h/",))
    with pytest.raises(ConfigError, match="at least one root"):
        CrawlConfig(roots=())
    assert CrawlConfig(roots="http://h").roots == ("http://h",)  # type: ignore[arg-type]


def test_printable_escapes_control_and_bidi_characters() -> None:
    assert printable("http://h/\x1b[31mred") == "http://h/\\x1b[31mred"
    assert printable("a\u202eb\nc") == "a\\u202eb\\x0ac"
    # The line and paragraph separators break a line as a newline does.
    assert printable("a\u2028b\u2029c") == "a\\u2028b\\u2029c"
    assert printable("[bold]x[/bold]") == "[bold]x[/bold]"  # markup is the UI's job to escape
    assert printable("abcdef", 4) == "abc…"
    assert printable("café ünïcode") == "café ünïcode"


BASES = [
    "http://h/",
    "http://h/a/b",
    "http://h/a/b/",
    "http://h/a/b?q=1",
    "https://h:8443/x/y/z.html",
    "http://[::1]:8080/dir/",
]
HREFS = [
    "x", "./x", "../x", "../../../x", "/x", "//other/x", "//other", "http://H:80/x",
    "?q=2", "#f", "", " x ", "x y", "%7Ex", "/a/./b/../c", "mailto:a@b", "HTTPS://h/",
    "x?y#z", ".", "..", "/", "//", "http:x", "http://", "https://h[::1]@", "é",
]  # fmt: skip


def resolved(hrefs: list[str], base: str) -> list[str]:
    urls = (normalize(h, base) for h in hrefs)
    return list(dict.fromkeys(u for u in urls if u is not None))


@pytest.mark.parametrize("base", BASES)
def test_parse_links_resolves_every_href_as_normalize_does(base: str) -> None:
    # parse_links remembers hrefs it has resolved; the memory must never change an answer,
    # so the same hrefs are parsed on every base, in both orders.
    for hrefs in (HREFS, HREFS[::-1]):
        page = "".join(f'<a href="{h}">l</a>' for h in hrefs).encode()
        assert parse_links(page, base, "utf-8")[1] == resolved(hrefs, base)


async def test_a_big_page_is_parsed_off_the_loop_with_the_same_links(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[str] = []

    def parse_and_note_thread(*args: Any) -> tuple[str, list[str]]:
        threads.append(threading.current_thread().name)
        return parse_links(*args)

    monkeypatch.setattr(crawler_module, "parse_links", parse_and_note_thread)
    filler = "filler " * (crawler_module.PARSE_IN_THREAD_BYTES // 7000 + 1)
    links = "".join(f'<a href="/p{i}">p</a><p>{filler}</p>' for i in range(1000))
    body = f"<html><body>{links}</body></html>"
    assert len(body.encode()) > crawler_module.PARSE_IN_THREAD_BYTES
    root = await serve({"/": html(body)})
    crawler = await run_crawl(root, max_pages=1)
    record = crawler.ledger.done[root]
    assert record.num_urls == 1000
    assert record.encoding == "utf-8"
    assert len(crawler.ledger.unfetched) == 1000
    assert len(threads) == 1 and threads[0] != threading.main_thread().name
