"""`crawlscope replay`: a recorded crawl played in the TUI, with its transport keys."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from tui_support import frames, screen_text, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.snapshot import Phase
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl, Recording
from crawlscope.tui.widgets.replay_bar import ReplayBar


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short real crawl of the demo site, recorded."""
    path = tmp_path_factory.mktemp("replay") / "crawl.jsonl"

    async def record() -> None:
        async with DemoServer(DemoConfig(pages=40, latency=0.01)) as server:
            crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=3))
            recorder = Recorder(crawler, path)
            await crawler.crawl()
            recorder.close()

    asyncio.run(record())
    return path


def replay_app(path: Path, paused: bool = True) -> tuple[CrawlScopeApp, ReplayedCrawl]:
    replay = ReplayedCrawl.load(path)
    return CrawlScopeApp(Recording(replay, path.name, paused=paused)), replay


async def test_a_replay_plays_to_the_end_and_stops_there(recording: Path) -> None:
    app, replay = replay_app(recording, paused=False)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(5):
            await pilot.press("right_square_bracket")
        assert app.panels.speed == 8.0
        await until(pilot, lambda: not app.panels.playing, "the replay reaches its end")
        assert replay.position == replay.duration and replay.phase is Phase.FINISHED
        await frames(pilot, 2)
        text = screen_text(app)
        assert "FINISHED" in text and "❚❚ PAUSE" in text and "8x" in text
        assert f"event {len(replay.events)}/{len(replay.events)}" in text


async def test_stepping_moves_exactly_one_event(recording: Path) -> None:
    app, replay = replay_app(recording)
    async with app.run_test(size=(120, 40)) as pilot:
        await frames(pilot, 3)
        assert replay.index == 0 and not app.panels.playing
        await pilot.press("full_stop")
        assert replay.index == 1
        await pilot.press("right", "right")
        assert replay.index == 3
        assert replay.position == replay.event_times()[2]
        await pilot.press("comma")
        assert replay.index == 2
        await pilot.press("left", "left", "left")  # not before the start
        assert replay.index == 0
        await frames(pilot, 1)
        assert "event 0/" in screen_text(app)


async def test_seeking_back_shows_the_earlier_state(recording: Path) -> None:
    app, replay = replay_app(recording)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("end")
        assert replay.phase is Phase.FINISHED
        done_at_end = len(replay.done)
        await frames(pilot, 2)
        assert "FINISHED" in screen_text(app)
        for _ in range(5):
            await pilot.press("pageup")
        assert replay.position == pytest.approx(replay.duration / 2)
        assert 0 < len(replay.done) < done_at_end
        await pilot.press("home")
        assert replay.index == 0 and not replay.done
        await frames(pilot, 2)
        assert "FINISHED" not in screen_text(app)
        await pilot.press("pagedown")
        assert replay.position == pytest.approx(replay.duration / 10)


async def test_the_live_controls_are_off_in_a_replay(recording: Path) -> None:
    app, _ = replay_app(recording)
    async with app.run_test(size=(120, 40)) as pilot:
        await frames(pilot, 1)
        for action in ("pause_all", "pause_worker", "cancel_worker", "add_worker", "slowmo"):
            assert not app.panels.action_applies(action), action
        assert app.panels.action_applies("toggle_play")
        await pilot.press("p")
        assert app.panels.playing
        await pilot.press("space")
        assert not app.panels.playing
        assert app.query_one(ReplayBar).display
        await pilot.press("q")
    assert app.return_code == 0


async def test_a_live_crawl_has_no_transport(recording: Path) -> None:
    app = CrawlScopeApp(LiveCrawl(demo=DemoConfig(pages=5)))
    async with app.run_test(size=(120, 40)) as pilot:
        await frames(pilot, 1)
        assert not app.panels.action_applies("toggle_play")
        assert not app.query(ReplayBar)


def test_a_bad_recording_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "fetch"}\n')
    result = subprocess.run(
        [sys.executable, "-m", "crawlscope.tui", "replay", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert result.stderr == f"crawlscope: {bad} is not a crawlscope recording (no start line)\n"


async def test_the_tui_records_what_it_shows(tmp_path: Path) -> None:
    path = tmp_path / "tui.jsonl"
    live = LiveCrawl(demo=DemoConfig(pages=20), record=str(path))
    app = CrawlScopeApp(live)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            pilot,
            lambda: live.crawler is not None and live.crawler.phase is Phase.FINISHED,
            "the crawl ends",
        )
        crawler = live.crawler
        assert crawler is not None
        await pilot.press("q")
    replay = ReplayedCrawl.load(path)
    replay.seek(replay.duration)
    assert replay.phase is Phase.FINISHED
    assert set(replay.done) == set(crawler.done) and replay.accounting() == crawler.accounting()
