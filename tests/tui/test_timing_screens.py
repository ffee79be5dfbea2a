"""Timing on screen, through Textual's Pilot on a real crawl of a real server: the
workers table's step column, `enter` for a worker in full, `w` for the warnings, and
the count on the status line."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from textual.widgets import Static
from timing_support import DENSE_LINKS, Serve, dense_site
from tui_support import crawler_of, frames, screen_text, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.lints.lint import Lint, LintKind
from crawlscope.engine.observe.snapshot import OVER
from crawlscope.engine.timing.per_worker import Hold
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl, Recording
from crawlscope.tui.widgets.warnings_screen import WarningsScreen, warnings_text
from crawlscope.tui.widgets.worker_detail_screen import WorkerDetailScreen
from crawlscope.tui.widgets.workers_table import WorkersTable


def dense_config(roots: tuple[str, ...]) -> CrawlConfig:
    return CrawlConfig(roots=roots, max_tasks=3, max_links=DENSE_LINKS, max_pages=8)


def shown(app: CrawlScopeApp, widget_id: str) -> str:
    static = app.screen.query_one(widget_id, Static)
    return str(static.render())


async def test_enter_opens_a_worker_in_full_and_w_the_warnings(serve: Serve) -> None:
    base = (await serve(dense_site())).rstrip("/")
    app = CrawlScopeApp(LiveCrawl(roots=(base + "/",), make_config=dense_config))
    async with app.run_test(size=(140, 44)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: crawler.phase in OVER, "the crawl to end")
        blocked = [w for w in crawler.health.warnings if w.kind is LintKind.LOOP_BLOCKED]
        assert blocked
        table = app.query_one(WorkersTable)
        # The status line counts the warnings; the table shows each worker's steps.
        await until(pilot, lambda: "warning" in screen_text(app), "the count on top")
        assert f"⚠ {crawler.health.warning_count} warning" in screen_text(app)
        assert "step p99/max" in screen_text(app)
        # "p99/max" in any unit: on a loaded machine the p99 may be in µs and the max in s.
        figure = re.compile(r"\d(?:µs|ms|s)/\d")
        await until(pilot, lambda: figure.search(screen_text(app)), "a step figure")

        # enter: the worker that held the loop, in full.
        worker = blocked[0].worker
        assert worker is not None
        await until(pilot, lambda: table.row_count == 3, "the rows")
        table.move_cursor(worker)
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, WorkerDetailScreen), "the detail")
        text = shown(app, "#detail-text")
        assert f"worker {worker}" in text
        assert "await chain" in text and "steps on the loop" in text
        assert "time in each state" in text and "parsing" in text
        assert "/big" in text  # among its last fetches
        assert "≤" in text  # a histogram's rows
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, WorkerDetailScreen), "closed")

        # w: the warnings, newest first, naming the worker and the URL.
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, WarningsScreen), "the warnings")
        text = shown(app, "#warnings-text")
        assert "loop-blocked" in text
        assert f"worker {worker} held the loop" in text and base + "/big" in text
        assert "held the loop longest" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, WarningsScreen), "closed")
        await pilot.press("q")


async def test_the_detail_of_a_live_worker_shows_its_whole_await_chain(serve: Serve) -> None:
    base = (await serve(dense_site())).rstrip("/")
    app = CrawlScopeApp(LiveCrawl(roots=(base + "/",), make_config=dense_config, paused=True))
    async with app.run_test(size=(140, 44)) as pilot:
        await crawler_of(pilot)
        table = app.query_one(WorkersTable)
        await until(pilot, lambda: table.row_count == 3, "the rows")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, WorkerDetailScreen), "the detail")
        # Paused: from the worker's own coroutine down to the Event's future.
        await until(pilot, lambda: "Event.wait" in shown(app, "#detail-text"), "the paused chain")
        text = shown(app, "#detail-text")
        lines = [line.strip() for line in text.splitlines()]
        assert any(line.startswith("Crawler._work crawler.py:") for line in lines), text
        assert any(line.startswith("↳ Crawler._hold_if_paused") for line in lines), text
        assert any("Future pending" in line for line in lines), text


async def test_a_replay_shows_the_warnings_of_the_moment_it_shows(
    serve: Serve, tmp_path: Path
) -> None:
    path = tmp_path / "crawl.jsonl"
    base = (await serve(dense_site())).rstrip("/")
    crawler = Crawler(dense_config((base + "/",)))
    recorder = Recorder(crawler, path)
    await crawler.crawl()
    recorder.close()
    told = crawler.health.warning_count
    assert told
    replay = ReplayedCrawl.load(path)
    app = CrawlScopeApp(Recording(replay, path.name, paused=True))
    async with app.run_test(size=(140, 44)) as pilot:
        await frames(pilot, 2)
        assert "warning" not in screen_text(app)  # at the start: none yet
        await pilot.press("end")
        await until(pilot, lambda: f"⚠ {told} warning" in screen_text(app), "the count")
        await pilot.press("w")
        await until(pilot, lambda: isinstance(app.screen, WarningsScreen), "the warnings")
        text = shown(app, "#warnings-text")
        assert "loop-blocked" in text and base + "/big" in text
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, WarningsScreen), "closed")
        # Back to the start: the screen shows that moment's warnings, none.
        await pilot.press("home")
        await until(pilot, lambda: "⚠" not in screen_text(app), "no count at the start")
        # enter on a replayed worker: its row's figures, and no chain to walk.
        await pilot.press("end")
        await pilot.press("enter")
        await until(pilot, lambda: isinstance(app.screen, WorkerDetailScreen), "the detail")
        assert "a live crawl only" in shown(app, "#detail-text")


def test_a_peers_warning_is_drawn_literally() -> None:
    hostile = "worker 1 [bold red]held[/] \x1b[2J the loop \u202e"
    lint = Lint(LintKind.STUCK, -3.0, hostile, 1, url="http://h/\x07")
    hold = Hold(0.2, 1.0, 1, "[blink]parsing", "http://h/[x]", "f.py:1\x1b")
    snap = Crawler(CrawlConfig(roots=("http://127.0.0.1:9/",))).snapshot()
    text = warnings_text(replace(snap, warnings=(lint,), warning_count=1, holds=(hold,)))
    plain = text.plain
    assert "[bold red]held[/]" in plain and "[blink]parsing" in plain
    assert "\x1b" not in plain and "\u202e" not in plain and "\\x1b[2J" in plain
    assert "0:00.0" in plain  # a clock from before the crawl's start is drawn as its start
    assert not text.spans or all("blink" not in str(span.style) for span in text.spans)
