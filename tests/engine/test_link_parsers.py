"""parse_links keeps its lxml parsers from page to page: what that must not change."""

from __future__ import annotations

import asyncio
import gc
import json
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator

import pytest
from lxml import etree  # type: ignore[import-untyped]

from crawlscope.engine import crawler as crawler_module
from crawlscope.engine import links
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.links import parse_links
from helpers import Handler, html


def page(n: int, count: int = 30) -> bytes:
    body = b"".join(b'<a href="/p%d/%d">x</a>' % (n, i) for i in range(count))
    return b"<html><head><title>t</title></head><body>" + body + b"</body></html>"


def expected(n: int, count: int = 30) -> list[str]:
    return [f"http://h/p{n}/{i}" for i in range(count)]


@pytest.fixture
def saved_garbage() -> Iterator[list[object]]:
    """What the collector finds unreachable from here on, kept instead of freed."""
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()  # no collection before the test's own, which it asks for
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        yield gc.garbage
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        if enabled:
            gc.enable()


# Run in a process of its own: in the test run's process, what other tests left behind
# (a crawl's parse threads, the threads of an event loop's executor) ends at moments of
# its own, and frees its own cycles inside whatever window is being measured.
MEASURE_GARBAGE = """
import gc, json, sys, threading
from crawlscope.engine.links import parse_links

def page(n):
    return b"<html><body>" + b"".join(b'<a href="/p%d/%d">x</a>' % (n, i) for i in range(30))

def parse(n):
    assert parse_links(page(n), "http://h/", "utf-8")[1][0] == f"http://h/p{n}/0"

parse(0)  # what is made once (imports, caches, the first parser) is not a parse's garbage
gc.collect()
gc.disable()
gc.set_debug(gc.DEBUG_SAVEALL)
exec(sys.argv[1])
gc.collect()
print(json.dumps([type(o).__qualname__ for o in gc.garbage]))
"""


def garbage_left_by(code: str) -> list[str]:
    """The kinds of what `code` leaves in cycles, run in a fresh Python process."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE_GARBAGE, code], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    kinds: list[str] = json.loads(done.stdout)
    return kinds


def test_a_parse_leaves_nothing_for_the_collector() -> None:
    # A crawl parses thousands of pages; what a parse leaves in cycles is what the young
    # collections walk (30 objects a page when each page had its own parser and soup).
    left = garbage_left_by("for n in range(50): parse(n)")
    assert not left, f"{len(left)} objects in cycles: {sorted(set(left))}"


def test_a_thread_that_parsed_and_ended_leaves_nothing_for_the_collector() -> None:
    # A crawl parses its big pages in threads that end after it, at a moment of their own:
    # inside a later parse's window, say, or in a young collection of the next crawl.
    code = """
threads = [threading.Thread(target=parse, args=(n,)) for n in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
"""
    left = garbage_left_by(code)
    assert not left, f"{len(left)} objects in cycles: {sorted(set(left))}"


def parsers_in(garbage: list[object]) -> list[object]:
    return [o for o in garbage if isinstance(o, etree.HTMLParser | links._TagTarget)]


async def test_a_crawls_parse_threads_leave_no_parser_for_the_collector(
    serve: Callable[[dict[str, Handler]], Awaitable[str]], saved_garbage: list[object]
) -> None:
    big = "<p>" + "filler " * (crawler_module.PARSE_IN_THREAD_BYTES // 6) + "</p><a href=/x>x</a>"
    pages = 4
    root = await serve({f"/big/{i}": html(big) for i in range(pages)})
    roots = tuple(f"{root}big/{i}" for i in range(pages))
    crawler = Crawler(CrawlConfig(roots=roots, max_tasks=pages, max_pages=pages))
    await crawler.crawl()
    assert all(crawler.ledger.done[url].num_urls == 1 for url in roots)
    # The crawl lets its parse threads end by themselves; wait for them to have ended.
    deadline = time.monotonic() + 60
    while any(t.name.startswith("crawlscope-parse") for t in threading.enumerate()):
        assert time.monotonic() < deadline, "the crawl's parse threads never ended"
        await asyncio.sleep(0.01)
    gc.collect()
    # The crawl itself leaves cycles (asyncio's, aiohttp's): the parsers must not be any.
    left = parsers_in(saved_garbage)
    assert not left, f"{len(left)} parsers and targets in cycles"


def test_a_kept_parser_begins_each_page_afresh() -> None:
    # Pages that end inside a raw-text element, a comment, a tag or a <base>'s reach: the
    # next page parsed by the same parser must not be read as their continuation.
    openers = [b"<textarea>", b"<!--", b'<a title="', b"<script>", b"<base href=/other/>"]
    for opener in openers:
        assert parse_links(b"<a href=/a>" + opener, "http://h/", "utf-8")[1] == ["http://h/a"]
        assert parse_links(b"<a href=/b>", "http://h/", "utf-8")[1] == ["http://h/b"], opener


def test_a_parse_that_failed_halfway_leaves_the_next_page_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    take = links._PageLinks.take

    def failing(self: links._PageLinks, href: str) -> None:
        if href == "/boom":
            raise RuntimeError("boom")
        take(self, href)

    monkeypatch.setattr(links._PageLinks, "take", failing)
    with pytest.raises(RuntimeError, match="boom"):
        parse_links(b"<a href=/boom><textarea><a href=/lost>", "http://h/", "utf-8")
    assert parse_links(b"<a href=/b>", "http://h/", "utf-8")[1] == ["http://h/b"]


def test_pages_parsed_in_several_threads_at_once_keep_their_own_links() -> None:
    # Big pages are parsed in a thread pool while the loop's thread parses small ones;
    # one parser fed by two threads would mix their pages.
    failures: list[str] = []
    start = threading.Barrier(4)

    def parse_many(worker: int) -> None:
        start.wait()
        for round_ in range(200):
            n = worker * 1000 + round_
            found = parse_links(page(n), "http://h/", "utf-8")[1]
            if found != expected(n):
                failures.append(f"thread {worker}, page {n}: {found[:3]}...")

    threads = [threading.Thread(target=parse_many, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures[:3]


def test_a_parser_is_only_fed_by_the_thread_that_made_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # lxml points a parser at the feeding thread's string dictionary only after libxml2
    # has reset it against the old one, outside the GIL: a parser handed to another
    # thread while its maker parses puts both in one dictionary at once (links.py).
    made_by: dict[int, int] = {}
    kept: list[object] = []  # so that no parser's id is reused by another
    handed: list[str] = []
    take = links._take_parser

    def watched(encoding: str | None) -> links._Kept:
        taken = take(encoding)
        kept.append(taken.parser)
        me = threading.get_ident()
        maker = made_by.setdefault(id(taken.parser), me)
        if maker != me:
            handed.append(f"a parser made by thread {maker} taken by {me}")
        return taken

    monkeypatch.setattr(links, "_take_parser", watched)
    monkeypatch.setattr(links, "_idle", {})

    def parse_pages(first: int) -> None:
        for n in range(first, first + 5):
            assert parse_links(page(n), "http://h/", "utf-8")[1] == expected(n)

    parse_pages(0)  # this thread's parser, idle once its page is done
    for first in (100, 200, 300):  # each thread starts while another's parser is idle
        thread = threading.Thread(target=parse_pages, args=(first,))
        thread.start()
        thread.join()
    parse_pages(400)
    assert not handed, handed


# Pages in encodings as servers name them, with a word of that script in a link. libxml2
# knows some by other names than Python's (euc_jp) and some not at all (ISO-2022-JP).
ENCODED = [("utf-8", "é"), ("latin-1", "é"), ("windows-1252", "é"), ("koi8-r", "дом"),
           ("iso-8859-5", "дом"), ("windows-1251", "дом"), ("utf-16", "é"), ("shift_jis", "中"),
           ("EUC-JP", "中"), ("euc-kr", "한"), ("iso-2022-jp", "中"), ("gb2312", "中"),
           ("big5", "中"), ("iso-8859-7", "λ"), ("macintosh", "é"), ("utf-16le", "é")]  # fmt: skip


def test_pages_in_many_encodings_each_give_their_own_links() -> None:
    # Twice over, and more encodings than there are kept parsers: each parse still decodes
    # its page as the page's header says.
    for _ in range(2):
        for name, word in ENCODED:
            body = f'<a href="/{word}">x</a>'.encode(name)
            found = parse_links(body, "http://h/", name)[1]
            assert found == [links.normalize(f"/{word}", "http://h/")], name


def test_a_character_cut_between_two_feeds_is_decoded_whole() -> None:
    # Fed a slice at a time, a page whose link has a two-byte character across the first
    # slice's end.
    head = b'<a href="/'
    body = b"x" * (links.FEED_BYTES - 1 - len(head)) + head + '中中">y</a>'.encode("euc-jp")
    with pytest.raises(UnicodeDecodeError, match="incomplete multibyte"):
        body[: links.FEED_BYTES].decode("euc-jp")
    assert parse_links(body, "http://h/", "euc-jp")[1] == [links.normalize("/中中", "http://h/")]
