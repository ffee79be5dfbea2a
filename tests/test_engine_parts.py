"""URL rules, link extraction, config checks and safe text: the engine's small parts."""

from __future__ import annotations

import re
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from crawlscope.engine import crawler as crawler_module
from crawlscope.engine.config import ConfigError, CrawlConfig
from crawlscope.engine.links import parse_links
from crawlscope.engine.text import printable
from crawlscope.engine.urls import Scope, normalize
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


def test_lenient_scope_is_the_same_last_two_labels() -> None:
    s = scope(["http://www.example.com/"], strict=False)
    assert s.why_not("http://docs.example.com/") is None
    assert s.why_not("https://a.b.example.com:8443/") is None
    assert s.why_not("http://example.org/") == "out of scope"


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
    assert set(crawler.done) == {root, root + "deep/dir/leaf"}


async def test_non_html_bodies_are_never_parsed(serve: Serve) -> None:
    async def fake_png(_request: web.Request) -> web.Response:
        # Bytes that would yield a link if anyone parsed them as HTML.
        return web.Response(body=b'\x89PNG<a href="/hidden">', content_type="image/png")

    root = await serve({"/": html('<a href="/img.png">img</a>'), "/img.png": fake_png})
    crawler = await run_crawl(root)
    assert root + "hidden" not in crawler.seen_urls
    assert crawler.done[root + "img.png"].num_urls == 0


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
    assert crawler.done[root].encoding == "iso8859-1"
    assert root + "caf%C3%A9" in crawler.done


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
    links = "".join(f'<a href="/p{i}">p</a><p>{"filler " * 40}</p>' for i in range(1000))
    body = f"<html><body>{links}</body></html>"
    assert len(body.encode()) > 256 * 1024
    root = await serve({"/": html(body)})
    crawler = await run_crawl(root, max_pages=1)
    record = crawler.done[root]
    assert record.num_urls == 1000
    assert record.encoding == "utf-8"
    assert len(crawler.unfetched) == 1000
    assert len(threads) == 1 and threads[0] != threading.main_thread().name
