"""`lecture --monitor`: the lecture's stages served over a real WebSocket, watched by the
attach screen, read-only, with the crawl monitor's Origin check and token rule."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import aiohttp
import pytest
from hostile_peers import watched_lecture
from textual.geometry import Region
from tui_support import until

from crawlscope.cli.attach import is_lecture_url
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.lecture.live import Stage
from crawlscope.engine.lecture.replay import load_lecture
from crawlscope.engine.remote.client import Link
from crawlscope.engine.remote.lecture_client import RemoteLecture
from crawlscope.engine.remote.lecture_monitor import LectureMonitor, StageRelay
from crawlscope.engine.remote.monitor import listen
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.lecture.stage_watched import LectureWatchApp
from crawlscope.tui.waiting import wait_until
from helpers import run_cli

DEMO = DemoConfig(pages=20, links_per_page=4)


def two_workers(roots: Sequence[str]) -> CrawlConfig:
    return CrawlConfig(roots=tuple(roots), max_tasks=2)


def status(app: LectureWatchApp) -> str:
    widget = app.screen.query_one("#stage-status")
    return "\n".join(s.text for s in widget.render_lines(Region(0, 0, widget.size.width, 1)))


@contextlib.asynccontextmanager
async def watching(remote: RemoteLecture) -> AsyncIterator[RemoteLecture]:
    task = asyncio.create_task(remote.run())
    try:
        yield remote
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_the_lecturers_screen_is_served_step_by_step_read_only() -> None:
    relay = StageRelay()
    monitor = LectureMonitor(relay, listen("127.0.0.1", 0))
    app = LectureApp(["callbacks", "generators"], make_config=two_workers, demo=DEMO,
                     walk=True, opened=[relay.follow], services=[monitor])  # fmt: skip
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.stage is not None, "stage 1")
        stage = app.stage
        assert stage is not None
        async with watching(RemoteLecture(monitor.url)) as remote:
            for _ in range(6):
                before = stage.steps
                await pilot.press("n")
                await until(pilot, lambda b=before: stage.steps == b + 1 and not stage.wanted,
                            "a step")  # fmt: skip
                # What the viewer gets is the lecturer's screen: the very snapshot drawn.
                await until(pilot, lambda: remote.stage is not None and remote.stage == stage.shown,
                            f"step {stage.steps} at the viewer")  # fmt: skip
            assert remote.viewers and not remote.steer
            # The token does not steer a lecture: only the lecturer's keys act.
            assert remote.send("pause_all")
            await until(pilot, lambda: remote.refused == 1, "the refusal")
            assert "cannot be steered" in remote.errors[-1]
            await pilot.press("right")
            await until(pilot, lambda: app.stage is not None and app.stage.engine == "generators",
                        "stage 2")  # fmt: skip

            def at_stage_2() -> bool:
                return remote.stage is not None and remote.stage.engine.value == "generators"

            await until(pilot, at_stage_2, "stage 2 at the viewer")


async def test_a_lecture_monitor_keeps_the_crawl_monitors_door() -> None:
    relay = StageRelay()
    async with DemoServer(DEMO) as demo, LectureMonitor(relay, listen("127.0.0.1", 0)) as monitor:
        relay.follow(Stage("callbacks", two_workers([demo.url])))
        async with aiohttp.ClientSession() as session:
            for url, headers in (
                (monitor.view_url, {"Origin": "http://elsewhere.example"}),
                (monitor.view_url.replace("/lecture", "/lecture?token=wrong"), {}),
            ):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await session.ws_connect(url, headers=headers)
                assert refused.value.status == 403
            # A crawl's viewer at a lecture's monitor learns what it is, in words.
            crawl_viewer = RemoteLecture(monitor.view_url.replace("/lecture", "/crawl"))
            async with watching(crawl_viewer):
                await wait_until(lambda: crawl_viewer.link is Link.DROPPED, "refused")
                assert "404" in crawl_viewer.why


@contextlib.asynccontextmanager
async def watched_stage_2() -> AsyncIterator[tuple[Stage, LectureWatchApp]]:
    """Stage 2 crawling the demo site, stepped by the test, served by a lecture monitor;
    and a viewer of it, not yet running."""
    relay = StageRelay()
    async with DemoServer(DEMO) as demo, LectureMonitor(relay, listen("127.0.0.1", 0)) as monitor:
        stage = Stage("generators", two_workers([demo.url]))
        relay.follow(stage)
        stage.start(stepping=True)
        try:
            yield stage, LectureWatchApp(monitor.view_url)
        finally:
            stage.close()


async def test_attach_shows_a_lecture_read_only_and_q_leaves_it_running() -> None:
    async with watched_stage_2() as (stage, viewer):
        async with viewer.run_test(size=(120, 41)) as pilot:
            screen = viewer.watched
            await until(pilot, lambda: screen.shown is not None, "the first frame")
            assert "WATCHING" in status(viewer) and "stage 2" in status(viewer)
            assert "Stage 2: coroutines" in "".join(
                s.text for s in viewer.screen.query_one("#stage-intro").render_lines(
                    Region(0, 0, 118, 6)))  # fmt: skip
            for _ in range(30):
                while not stage.step_once(jump=True):
                    await pilot.pause(0.01)  # the demo site answers meanwhile
            await until(pilot, lambda: screen.shown == stage.snapshot(), "step 30 drawn")
            assert "step 30" in status(viewer) and "read-only" in str(
                viewer.screen.query_one("#watch-bar").render()
            )
            told = stage.snapshot().recent[-1].sentence
            narration = viewer.screen.query_one("#stage-narration")
            lines = narration.render_lines(Region(0, 0, narration.size.width, 8))
            assert told.split()[0] in " ".join(strip.text for strip in lines)
            await pilot.press("n", "p")  # nothing steers from here
            await pilot.press("q")
        assert not stage.over and stage.steps == 30


def test_attach_knows_a_lecture_by_its_url() -> None:
    assert is_lecture_url("ws://127.0.0.1:8765/lecture?token=x")
    assert not is_lecture_url("ws://127.0.0.1:8765/crawl")


def test_a_headless_lecture_cannot_be_monitored() -> None:
    result = run_cli("lecture", "--headless", "--record", "x.jsonl", "--monitor", "0")
    assert result.returncode == 2
    assert result.stderr.startswith("crawlscope: --monitor needs the screen")


async def test_a_lecture_in_a_terminal_is_watched_by_attach_in_another(tmp_path: Path) -> None:
    """The commands as a lecturer and a student run them, each in a real terminal (a pty):
    `lecture --monitor 0 --record F` prints its URL, `attach URL` follows its steps, q
    closes the viewer only, and the recording holds the steps taken."""
    record = tmp_path / "lecture.jsonl"
    async with watched_lecture(str(record)) as (lecturer, viewer):
        for _ in range(3):
            lecturer.press(b"n")
        await viewer.shows(b"step 3", what="the lecturer's third step")
        viewer.press(b"q")
        await wait_until(lambda: viewer.proc.poll() is not None, "the viewer closed")
        assert viewer.proc.returncode == 0
        assert lecturer.proc.poll() is None  # the lecture goes on
        lecturer.press(b"q")
        await wait_until(lambda: lecturer.proc.poll() is not None, "the lecture closed")
    recording = load_lecture(record)
    assert [snap.steps for snap in recording.steps] == [0, 1, 2, 3]


async def test_a_viewer_on_other_code_than_the_lecturers_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import crawlscope.engine.remote.lecture_monitor as lecture_monitor

    other = {"stage_generators.py": "0" * 64}
    monkeypatch.setattr(lecture_monitor, "digests", lambda: other)
    async with watched_stage_2() as (stage, viewer), viewer.run_test(size=(160, 41)) as pilot:
        screen = viewer.watched
        for _ in range(10):
            while not stage.step_once(jump=True):
                await pilot.pause(0.01)
        await until(pilot, lambda: screen.shown == stage.snapshot(), "step 10 drawn")
        assert viewer.remote.sources == other
        pane = viewer.screen.query_one("#stage-code")
        text = " ".join(s.text.strip("│ ") for s in pane.render_lines(
            Region(0, 0, pane.region.width, pane.region.height)))  # fmt: skip
        assert "the lecturer runs another stage_generators.py" in text
        await pilot.press("q")
