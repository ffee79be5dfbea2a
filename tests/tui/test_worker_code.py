"""The code beside a live worker (issue 41): `enter` on a worker shows, under each frame of
its await chain, the line of source that frame stands on, crawlscope's and aiohttp's alike,
read from the modules themselves. The real TUI under Pilot, crawling the demo site."""

from __future__ import annotations

import itertools
import re
from dataclasses import replace
from pathlib import Path

import aiohttp
from textual.widgets import Static
from tui_support import config, crawler_of, until

from crawlscope.engine.observe.code import module_path, read_module
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.worker_detail_screen import WorkerDetailScreen, detail_text

ENGINE = Path(__file__).parents[2] / "engine"
AIOHTTP = Path(aiohttp.__file__).parent
FRAME = re.compile(r"^\s*(?:↳ )?(\S+) (\S+\.py):(\d+)$")
CODE = re.compile(r"^\s*(\d+) │ (.*)$")


def frames_with_code(text: str) -> list[tuple[str, str, int, str]]:
    """(function, file, line, the code drawn under it) for each frame of the chain."""
    lines = text.splitlines()
    found = []
    for here, below in itertools.pairwise(lines):
        frame, code = FRAME.match(here), CODE.match(below)
        if frame and code and int(code.group(1)) == int(frame.group(3)):
            found.append((frame.group(1), frame.group(2), int(frame.group(3)), code.group(2)))
    return found


def line_of(path: Path, number: int) -> str:
    return path.read_text().splitlines()[number - 1].strip()


async def test_enter_shows_the_line_each_frame_of_a_worker_waits_on() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=DemoConfig(pages=200, latency=0.3)))
    async with app.run_test(size=(160, 48)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 2, "2 pages")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, WorkerDetailScreen), "the detail")

        def drawn() -> list[tuple[str, str, int, str]]:
            static = app.screen.query_one("#detail-text", Static)
            return frames_with_code(str(static.render()))

        # While the worker awaits a response: its own frames and aiohttp's, each with
        # the line it stands on, as the module has it.
        def own_and_aiohttps() -> bool:
            files = [f[1] for f in drawn()]
            return "crawler.py" in files and any((AIOHTTP / f).exists() for f in files)

        await until(pilot, own_and_aiohttps, "frames of its own and aiohttp's, with code")
        frames = drawn()
        for function, file, number, code in frames:
            if file == "crawler.py":
                assert code == line_of(ENGINE / "crawler.py", number), function
            elif (AIOHTTP / file).exists():
                assert code == line_of(AIOHTTP / file, number), function
        assert frames[0][0] == "Crawler._work"


def test_only_modules_under_the_known_roots_are_read() -> None:
    own = read_module("engine/crawler.py")
    assert own is not None and own.lines == tuple((ENGINE / "crawler.py").read_text().splitlines())
    assert module_path(str(ENGINE / "crawler.py")) == "engine/crawler.py"
    assert module_path(str(AIOHTTP / "client.py")) == "aiohttp/client.py"
    assert read_module("aiohttp/client.py") is not None
    assert module_path("/etc/passwd") == ""
    for hostile in ("engine/../../etc/passwd", "/etc/passwd", "engine/", "aiohttp/../x.py",
                    "etc/passwd.py", "engine/crawler.py\x00", "engine/../README.md",
                    "engine/nothing_here.py", "asyncio/../os.py",
                    "aiohttp/../yarl/__init__.py"):  # fmt: skip
        assert read_module(hostile) is None, hostile


async def test_a_position_from_another_process_shows_the_line_shipped_here() -> None:
    """A viewer over a monitor has a worker's position ("Crawler._work crawler.py:286"),
    not its task: crawlscope's own modules are read from the viewer's copy."""
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=DemoConfig(pages=200, latency=0.3)))
    async with app.run_test(size=(160, 48)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 2, "2 pages")
        view = crawler.snapshot().workers[0]

    def code_under(suspended_at: str) -> list[tuple[int, str]]:
        shown = replace(view, suspended_at=suspended_at)
        text = detail_text(view.id, shown, None, [], 0.0).plain
        found = (CODE.match(line) for line in text.splitlines())
        return [(int(m.group(1)), m.group(2)) for m in found if m]

    # The line the position names, from this side's own copy of the module.
    work = ENGINE / "crawler.py"
    number = next(i for i, line in enumerate(work.read_text().splitlines(), 1)
                  if "lease = await self.q.get()" in line)  # fmt: skip
    assert code_under(f"Crawler._work crawler.py:{number}") == [(number, line_of(work, number))]
    # What only the other side has is never looked for: a module not ours, a name that is
    # not one file of ours, a path.
    for elsewhere in ("ClientSession._request client.py:612", "App.run app.py:10",
                      "x ../../etc/passwd.py:1", "Crawler._work crawler.py:999999"):  # fmt: skip
        assert code_under(elsewhere) == [], elsewhere
