"""A lecture recorded as it is stepped replays to the same screens: each stage crawls a
real demo site (aiohttp on 127.0.0.1) in a Pilot-driven LectureApp with a recorder, and
the recording is then played in the replay app, whose panels are compared, step by
step, with what the live run drew."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from textual.geometry import Region
from textual.pilot import Pilot
from tui_support import until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.lecture.recording import LectureRecorder
from crawlscope.engine.lecture.replay import load_lecture
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.lecture.stage_replay import LectureReplayApp
from crawlscope.tui.lecture.widgets.traceback_screen import TracebackScreen
from crawlscope.tui.widgets.replay_bar import ReplayBar

DEMO = DemoConfig(pages=20, links_per_page=4)
# The code pane too: its cursors come from the positions each step recorded.
PANELS = ("#stage-main", "#stage-code", "#stage-queue", "#stage-narration")
STEPS = 12  # a stage's first steps: robots.txt, connections, a page read and parsed
LIVE = (160, 40)  # wide enough for the code pane
REPLAY = (160, 41)  # one line more, for the transport bar: the panels are of one size


def two_workers(roots: Sequence[str]) -> CrawlConfig:
    return CrawlConfig(roots=tuple(roots), max_tasks=2)


def drawn(screen: object) -> tuple[str, ...]:
    """Each panel's text as drawn."""
    from textual.screen import Screen

    assert isinstance(screen, Screen)
    shown = []
    for panel in PANELS:
        widget = screen.query_one(panel)
        strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
        shown.append("\n".join(strip.text for strip in strips))
    return tuple(shown)


def status(screen: object) -> str:
    from textual.screen import Screen

    assert isinstance(screen, Screen)
    widget = screen.query_one("#stage-status")
    return "\n".join(s.text for s in widget.render_lines(Region(0, 0, widget.size.width, 1)))


async def record_steps(pilot: Pilot[str], app: LectureApp, seen: list[tuple[str, ...]]) -> None:
    """n, STEPS times; after each, the panels as drawn (the stage's first step first)."""
    stage = app.stage
    assert stage is not None
    await until(pilot, lambda: "step 0" in status(app.screen), "the first screen drawn")
    seen.append(drawn(app.screen))
    for _ in range(STEPS):
        before = stage.steps
        await pilot.press("n")
        await until(pilot, lambda b=before: stage.steps == b + 1 and not stage.wanted, "a step")
        await until(pilot, lambda: f"step {stage.steps} " in status(app.screen), "it drawn")
        seen.append(drawn(app.screen))


async def test_a_recorded_lecture_replays_to_the_same_screens(tmp_path: Path) -> None:
    path = tmp_path / "lecture.jsonl"
    recorder = LectureRecorder(path)
    live: list[tuple[str, ...]] = []
    app = LectureApp(
        ["callbacks", "generators"],
        make_config=two_workers,
        demo=DEMO,
        walk=True,
        reproducible=True,
        opened=[recorder.follow],
    )
    async with app.run_test(size=LIVE) as pilot:
        await until(pilot, lambda: app.stage is not None, "stage 1")
        await record_steps(pilot, app, live)
        await pilot.press("right")
        await until(pilot, lambda: app.stage is not None and app.stage.engine == "generators",
                    "stage 2")  # fmt: skip
        await record_steps(pilot, app, live)
        await pilot.press("q")
    recorder.close()
    assert recorder.failure is None
    recording = load_lecture(path)
    assert [s.engine.value for s in recording.steps] == ["callbacks"] * (STEPS + 1) + [
        "generators"
    ] * (STEPS + 1)
    assert [s.steps for s in recording.steps] == [*range(STEPS + 1)] * 2
    assert len(set(live)) > STEPS  # the screens differ from step to step: a real comparison

    replay = LectureReplayApp(recording, paused=True, reproducible=True)
    async with replay.run_test(size=REPLAY) as pilot:
        screen = replay.replay
        for index, expected in enumerate(live):
            if index:
                await pilot.press("full_stop")
            await until(pilot, lambda i=index: screen.index == i and screen.shown is not None
                        and screen.shown.steps == recording.steps[i].steps
                        and screen.shown.engine == recording.steps[i].engine,
                        f"step {index} of the replay")  # fmt: skip
            await until(pilot, lambda e=expected: drawn(replay.screen) == e,
                        f"the replay's step {index} drawn as the live one was")  # fmt: skip
        assert "stage 2" in status(replay.screen)
        # Back across the stages: the screen is composed again for stage 1.
        await pilot.press("home")
        await until(pilot, lambda: drawn(replay.screen) == live[0], "the first step again")
        assert "stage 1" in status(replay.screen) and "REPLAY" in status(replay.screen)
        await pilot.press("end")
        await until(pilot, lambda: drawn(replay.screen) == live[-1], "the last step")
        await pilot.press("comma")
        await until(pilot, lambda: drawn(replay.screen) == live[-2], "one step back")


async def test_a_replay_plays_by_itself_to_its_end(tmp_path: Path) -> None:
    path = tmp_path / "lecture.jsonl"
    recorder = LectureRecorder(path)
    app = LectureApp(["callbacks"], make_config=two_workers, demo=DEMO, stepping=False,
                     opened=[recorder.follow])  # fmt: skip
    async with app.run_test(size=LIVE) as pilot:
        await until(pilot, lambda: app.stage is not None and app.stage.over, "the crawl's end")
    recorder.close()
    recording = load_lecture(path)
    assert recording.steps[-1].over and recording.steps[-1].accounting.balanced
    replay = LectureReplayApp(recording)
    async with replay.run_test(size=REPLAY) as pilot:
        await pilot.press("right_square_bracket", "right_square_bracket", "right_square_bracket")
        await until(pilot, lambda: replay.replay.index == len(recording.steps) - 1, "the end")
        await until(pilot, lambda: "FINISHED" in status(replay.screen), "the end said")
        assert "The crawl is over" in drawn(replay.screen)[3]


async def test_a_replays_clock_moves_while_the_lecturer_waited_before_a_step(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lecture.jsonl"
    recorder = LectureRecorder(path)
    app = LectureApp(["callbacks"], make_config=two_workers, demo=DEMO, walk=True,
                     reproducible=True, opened=[recorder.follow])  # fmt: skip
    async with app.run_test(size=LIVE) as pilot:
        await record_steps(pilot, app, [])
        await pilot.press("q")
    recorder.close()
    # The lecturer read the intro for 30 s before the first n.
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for event in lines[2:]:
        if "t" in event:
            event["t"] += 30.0
    path.write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    recording = load_lecture(path)
    replay = LectureReplayApp(recording)
    async with replay.run_test(size=REPLAY) as pilot:
        bar = replay.screen.query_one(ReplayBar)
        await until(pilot, lambda: bar._view is not None and bar._view.position > 0.5,
                    "the clock past 0:00.5")  # fmt: skip
        assert replay.replay.index == 0  # still before the first step, and the clock runs


async def test_t_is_recorded_and_a_replays_t_shows_the_same_traceback(tmp_path: Path) -> None:
    path = tmp_path / "lecture.jsonl"
    recorder = LectureRecorder(path)
    app = LectureApp(["generators"], make_config=two_workers, demo=DEMO, walk=True,
                     opened=[recorder.follow])  # fmt: skip
    async with app.run_test(size=LIVE) as pilot:
        await record_steps(pilot, app, [])
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TracebackScreen), "the traceback")
        shown = app.screen
        assert isinstance(shown, TracebackScreen)
        await pilot.press("escape")
        await pilot.press("q")
    recorder.close()
    recording = load_lecture(path)
    assert recording.tracebacks and recording.tracebacks[-1][2] == shown.traceback
    replay = LectureReplayApp(recording, paused=True)
    async with replay.run_test(size=REPLAY) as pilot:
        screen = replay.replay
        await pilot.press("t")  # at the first step: no traceback was shown yet
        await pilot.pause()
        assert not isinstance(replay.screen, TracebackScreen)
        await pilot.press("end")
        await until(pilot, lambda: screen.index == len(recording.steps) - 1, "the last step")
        await pilot.press("t")
        await until(pilot, lambda: isinstance(replay.screen, TracebackScreen), "its traceback")
        played = replay.screen
        assert isinstance(played, TracebackScreen)
        assert played.traceback == shown.traceback and "in work" in played.traceback
        assert played.title_text == shown.title_text
