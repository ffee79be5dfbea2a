"""The command line starts without the screen: `crawlscope --version`, `crawlscope crawl
--help` and a headless crawl import neither Textual, Rich nor textual-serve. Each runs in
a fresh interpreter with -X importtime, which names every module it imports."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web

from helpers import Handler

UI = ("textual", "rich", "textual_serve")


def imported(importtime: str) -> set[str]:
    """The modules an -X importtime report on stderr names."""
    return {
        line.rpartition("|")[2].strip()
        for line in importtime.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def ui_modules(importtime: str) -> list[str]:
    return sorted(name for name in imported(importtime) if name.split(".")[0] in UI)


async def crawlscope(cwd: Path, *args: str) -> tuple[int, str, str]:
    """`python -X importtime -m crawlscope ARGS` (not from a source tree: from `cwd`)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-X", "importtime", "-m", "crawlscope", *args,
        cwd=cwd, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), timeout=120)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_version_imports_no_ui(tmp_path: Path) -> None:
    code, out, err = await crawlscope(tmp_path, "--version")
    assert code == 0 and out.startswith("crawlscope ")
    assert ui_modules(err) == []
    assert "crawlscope.cli" in imported(err)  # the report was read, and it is this CLI's


async def test_crawl_help_imports_no_ui(tmp_path: Path) -> None:
    code, out, err = await crawlscope(tmp_path, "crawl", "--help")
    assert code == 0 and "--max-tasks" in out and "--monitor" in out and "--redis" in out
    assert ui_modules(err) == []


async def test_every_parser_is_built_without_the_ui(tmp_path: Path) -> None:
    # The completion script walks every command's parser, so every one of them is built.
    code, out, err = await crawlscope(tmp_path, "completion", "bash")
    assert code == 0
    for option in ("--fps", "--screenshot", "--allow-origin", "--secret-file", "--replay"):
        assert option in out
    assert ui_modules(err) == []


@pytest.mark.parametrize("quiet", [["-q"], []], ids=["quiet", "with-its-report"])
async def test_a_headless_crawl_imports_no_ui(
    tmp_path: Path, serve: Callable[[dict[str, Handler]], Awaitable[str]], quiet: list[str]
) -> None:
    fetched = asyncio.Event()

    async def page(_request: web.Request) -> web.Response:
        fetched.set()
        return web.Response(text="<a href='/next'>next</a>", content_type="text/html")

    url = await serve({"/": page, "/next": page})
    code, out, err = await crawlscope(tmp_path, "crawl", url, *quiet, "--ignore-robots")
    assert code == 0, err[-2000:]
    assert fetched.is_set()  # the crawl ran: the check spans its start and its first fetch
    # Without -q the report is printed, and its code ran too.
    assert ("*** Report ***" in out) is not bool(quiet), out[-2000:]
    assert "aiohttp" in imported(err)
    assert ui_modules(err) == []
    # No monitor and not the demo site: aiohttp's web server (a fiftieth of a second to
    # import) is never needed.
    assert "aiohttp.web" not in imported(err)


async def test_a_procs_parent_imports_no_crawler(
    tmp_path: Path, serve: Callable[[dict[str, Handler]], Awaitable[str]]
) -> None:
    # The parent of `--procs` only gathers records: the crawler, aiohttp and BeautifulSoup
    # (a third of a second of CPU) are its children's. -X importtime is the parent's
    # alone: a child is started without it.
    fetched: list[str] = []

    async def page(request: web.Request) -> web.Response:
        fetched.append(request.path)
        return web.Response(text="<a href='/next'>next</a>", content_type="text/html")

    url = await serve({"/": page, "/next": page})
    code, out, err = await crawlscope(tmp_path, "crawl", url, "--procs", "1", "--ignore-robots")
    assert code == 0, err[-2000:]
    assert sorted(fetched) == ["/", "/next"]
    assert "Done: 2" in out, out[-2000:]
    modules = imported(err)
    assert "crawlscope.engine.cluster.local" in modules  # the parent's report was read
    assert {"crawlscope.engine.crawler", "aiohttp", "bs4"} & modules == set()
