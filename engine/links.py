"""Links out of an HTML page, with BeautifulSoup and the lxml parser.

Parsing is most of a crawl's CPU time (bench/throughput.py profiles it), so the page is
built into a BeautifulSoup tree holding only the tags links come from, and links seen on
many pages (navigation, say) are normalised once.
"""

from __future__ import annotations

import codecs
import re
import sys
import warnings
from typing import Any

from bs4 import BeautifulSoup, Tag
from bs4.builder import LXMLTreeBuilder, XMLParsedAsHTMLWarning
from bs4.dammit import EncodingDetector
from yarl import URL

from .urls import normalize

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})

# Only these tags matter.
_WANTED = frozenset({"a", "area", "base"})

warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)


def is_html(content_type: str | None) -> bool:
    return content_type in HTML_TYPES


def known_charset(charset: str | None) -> str | None:
    """`charset` if Python has a codec by that name, else None (servers lie)."""
    if not charset:
        return None
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return None


def choose_encoding(body: bytes, charset: str | None) -> str:
    """The encoding to try first: the header's, else a BOM's, else the document's, else utf-8."""
    header = known_charset(charset)
    if header:
        return header
    _, bom = EncodingDetector.strip_byte_order_mark(body)
    if bom:
        return bom
    declared = EncodingDetector.find_declared_encoding(
        body, is_html=True, search_entire_document=False
    )
    return known_charset(declared) or "utf-8"


class _LinkTreeBuilder(LXMLTreeBuilder):
    """bs4's lxml tree builder, cut down to the tags in `_WANTED`.

    A SoupStrainer filters in Python after lxml has called back for every tag, every
    piece of text and every comment, and bs4 has copied each tag's attributes. Here lxml
    is told not to report text, comments, doctypes and processing instructions at all
    (lxml makes no call for a target method that is None), and any other tag is dropped
    before bs4 does any work for it: 2.4x faster on small and on 1 MB pages.
    """

    def start(self, tag: Any, attrib: Any, nsmap: Any = None) -> None:
        if tag in _WANTED:
            assert self.soup is not None
            self.soup.handle_starttag(tag, None, None, dict(attrib))

    def end(self, tag: Any) -> None:
        if tag in _WANTED:
            assert self.soup is not None
            self.soup.handle_endtag(tag)

    data = None  # type: ignore[assignment]
    comment = None  # type: ignore[assignment]
    doctype = None  # type: ignore[assignment]
    pi = None  # type: ignore[assignment]


# ---- normalising hrefs once ------------------------------------------------------------
#
# How an href resolves depends on part of the base URL only: "/x" on the base's scheme and
# host, "x" or "../x" on its directory as well, "//h/x" and "http://h/x" on its scheme
# alone (RFC 3986 5.2; yarl's join and urllib's urljoin agree on this). So a link on
# every page of a site, or on every page of one directory, is normalised once per
# (that part, href). Anything else (not plain printable ASCII, starting with "?" or "#",
# a scheme without a host, an empty or odd host) is keyed on the whole base: always right.

_PLAIN = re.compile(r"[!-\[\]-~]+")  # printable ASCII but the backslash
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
_NETWORK = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*:)?//[A-Za-z0-9.\-]+(?::[0-9]*)?(?:[/?#]|$)")
_CACHE_SIZE = 50_000  # about 13 MB when full; then it starts again
_resolved: dict[tuple[str, str], str | None] = {}


class _Resolver:
    """Normalises the hrefs of one page against its base URL."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._url: URL | None = None
        scheme_end = base.find("://")
        path_start = base.find("/", scheme_end + 3) if scheme_end > 0 else -1
        if path_start < 0:
            # Not the shape normalize() gives; key everything on the whole base.
            self.scheme = self.origin = self.directory = base
            return
        # Interned: every page of a site makes these strings anew, and the cache keeps one.
        self.scheme = sys.intern(base[: scheme_end + 1])
        self.origin = sys.intern(base[:path_start])
        path = base[path_start:].split("?", 1)[0].split("#", 1)[0]
        self.directory = sys.intern(base[: path_start + path.rfind("/") + 1])

    def _context(self, href: str) -> str:
        """The part of the base that resolving `href` depends on (or more of it)."""
        if not _PLAIN.fullmatch(href) or href[0] in "?#":
            return self.base
        if _NETWORK.match(href):
            return self.scheme
        if href[0] == "/":
            return self.origin if href[1:2] != "/" else self.base
        if _SCHEME.match(href):
            return self.base
        return self.directory

    def __call__(self, href: str) -> str | None:
        key = (self._context(href), href)
        try:
            return _resolved[key]
        except KeyError:
            pass
        if self._url is None:
            self._url = URL(self.base)
        url = normalize(href, self._url)
        if len(_resolved) >= _CACHE_SIZE:
            _resolved.clear()
        _resolved[key] = url
        return url


def parse_links(
    body: bytes, page_url: str, charset: str | None, max_links: int = 0
) -> tuple[str, list[str]]:
    """The encoding used and the page's http(s) links, normalised, unique, in page order
    (the first `max_links` of them, when that is not 0).

    Links resolve against the first <base href> when the page has one.
    """
    # bs4 falls back to other encodings by itself if the first choice cannot decode the body.
    first = choose_encoding(body, charset)
    # No multi-valued attributes: only href is read, and splitting class="a b" costs time.
    builder = _LinkTreeBuilder(multi_valued_attributes=None)
    soup = BeautifulSoup(body, builder=builder, from_encoding=first)
    encoding = soup.original_encoding or first
    # One walk over the little tree, in document order, instead of find() and find_all().
    base_href: str | None = None
    hrefs: list[str] = []
    for tag in soup.descendants:
        if isinstance(tag, Tag):
            href = tag.get("href")
            if href is None:
                continue
            if tag.name != "base":
                hrefs.append(str(href))
            elif base_href is None:
                base_href = str(href)
    base = page_url
    if base_href is not None:
        base = normalize(base_href, page_url) or page_url
    resolve = _Resolver(base)
    links: dict[str, None] = {}
    for href in hrefs:
        url = resolve(href)
        if url is not None:
            links[url] = None
            if len(links) == max_links:
                # The rest of a page with 20,000 links is not worth the time it costs.
                break
    return encoding, list(links)
