"""`crawlscope why URL FILE` (issue 42): a crawl of a real local site recorded, then asked
about a URL robots.txt refused (the rule named), one cut by --max-depth (the depth named),
one reached through two redirects (the chain and its discovery path), one never seen (exit
1, the nearest seen listed), and one typed with escape codes (shown escaped). The same
crawl kept in a --state file answers from it; and a crawl's own books answer for a page
its events leave out."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from aiohttp import web
from timing_support import Serve

from crawlscope.engine.cluster.sqlite_state import keep_state
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.why import why
from helpers import html, run_cli


def moved(target: str) -> web.RequestHandler:  # type: ignore[type-arg]
    async def handler(_request: web.Request) -> web.Response:
        raise web.HTTPFound(target)

    return handler


async def robots(_request: web.Request) -> web.Response:
    return web.Response(text="User-agent: *\nDisallow: /private/\n")


def site() -> dict[str, web.RequestHandler]:  # type: ignore[type-arg]
    return {
        "/": html('<a href="/a">a</a> <a href="/private/p">p</a> <a href="/r1">r</a>'),
        "/a": html('<a href="/a/b">b</a>'),
        "/a/b": html('<a href="/a/b/c">c</a>'),
        "/a/b/c": html("c"),
        "/private/p": html("p"),
        "/r1": moved("/r2"),
        "/r2": moved("/final"),
        "/final": html("final"),
        "/robots.txt": robots,
    }  # fmt: skip


@pytest.fixture
async def recorded(serve: Serve, tmp_path: Path) -> tuple[str, Path]:
    """The site crawled with --max-depth 2 and recorded: its root, and the recording."""
    root = await serve(site())
    path = tmp_path / "crawl.jsonl"
    crawler = Crawler(CrawlConfig(roots=(root,), max_depth=2))
    recorder = Recorder(crawler, path)
    await crawler.crawl()
    recorder.close()
    return root, path


@pytest.mark.slow
async def test_why_answers_for_each_kind_of_url(recorded: tuple[str, Path]) -> None:
    root, path = recorded
    refused = run_cli("why", root + "private/p", str(path))
    assert refused.returncode == 0, refused.stderr
    assert "not fetched: disallowed by robots.txt (Disallow: /private/)" in refused.stdout

    deep = run_cli("why", root + "a/b/c", str(path))
    assert deep.returncode == 0, deep.stderr
    assert "left unfetched: at depth 3, deeper than --max-depth 2" in deep.stdout
    # Its discovery path: the root, then each referrer, in order, with its depth.
    path_lines = [line.strip() for line in deep.stdout.split("discovered:")[1].splitlines()]
    assert path_lines[1:5] == [f"{root}  [depth 0] (a root)", f"{root}a  [depth 1]",
                               f"{root}a/b  [depth 2]", f"{root}a/b/c  [depth 3]"]  # fmt: skip

    final = run_cli("why", root + "final", str(path))
    assert final.returncode == 0, final.stderr
    assert "fetched: 200" in final.stdout
    assert f"reached by 2 redirects: {root}r1 -> {root}r2 -> {root}final" in final.stdout
    assert f"{root}r1  [depth 1]" in final.stdout  # the page the chain began at, linked
    assert "its time:" in final.stdout

    # As typed by a person: the same URL without its normal form still answers, and says
    # which page it is a duplicate of.
    typed_url = root.upper().replace("HTTP://", "http://") + "final#top"
    typed = run_cli("why", typed_url, str(path))
    assert typed.returncode == 0 and "fetched: 200" in typed.stdout
    assert typed.stdout.splitlines()[:2] == [
        f"{root}final",
        f"  as typed, {typed_url}: the same page once normalised, fetched once",
    ]


@pytest.mark.slow
async def test_a_url_never_seen_exits_1_with_the_nearest_and_escapes_shown(
    recorded: tuple[str, Path],
) -> None:
    root, path = recorded
    never = run_cli("why", root + "fina", str(path))
    assert never.returncode == 1
    assert "never seen in this crawl" in never.stdout
    nearest = never.stdout.split("nearest seen:")[1]
    assert f"{root}final" in nearest
    hostile = run_cli("why", root + "\x1b]0;PWNED\x07", str(path))
    assert hostile.returncode == 1
    assert "\x1b" not in hostile.stdout and "\\x1b]0;PWNED" in hostile.stdout
    # Not a recording: one line and exit 2.
    junk = path.parent / "junk.jsonl"
    junk.write_text("not json\n")
    bad = run_cli("why", root, str(junk))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


@pytest.mark.slow
async def test_why_reads_a_state_file(serve: Serve, tmp_path: Path) -> None:
    root = await serve(site())
    state = tmp_path / "crawl.db"
    await keep_state(Crawler(CrawlConfig(roots=(root,), max_depth=2)), state).crawl()
    final = run_cli("why", root + "final", str(state))
    assert final.returncode == 0, final.stderr
    assert "  fetched (a state file keeps no status: a --record of the crawl does)" in final.stdout
    deep = run_cli("why", root + "a/b/c", str(state))
    assert "  still queued: not fetched yet (or left by --max-depth" in deep.stdout
    path_lines = [line.strip() for line in deep.stdout.split("discovered:")[1].splitlines()]
    assert path_lines[1:5] == [f"{root}  [depth 0] (a root)", f"{root}a  [depth 1]",
                               f"{root}a/b  [depth 2]", f"{root}a/b/c  [depth 3]"]  # fmt: skip
    refused = run_cli("why", root + "private/p", str(state))
    assert "  not fetched: left alone by the crawl's rules" in refused.stdout
    never = run_cli("why", root + "fina", str(state))
    assert never.returncode == 1 and f"{root}final" in never.stdout.split("nearest seen:")[1]
    # The file's text is shown escaped, as a recording's is.
    with sqlite3.connect(state) as db:
        db.execute("INSERT INTO urls VALUES (?, 0, 1, ?, 'queued')", (root + "\x1b[2J", root))
    hostile = run_cli("why", root + "\x1b[2J", str(state))
    assert hostile.returncode == 0 and "\x1b" not in hostile.stdout
    assert "\\x1b[2J" in hostile.stdout
    # A SQLite database that is not a crawl's: one line, exit 2.
    other = tmp_path / "other.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    bad = run_cli("why", root, str(other))
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "no urls table" in bad.stderr


async def test_a_crawls_books_answer_for_what_its_events_leave_out(serve: Serve) -> None:
    root = await serve(site())
    crawler = Crawler(CrawlConfig(roots=(root,), max_depth=2))
    await crawler.crawl()
    books = crawler.url_books()
    record = crawler.ledger.done[root + "a/b"]
    answer = why(root + "a/b", (), 2, books=books)  # no events: a past that began later
    assert answer.found
    assert f"  fetched: 200 by worker {record.worker}, 1 try" in answer.lines[1]
    assert f"{root}a  [depth 1]" in [line.strip() for line in answer.lines]
    deep = why(root + "a/b/c", (), 2, books=books)
    assert "  left unfetched: at depth 3, deeper than --max-depth 2" in deep.lines
    refused = why(root + "private/p", (), books=books)
    assert "  not fetched: disallowed by robots.txt (Disallow: /private/)" in refused.lines
