"""The code beside the live crawl (issue 41): `v` shows the engine's module with a cursor
on the line where each worker's own code waits; stage 3 of the lecture shows it from the
start where it fits; the worker detail (`enter`) shows the source around the frame ↑ ↓
choose, crawlscope's and aiohttp's alike. Every line drawn is compared with the module's
own file, never with text written here. The real TUI under Pilot on the demo site."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from tui_support import assert_cursors_match, config, crawler_of, drawn, file_line, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.observe.code import ROOTS, own_position, read_module
from crawlscope.engine.observe.workers import WorkerState, WorkerView
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.lecture.stage3 import AsyncioStage, LectureCrawl
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.code_pane import CodePane, worker_cursors
from crawlscope.tui.widgets.source_pane import SourcePane
from crawlscope.tui.widgets.worker_detail_screen import WorkerDetailScreen

pytestmark = pytest.mark.slow

SLOW = DemoConfig(pages=200, latency=0.3)


async def test_v_shows_where_each_workers_own_code_waits() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(4), demo=SLOW))
    async with app.run_test(size=(180, 45)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 3, "3 pages")
        pane = app.panels.query_one(CodePane)
        assert not pane.display  # the plain crawl: only on v
        await pilot.press("v")
        await until(pilot, lambda: pane.display and drawn(pane), "the pane")
        assert str(pane.border_title).startswith("engine/crawler.py")
        assert assert_cursors_match(pane, pane.drawn_from) >= 1
        # Moved to another worker, the pane centres on its line, named and bold.
        await pilot.press("down")
        await until(pilot, lambda: app.panels.selected() is not None
                    and app.panels.selected().id == 1, "worker 1")  # fmt: skip
        await pilot.press("v")
        assert not pane.display


async def test_stage_3_shows_the_code_from_the_start_where_it_fits() -> None:
    def two(roots: Sequence[str]) -> CrawlConfig:
        return CrawlConfig(roots=tuple(roots), max_tasks=2)

    app = AsyncioStage(LectureCrawl(make_config=two, demo=SLOW))
    async with app.run_test(size=(150, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 2, "2 pages")
        pane = app.panels.query_one(CodePane)
        # Drawn from the workers' rows: a frame before the first rows draws the module alone.
        await until(pilot, lambda: pane.display and drawn(pane) and bool(pane.drawn_from),
                    "the pane, unasked, with the workers' rows")  # fmt: skip
        # Titled by the module the highlighted worker waits in (the chapter's words for
        # its crawler); a worker at its host's gate waits in politeness.py.
        title = str(pane.border_title)
        assert title.startswith("engine/")
        if title.startswith("engine/crawler.py"):
            assert 'the chapter\'s "Coordinating Coroutines"' in title
        assert_cursors_match(pane, pane.drawn_from)
        await pilot.resize_terminal(120, 40)
        await until(pilot, lambda: not pane.display, "folded away when narrow")


async def test_the_worker_detail_opens_each_frame_in_the_pane() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(1), demo=DemoConfig(pages=200, latency=0.5)))
    async with app.run_test(size=(180, 48)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 2, "2 pages")
        await until(pilot, lambda: crawler.workers[0].state is WorkerState.HEADERS, "headers")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, WorkerDetailScreen), "the detail")
        screen = app.screen
        assert isinstance(screen, WorkerDetailScreen)
        pane = screen.query_one(SourcePane)

        def shows_chosen() -> bool:
            """The chosen frame's line, named w0, as its module's file has it."""
            if screen.chosen is None or not pane.display:
                return False
            function, module, number = screen.positions[screen.chosen]
            lines = drawn(pane)
            if number not in lines or str(pane.border_title) != f"{module} · {function}":
                return False
            margin, text = lines[number]
            return "w0" in margin and text == file_line(module, number).rstrip()[: len(text)]

        # It opens on the innermost frame of the engine's own code.
        await until(pilot, shows_chosen, "the engine's frame")
        assert screen.positions[screen.chosen][1] == "engine/crawler.py"
        # ↓ goes a frame in: aiohttp's, whose source is drawn as installed here.
        modules = []
        for _ in range(len(screen.positions)):
            await pilot.press("down")
            await until(pilot, shows_chosen, "the frame chosen")
            modules.append(screen.positions[screen.chosen][1])
        assert any(m.startswith("aiohttp/") for m in modules), modules
        await pilot.press("up")
        await until(pilot, shows_chosen, "back a frame")


class PaneApp(App[None]):
    def __init__(self, views: tuple[WorkerView, ...]) -> None:
        super().__init__()
        self.views = views

    def compose(self) -> ComposeResult:
        yield CodePane()

    def on_mount(self) -> None:
        self.query_one(CodePane).show_workers(self.views, 0, "none")


def view(worker: int, own_at: str) -> WorkerView:
    return WorkerView(worker, WorkerState.HEADERS, "http://h/", 0.0, 1, False, False, True,
                      "sleep tasks.py:1", own_at)  # fmt: skip


@pytest.mark.parametrize(
    "own_at",
    [
        "Crawler._work engine/../../../../etc/passwd.py:1",  # leaves the engine's folder
        "Crawler._work /etc/passwd.py:1",  # an absolute path
        "Crawler._work engine/crawler.py:999999",  # no such line
        "\x1b]0;PWNED\x07 engine/crawler.py:1",  # not a position
        "Crawler._work engine/nothing_here.py:3",  # no such module
    ],
)
async def test_a_peers_position_naming_no_line_of_ours_is_one_note(own_at: str) -> None:
    views = (view(0, own_at),)
    app = PaneApp(views)
    async with app.run_test(size=(120, 20)) as pilot:
        await pilot.pause()
        text = str(app.query_one(CodePane).render())
        first = text.splitlines()[0]
        assert "w0" in first and "this version" in first
        assert "\x1b" not in text and "root:" not in text
        assert not [line for line in text.splitlines()[1:] if line.startswith("▶")]
    cursors, foreign = worker_cursors(views)
    for cursor in cursors:  # what passed as a position still reads nothing outside
        assert read_module(cursor.file) is None or cursor.line > 10_000
    assert len(cursors) + len(foreign) == 1


def test_own_positions_are_read_under_the_engine_only() -> None:
    assert own_position("Crawler._work engine/crawler.py:286") == (
        "Crawler._work", "engine/crawler.py", 286)  # fmt: skip
    for text in ("", "engine/crawler.py:1", "f engine/crawler.py:x", "f a.txt:1", "f b.py:1234567"):
        assert own_position(text) is None, text
    assert read_module("engine/../../../etc/passwd.py") is None
    assert read_module("engine/crawler.py") is not None
    assert Path(ROOTS["engine"], "crawler.py").is_file()
