"""Links out of an HTML page, with BeautifulSoup and the lxml parser.

Parsing is most of a crawl's CPU time (bench/throughput.py profiles it), and a hostile
page can be nothing but links (bench/linkdense.py), so no tree is built: links are taken
as lxml meets their tags, the parse stops at `max_links`, and links seen on many pages
(navigation, say) are normalised once.
"""

from __future__ import annotations

import codecs
import re
import sys
import threading
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

from bs4 import BeautifulSoup
from bs4.builder import ParserRejectedMarkup, XMLParsedAsHTMLWarning

# Where bs4 defines it (bs4.builder only re-exports it at run time, unseen by a type checker).
from bs4.builder._lxml import LXMLTreeBuilder
from bs4.dammit import EncodingDetector
from lxml import etree  # type: ignore[import-untyped]
from yarl import URL

from .records import known_charset
from .urls import normalize

warnings.filterwarnings("ignore", category=XMLParsedAsHTMLWarning)


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

# An href that is a path of unreserved characters in non-empty segments (dot segments
# allowed), perhaps with a fragment: resolved by string work alone (RFC 3986 5.2), which
# is what normalize() gives for it against a base in normal form, at a tenth of the cost.
# Pages of a big site link mostly to pages not seen yet, so the cache above misses for
# most hrefs, and normalize() was the largest cost of a page after the parse.
_SIMPLE_PATH = re.compile(r"(/?)([A-Za-z0-9_~.\-]+(?:/[A-Za-z0-9_~.\-]+)*/?)(?:#[!-\[\]-~]*)?")
_SEGMENT = re.compile(r"[A-Za-z0-9_~.\-]+")
_FRAGMENT = re.compile(r"#[!-\[\]-~]*")
# Whether a base's scheme, authority and directory are as normalize() writes them (so a
# path joined to them is too): by directory, bounded like the cache.
_normal_dirs: dict[str, bool] = {}
_NORMAL_DIRS_KEPT = 4096


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for a path of non-empty segments that starts with "/"."""
    if "/." not in path:
        return path
    out: list[str] = []
    segments = path.split("/")[1:]
    last = len(segments) - 1
    for i, segment in enumerate(segments):
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
            continue
        if i == last:
            out.append("")  # "a/.." and "a/." end in a directory
    return "/" + "/".join(out)


def _is_normal_directory(directory: str) -> bool:
    known = _normal_dirs.get(directory)
    if known is None:
        # No userinfo (normalize masks a password), no empty segment, nothing escaped.
        plain = "@" not in directory and "//" not in directory.partition("://")[2]
        known = plain and "%" not in directory and normalize(directory) == directory
        if len(_normal_dirs) >= _NORMAL_DIRS_KEPT:
            _normal_dirs.clear()
        _normal_dirs[directory] = known
    return known


class _Resolver:
    """Normalises the hrefs of one page against its base URL."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._url: URL | None = None
        self._path_start = -1
        self._normal: bool | None = None  # whether `directory` is in normal form, once asked
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
        self._path_start = path_start

    def _context(self, href: str) -> str:
        """The part of the base that resolving `href` depends on (or more of it)."""
        if not _PLAIN.fullmatch(href) or href[0] in "?#":
            return self.base
        if _NETWORK.match(href):
            return self.scheme
        if href[0] == "/":
            return self.origin if href[1:2] != "/" else self.base
        if _SCHEME.match(href):
            # Another scheme than the base's (mailto:, javascript:) is taken as it is,
            # whatever the base; the base's own ("http:g") resolves as a path against it.
            same = href[: len(self.scheme)].lower() == self.scheme.lower()
            return self.base if same else self.scheme
        return self.directory

    def _simple(self, href: str) -> str | None:
        """`href` resolved by string work, if it is a plain path (or this site's own
        absolute URL of one) and the base is in normal form; else None."""
        if self._path_start < 0:
            return None  # not the shape normalize() gives
        if href[:1] == "#":
            # The page itself ("#top"), once its fragment is dropped: the base, if that is
            # in normal form. Keyed on the whole base, it missed the cache on every page.
            if _FRAGMENT.fullmatch(href) and self._normal_base():
                return self.base
            return None
        if href.startswith(self.origin) and href[len(self.origin) : len(self.origin) + 1] == "/":
            href = href[len(self.origin) :]  # the site's own spelling of its origin
        match = _SIMPLE_PATH.fullmatch(href)
        if match is None or not self._normal_directory():
            return None
        slash, path = match.groups()
        merged = "/" + path if slash else self.directory[self._path_start :] + path
        return self.origin + _remove_dot_segments(merged)

    def _normal_directory(self) -> bool:
        if self._normal is None:
            self._normal = _is_normal_directory(self.directory)
        return self._normal

    def _normal_base(self) -> bool:
        """Whether the base is as normalize() writes it: a directory in normal form and a
        last segment of unreserved characters, with no query."""
        last = self.base[len(self.directory) :]
        plain = not last or (_SEGMENT.fullmatch(last) is not None and last not in (".", ".."))
        return plain and self._normal_directory()

    def __call__(self, href: str) -> str | None:
        # A plain path first, and not kept: string work costs less than the cache's key,
        # and most such hrefs on a big site are pages met once (a page's most common href).
        url = self._simple(href)
        if url is not None:
            return url
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


# ---- taking links as the parser meets them ----------------------------------------------
#
# A page is fed to lxml a slice at a time, and each a, area and base tag is handled the
# moment lxml reports it: no tree is built, so what a parse holds is the links it has
# taken, whatever the number of tags; and once a page has given `max_links` links, the
# rest of it is not parsed at all (bench/linkdense.py measures both).

# Bytes handed to lxml at a time: small enough that a parse stops soon after its last
# link, big enough that feeding costs nothing next to parsing.
FEED_BYTES = 64 * 1024
# Raw hrefs remembered per page, so that a repeated one (navigation, or the same link a
# million times) is resolved once; past this many, hrefs are resolved each time they come.
_REPEATS_KEPT = 10_000
# Hrefs a page may have resolved, at most: so many per link it may give, and never fewer
# than so many in all. A page that has not given max_links links by then is repeats and
# junk (a million distinct fragments of itself, say): the rest of it is not worth the
# time (about 15 us an href).
HREFS_PER_LINK = 10
HREFS_AT_LEAST = 10_000


def href_budget(max_links: int) -> int:
    """How many hrefs a page may have resolved; 0 (no limit) when max_links is 0."""
    return max(max_links * HREFS_PER_LINK, HREFS_AT_LEAST) if max_links else 0


class _PageLinks:
    """One page's links: resolved, without repeats, in page order, up to `max_links`.

    They resolve against the first <base href>. HTML puts it before any link, but
    browsers apply a late one to the links before it too; so are they here, from the
    spelling that first gave each (two spellings of one link before a late base, which it
    would tell apart, count once: holding every href until the base came would hold the
    whole page).
    """

    def __init__(self, page_url: str, max_links: int) -> None:
        self.page_url = page_url
        self.max_links = max_links
        self.urls: dict[str, str] = {}  # link -> the href that first gave it
        self.done = False  # max_links taken, or hrefs enough tried: the parse can stop
        self._resolve = _Resolver(page_url)
        self._based = False
        self.seen: set[str] = set()  # raw hrefs taken already, against the current base
        self._tries_left = href_budget(max_links)

    def take(self, href: str) -> None:
        if self.done or href in self.seen:
            return
        if len(self.seen) < _REPEATS_KEPT:
            self.seen.add(href)
        url = self._resolve(href)
        if url is not None and url not in self.urls:
            self.urls[url] = href
            self.done = len(self.urls) == self.max_links
        self._tries_left -= 1
        if self._tries_left == 0:  # never, with no limit: it starts at 0
            self.done = True

    def base(self, href: str) -> None:
        if self._based or self.done:  # after done, as if the parse had stopped at once
            return
        self._based = True
        self._resolve = resolve = _Resolver(normalize(href, self.page_url) or self.page_url)
        self.seen.clear()  # the same href may now resolve elsewhere
        taken, self.urls = self.urls, {}
        for first in taken.values():
            url = resolve(first)
            if url is not None:
                self.urls.setdefault(url, first)


class _TagTarget:
    """What lxml calls as it meets tags: a, area and base give the page's links, the rest
    are forgotten. lxml makes no call for a target method that is None, so it is not told
    of text, comments, doctypes, processing instructions or end tags at all.

    One lives with each kept parser (see `_take_parser`) and serves one page at a time.
    """

    def __init__(self) -> None:
        self.links: _PageLinks | None = None  # the page being parsed

    def start(self, tag: Any, attrib: Any) -> None:
        links = self.links
        if links is None:  # between pages: lxml calls nothing then
            return
        if tag == "a" or tag == "area":
            href = attrib.get("href")
            # The repeat test inline: a page may repeat one href a million times.
            if href is not None and href not in links.seen:
                links.take(href)
        elif tag == "base":
            href = attrib.get("href")
            if href is not None:
                links.base(href)

    def close(self) -> None:
        """Called by the parser's close: lxml requires it of a target."""

    end = None
    data = None
    comment = None
    doctype = None
    pi = None


class _Kept(NamedTuple):
    parser: Any
    target: _TagTarget
    # For an encoding lxml has no name for, Python decodes and lxml is fed text.
    decoder: Callable[..., codecs.IncrementalDecoder] | None


# lxml parsers kept for reuse: one per (thread, encoding), in one table for the process.
# A parser and its parse context hold each other, so one made for each page was a cycle
# only the collector could free: with the target and bs4's soup, 30 objects a page. They
# made 18 of the 23 young collections of a 5,000-page crawl, whose collections then took
# 6% to 10% of its time (docs/measurements.md).
#
# A parser is only ever fed by the thread that made it (or, once that thread has ended,
# by the next thread given its ident). lxml points a parser at the string dictionary of
# the thread feeding it, but only after libxml2 has reset the parser against the old
# one: a parser handed from a thread to another while the first was parsing had both
# threads in one dictionary at once, outside the GIL, and libxml2's dictionaries are not
# thread-safe. The suite saw a link lost from a page that way, once in seven runs.
#
# The table outlives its threads on purpose: kept per thread in thread-local storage,
# each crawl's parse threads left their parsers to the collector when they ended, at a
# moment of its own (inside a later parse, say). A thread's parsers go only past these
# bounds, least recently used first, or after a failed parse.
_THREADS_KEPT = 16  # more threads than a process parses in at once (crawler.PARSE_THREADS)
_ENCODINGS_KEPT = 8  # per thread
_idle: dict[int, dict[str | None, _Kept]] = {}  # thread ident -> encoding -> its parser
_idle_lock = threading.Lock()


def _take_parser(encoding: str | None) -> _Kept:
    """This thread's idle parser for `encoding`, its own until `_give_back`; made if none is."""
    with _idle_lock:
        mine = _idle.get(threading.get_ident())
        kept = mine.pop(encoding, None) if mine else None
    if kept is not None:
        return kept
    target = _TagTarget()
    try:
        parser = etree.HTMLParser(target=target, recover=True, encoding=encoding)
        decoder = None
    except LookupError:
        # libxml2 knows fewer names than Python: not euc_jp or euc_kr as Python spells
        # them, nor ISO-2022-JP, Mac Roman or many code pages at all. Without this, bs4
        # fell back to UTF-8 and a Japanese page's links came out as U+FFFD.
        assert encoding is not None  # lxml guesses when given none
        decoder = codecs.getincrementaldecoder(encoding)  # LookupError: Python neither
        parser = etree.HTMLParser(target=target, recover=True)
    return _Kept(parser, target, decoder)


def _give_back(encoding: str | None, kept: _Kept) -> None:
    ident = threading.get_ident()
    with _idle_lock:
        mine = _idle.pop(ident, None)  # put back last: the most recently used
        if mine is None:
            mine = {}
            if len(_idle) >= _THREADS_KEPT:
                del _idle[next(iter(_idle))]
        _idle[ident] = mine
        mine.pop(encoding, None)
        if len(mine) >= _ENCODINGS_KEPT:
            del mine[next(iter(mine))]
        mine[encoding] = kept


class _LinkBuilder(LXMLTreeBuilder):
    """bs4's lxml tree builder, cut down to handing a page to a kept parser whose target
    takes its links (`_TagTarget`).

    bs4 still chooses the encoding and retries with the next one when lxml refuses the
    markup (a fresh `_PageLinks` each time, through `reset`), but no tree is built.
    """

    def __init__(self, page_url: str, max_links: int) -> None:
        # No multi-valued attributes: nothing is read from the soup, and splitting
        # class="a b" costs time.
        super().__init__(multi_valued_attributes=None)
        self.page_url = page_url
        self.max_links = max_links
        self.links = _PageLinks(page_url, max_links)

    def reset(self) -> None:
        super().reset()
        self.links = _PageLinks(self.page_url, self.max_links)

    def feed(self, markup: Any) -> None:
        assert self.soup is not None
        _feed(markup, self.soup.original_encoding, self.links)


def _feed(markup: bytes, encoding: str | None, links: _PageLinks) -> None:
    """Parse `markup` in `encoding` with a kept parser, its links into `links`; raises
    ParserRejectedMarkup when lxml (or the codec) refuses it."""
    try:
        kept = _take_parser(encoding)
    except LookupError as exc:  # an encoding neither lxml nor Python knows
        raise ParserRejectedMarkup(exc) from exc
    parser, target, decoder = kept
    try:
        decode = None if decoder is None else decoder(errors="replace").decode
        target.links = links
        # At least one feed, even of nothing, or lxml's parser is never set up.
        for at in range(0, len(markup) or 1, FEED_BYTES):
            piece = markup[at : at + FEED_BYTES]
            parser.feed(piece if decode is None else decode(piece))
            if links.done:
                break
        else:
            if decode is not None:
                parser.feed(decode(b"", True))  # a character cut short at the end
        parser.close()  # which readies it for the next page
    except BaseException as exc:
        # lxml resets a parser whose feed raised, but one left in the middle of a page
        # would begin the next page there: not worth trusting on so rare a path, so
        # this one is not given back (the collector frees it).
        if isinstance(exc, UnicodeDecodeError | LookupError | etree.ParserError):
            raise ParserRejectedMarkup(exc) from exc
        raise
    finally:
        target.links = None
    _give_back(encoding, kept)


# UTF-8, UTF-32 (before UTF-16: it begins with UTF-16 LE's) and UTF-16, as bs4 strips them.
_BYTE_ORDER_MARKS = (
    codecs.BOM_UTF8, codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE, codecs.BOM_UTF16_LE,
    codecs.BOM_UTF16_BE,
)  # fmt: skip


def parse_links(
    body: bytes, page_url: str, charset: str | None, max_links: int = 0
) -> tuple[str, list[str]]:
    """The encoding used and the page's http(s) links, normalised, unique, in page order
    (the first `max_links` of them, when that is not 0; the parse stops there).

    Links resolve against the page's first <base href>, if it has one (see _PageLinks).
    """
    first = choose_encoding(body, charset)
    if not body.startswith(_BYTE_ORDER_MARKS):
        # What BeautifulSoup does first, without it: its constructor, builder and soup
        # cost a small page as much as a third of its parse. It strips a byte-order mark
        # first; a page with one takes the way through it.
        links = _PageLinks(page_url, max_links)
        try:
            _feed(body, first, links)
            return first, list(links.urls)
        except ParserRejectedMarkup:
            pass  # not in that encoding: bs4 tries the next ones, from the first again
    # bs4 falls back to other encodings by itself if the first choice cannot decode the body.
    builder = _LinkBuilder(page_url, max_links)
    soup = BeautifulSoup(body, builder=builder, from_encoding=first)
    encoding = soup.original_encoding or first
    # The soup refers to itself (its root is its own current tag) and to the builder:
    # emptied, it and the builder go the moment this returns, not at the next collection.
    soup.decompose()
    return encoding, list(builder.links.urls)
