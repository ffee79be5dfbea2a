"""Plain-path hrefs are resolved by string work, and bs4 is skipped when the first
encoding parses (issue 32, item 4): the links must be what normalize() and bs4 give."""

from __future__ import annotations

import codecs
import itertools

from crawlscope.engine.links import parse_links
from crawlscope.engine.urls import normalize

BASES = (
    "http://127.0.0.1:8080/a/b/c", "http://h.example/", "http://h.example/x",
    "https://h.example:8443/a/", "http://h.example/a/b/c?q=1", "http://u:***@h.example/a/",
    "http://h.example/%7Ea/b", "http://h.example/a//b/c", "http://[::1]:8/a/b",
)  # fmt: skip
HREFS = (
    "..", ".", "../..", "../../../x", "./x/", "x/.", "x/..", "/..", "/a/./b", "//", "/a//b",
    "a//b", "~x", "-", "a.b", "...", "/...", "6", "../page/35482", "/page/603",
    "/page/6#section", "#top", "/", "x/", "/x/../", "a/b/../../..", "/.", "A/B",
    "http://127.0.0.1:8080/q/../z", "http://h.example/y", "http://h.example:80/y",
    "https://h.example:8443/z/./", "http://127.0.0.1:80801/x", "/x#a\\b", "/%41", "?x",
)  # fmt: skip


def page(hrefs: tuple[str, ...]) -> bytes:
    return "".join(f'<a href="{h}">{i}</a>' for i, h in enumerate(hrefs)).encode()


def expected(base: str, hrefs: tuple[str, ...]) -> list[str]:
    links = (normalize(h, base) for h in hrefs)
    return list(dict.fromkeys(u for u in links if u is not None))


def test_every_href_resolves_as_normalize_does_against_every_base() -> None:
    for base in BASES:
        # Each href alone, and all on one page (repeats, and the cache, in play).
        for href in HREFS:
            assert parse_links(page((href,)), base, "utf-8")[1] == expected(base, (href,)), (
                base,
                href,
            )
        assert parse_links(page(HREFS), base, "utf-8")[1] == expected(base, HREFS)


def test_a_site_of_relative_links_resolves_the_same_page_after_page() -> None:
    hrefs = tuple(f"{up}{n}" for up, n in itertools.product(("", "../d/", "/d/"), range(50)))
    for base in ("http://s.example/d/1", "http://s.example/d/e/2", "http://s.example/"):
        assert parse_links(page(hrefs), base, None)[1] == expected(base, hrefs)


def test_a_byte_order_mark_and_a_wrong_charset_still_give_the_links() -> None:
    body = page(("/a", "b", "/c#x"))
    base = "http://h.example/d/"
    want = expected(base, ("/a", "b", "/c#x"))
    assert parse_links(codecs.BOM_UTF8 + body, base, None) == ("utf-8", want)
    assert parse_links(codecs.BOM_UTF16_LE + "<a href=/a>x</a>".encode("utf-16-le"), base, None)[
        1
    ] == expected(base, ("/a",))
    # A charset no codec knows: the next guess, as bs4 makes it.
    assert parse_links(body, base, "no-such-charset")[1] == want
