"""parse_links keeps its lxml parsers from page to page: what that must not change."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from crawlscope.engine import links
from crawlscope.engine.links import parse_links


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


def test_a_parse_leaves_nothing_for_the_collector(saved_garbage: list[object]) -> None:
    # A crawl parses thousands of pages; what a parse leaves in cycles is what the young
    # collections walk (30 objects a page when each page had its own parser and soup).
    for n in range(50):
        assert parse_links(page(n), "http://h/", "utf-8")[1] == expected(n)
    gc.collect()
    kinds = sorted({type(o).__qualname__ for o in saved_garbage})
    assert not saved_garbage, f"{len(saved_garbage)} objects in cycles: {kinds}"


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
