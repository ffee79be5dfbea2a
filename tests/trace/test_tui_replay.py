"""`crawlscope replay`: a recorded crawl played in the TUI, with its transport keys."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tui_support import frames, screen_text, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.exchange.plain import MOST_INT
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.trace.load import load_recording
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.engine.trace.validation import COUNT_KEYS
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl, Recording
from crawlscope.tui.widgets.replay_bar import ReplayBar
from helpers import run_cli


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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
        # The slowest speed: at 1x a loaded machine may take the whole (short) recording's
        # length to handle one key, and then the replay has ended, paused, before the check.
        for _ in range(3):
            await pilot.press("left_square_bracket")
        assert app.panels.speed == 0.25
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
        [sys.executable, "-m", "crawlscope", "replay", str(bad)],
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
    assert (
        set(replay.done) == set(crawler.ledger.done) and replay.accounting() == crawler.accounting()
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"t": 1, "kind": "state", "state": "waiting"}', "a state event without a worker"),
        ('{"t": 1, "kind": "fetch", "record": {"url": "http://a/"}}', "a fetch record without"),
        ('{"t": NaN, "kind": "end"}', "not a JSON line (NaN is not a JSON number)"),
        ("[" * 10**6 + "]" * 10**6, "JSON nested too deeply"),
    ],
    # Short ids: the test's id goes into the environment of the process it starts.
    ids=["no worker", "record lacks fields", "NaN", "nested arrays"],
)
@pytest.mark.slow
def test_a_bad_line_is_one_line_naming_it_and_exit_2(
    recording: Path, tmp_path: Path, line: str, message: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    start = recording.read_text(encoding="utf-8").splitlines()[0]
    bad.write_text(f"{start}\n{line}\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "crawlscope", "replay", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert result.stderr.startswith(f"crawlscope: {bad}:2: {message}")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


# The real command in a real terminal (a pty), with a bug injected into the app's frame.
CRASHING_APP = """
import sys
from crawlscope import cli
from crawlscope.tui.screens.panels import PanelsScreen

def crash(self, *_args):
    raise RuntimeError("injected crash")

PanelsScreen._tick = crash
sys.exit(cli.main(sys.argv[1:]))
"""


def run_in_a_terminal(*args: str, timeout: float = 60) -> tuple[int, str]:
    """Run the crashing command on a pseudo-terminal; its exit status and screen output."""
    primary, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    proc = subprocess.Popen(
        [sys.executable, "-c", CRASHING_APP, *args],
        stdin=secondary,
        stdout=secondary,
        stderr=secondary,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    os.close(secondary)
    output = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.1)
            if not ready:
                continue
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: every holder of the terminal has gone
                break
            if not chunk:
                break
            output += chunk
        return proc.wait(timeout=10), output.decode(errors="replace")
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)


@pytest.mark.parametrize("command", ["replay", "tui"])
@pytest.mark.slow
def test_a_crash_of_the_tui_exits_non_zero(recording: Path, command: str) -> None:
    args = ["replay", str(recording)] if command == "replay" else ["tui", "--pages", "5"]
    status, screen = run_in_a_terminal(*args)
    assert "injected crash" in screen
    assert status == 1


async def test_the_tui_says_when_its_recording_cannot_be_written() -> None:
    live = LiveCrawl(demo=DemoConfig(pages=40, latency=0.02), record="/dev/full")
    app = CrawlScopeApp(live)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.crawl_error is not None, "the crawl to fail")
        assert app.crawl_error is not None and "cannot write /dev/full" in app.crawl_error
        crawler = live.crawler
        assert crawler is not None and crawler.phase is Phase.STOPPED
        assert crawler.accounting().balanced
        await pilot.press("q")
    assert app.return_value == 1


# ---- every number of a recording has a range (issue 38 #5) -------------------------------


def with_numbers(recording: Path, change: Callable[[dict[str, Any]], None]) -> str:
    """The recording's text with `change` applied to each of its events (not the start)."""
    start, *lines = recording.read_text(encoding="utf-8").splitlines()
    events = [json.loads(line) for line in lines]
    for event in events:
        change(event)
    return "\n".join([start, *map(json.dumps, events)]) + "\n"


def set_counts(value: int) -> Callable[[dict[str, Any]], None]:
    def change(event: dict[str, Any]) -> None:
        for key in (*COUNT_KEYS, "pages"):
            if key in event:
                event[key] = value
        if event["kind"] == "hosts":
            event["count"] = value
        if event["kind"] == "fetch":
            record = event["record"]
            record.update({k: value for k, v in record.items() if type(v) is int})

    return change


def set_key(kind: str, key: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(event: dict[str, Any]) -> None:
        if event["kind"] == kind:
            (event["record"] if kind == "fetch" else event)[key] = value

    return change


HUGE = 10**400
OUT_OF_RANGE = {
    "done": (set_key("state", "done", HUGE), "'done' is not a count: 1000"),
    "seen": (set_key("state", "seen", HUGE), "'seen' is not a count: 1000"),
    "pages": (set_key("state", "pages", HUGE), "'pages' is not a count: 1000"),
    "hosts count": (set_key("hosts", "count", HUGE), "a hosts line's 'count' is wrong: 1000"),
    "size": (set_key("fetch", "size", HUGE), "the fetch record's 'size' is wrong: 1000"),
    "t_end": (set_key("fetch", "t_end", 1e300), "the fetch record's 't_end' is wrong: 1e+300"),
    "t": (set_key("state", "t", 1e300), "'t' is not a time in seconds: 1e+300"),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
@pytest.mark.slow
def test_a_number_out_of_its_range_is_one_line_naming_it(
    recording: Path, tmp_path: Path, case: str
) -> None:
    change, message = OUT_OF_RANGE[case]
    bad = tmp_path / "huge.jsonl"
    bad.write_text(with_numbers(recording, change), encoding="utf-8")
    result = run_cli("replay", str(bad))
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"crawlscope: {bad}:"), result.stderr
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


@pytest.mark.slow
async def test_every_count_at_the_edge_of_its_range_plays_to_the_end(
    recording: Path, tmp_path: Path
) -> None:
    # The largest count the checks let through is one every panel can draw and divide.
    edge = tmp_path / "edge.jsonl"
    edge.write_text(with_numbers(recording, set_counts(MOST_INT)), encoding="utf-8")
    replay = load_recording(edge)
    assert isinstance(replay, ReplayedCrawl)
    app = CrawlScopeApp(Recording(replay, edge.name, paused=False))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(5):
            await pilot.press("right_square_bracket")
        await until(pilot, lambda: not app.panels.playing, "the replay reaches its end")
        await frames(pilot, 2)
        assert f"{MOST_INT:,}" in screen_text(app)
        for key in ("h", "escape", "t", "escape"):  # the hosts and timing screens too
            await pilot.press(key)
            await frames(pilot, 2)
    assert app.return_code in (None, 0)


@pytest.mark.slow
async def test_a_paused_replays_timeline_is_drawn_once_then_left_alone(recording: Path) -> None:
    """Nothing moves in a paused replay: the timeline looks again at each tick and draws
    nothing new (a terminal is written to only when the screen changed); a key draws."""
    from crawlscope.tui.widgets.timeline_screen import TimelineScreen

    app, _ = replay_app(recording)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("end")
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "the timeline")
        screen = app.screen
        assert isinstance(screen, TimelineScreen)
        view = screen.view
        await until(pilot, lambda: view.frames >= 1, "a first frame")
        drawn, looked = view.frames, view.ticks
        await until(pilot, lambda: view.ticks >= looked + 3, "three more looks")
        assert view.frames == drawn
        await pilot.press("minus")
        assert view.frames == drawn + 1
