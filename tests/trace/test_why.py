"""`crawlscope why URL FILE` (issue 42): a crawl of a real local site recorded, then asked
about a URL robots.txt refused (the rule named), one cut by --max-depth (the depth named),
one reached through two redirects (the chain and its discovery path), one never seen (exit
1, the nearest seen listed), and one typed with escape codes (shown escaped)."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiohttp import web
from timing_support import Serve

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.trace.recording import Recorder
from helpers import html, run_cli


def moved(target: str) -> web.RequestHandler:  # type: ignore[type-arg]
    async def handler(_request: web.Request) -> web.Response:
        raise web.HTTPFound(target)

    return handler


async def robots(_request: web.Request) -> web.Response:
    return web.Response(text="User-agent: *\nDisallow: /private/\n")


@pytest.fixture
async def recorded(serve: Serve, tmp_path: Path) -> tuple[str, Path]:
    """The site crawled with --max-depth 2 and recorded: its root, and the recording."""
    root = await serve({
        "/": html('<a href="/a">a</a> <a href="/private/p">p</a> <a href="/r1">r</a>'),
        "/a": html('<a href="/a/b">b</a>'),
        "/a/b": html('<a href="/a/b/c">c</a>'),
        "/a/b/c": html("c"),
        "/private/p": html("p"),
        "/r1": moved("/r2"),
        "/r2": moved("/final"),
        "/final": html("final"),
        "/robots.txt": robots,
    })  # fmt: skip
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

    # As typed by a person: the same URL without its normal form still answers.
    typed = run_cli("why", root.upper().replace("HTTP://", "http://") + "final", str(path))
    assert typed.returncode == 0 and "fetched: 200" in typed.stdout


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
