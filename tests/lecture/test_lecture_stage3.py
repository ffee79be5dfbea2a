"""Stage 3 in a lecture's recording: a lecture run by Pilot through its three stages on a
real demo site (aiohttp on 127.0.0.1), recorded; the replay steps from stage 2 into
stage 3's crawl, on the crawl's replay screen, and back; and a recording whose stage-3
part is damaged, played by the real command, is one line and exit status 2."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import pytest
from hostile_peers import Terminal, watched_lecture
from textual.geometry import Region
from textual.pilot import Pilot
from tui_support import crawler_of, screen_text, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.lecture.live import Stage
from crawlscope.engine.lecture.recording import LectureRecorder
from crawlscope.engine.lecture.replay import load_lecture
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.plan import CrawlPlan
from crawlscope.engine.remote.lecture_monitor import LECTURE_PATH, LectureMonitor, StageRelay
from crawlscope.engine.remote.monitor import listen, socket_url
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.trace.recording import Recorder
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.lecture.stage3 import AsyncioStage, LectureCrawl
from crawlscope.tui.lecture.stage_replay import LectureReplayApp, Stage3ReplayScreen
from crawlscope.tui.lecture.stage_watched import LectureWatchApp
from crawlscope.tui.waiting import wait_until
from helpers import run_cli

DEMO = DemoConfig(pages=20, links_per_page=4)
SIZE = (120, 41)


def two_workers(roots: Sequence[str]) -> CrawlConfig:
    return CrawlConfig(roots=tuple(roots), max_tasks=2)


def stage_status(screen: object) -> str:
    from textual.screen import Screen

    assert isinstance(screen, Screen)
    widget = screen.query_one("#stage-status")
    return "".join(s.text for s in widget.render_lines(Region(0, 0, widget.size.width, 1)))


async def steps(pilot: Pilot[str], app: LectureApp, count: int) -> None:
    stage = app.stage
    assert stage is not None
    for _ in range(count):
        before = stage.steps
        await pilot.press("n")
        await until(pilot, lambda b=before: stage.steps == b + 1 and not stage.wanted, "a step")


async def a_lecture_of_three_stages(path: Path, visits: int = 1) -> list[Crawler]:
    """Stages 1 and 2 stepped a little, then stage 3 crawled to its end and left with ←
    (to stage 2, stepped again, and on to stage 3 again, `visits` times in all), recorded
    to `path` as `crawlscope lecture --record` records them; stage 3's crawlers."""
    recorder = LectureRecorder(path)
    crawlers: list[Crawler] = []
    for visit in range(visits):
        await stages_1_and_2(recorder, again=visit > 0)
        crawlers.append(await stage_3(recorder))
    recorder.close()
    assert recorder.failure is None
    return crawlers


async def stages_1_and_2(recorder: LectureRecorder, *, again: bool) -> None:
    """Stages 1 and 2, four steps each, then → to stage 3; `again`: stage 2 alone, as
    the lecture reopens it after ← in stage 3."""
    lecture = LectureApp(["callbacks", "generators"], make_config=two_workers, demo=DEMO,
                         walk=True, start=int(again), opened=[recorder.follow])  # fmt: skip
    async with lecture.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: lecture.stage is not None, "a stage")
        await steps(pilot, lecture, 4)
        if not again:
            await pilot.press("right")
            await until(pilot, lambda: lecture.stage is not None
                        and lecture.stage.engine == "generators", "stage 2")  # fmt: skip
            await steps(pilot, lecture, 4)
        await pilot.press("right")
        await until(pilot, lambda: lecture.return_value == "next", "on to stage 3")


async def stage_3(recorder: LectureRecorder) -> Crawler:
    """Stage 3 as the lecture runs it, recorded: crawled to its end, then ←."""
    runs: list[Recorder] = []

    def record(crawler: Crawler) -> None:
        runs.append(recorder.follow_crawl(crawler))

    live = LectureCrawl(make_config=two_workers, demo=DEMO, opened=[record])
    app = AsyncioStage(live)
    async with app.run_test(size=SIZE) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "stage 3's crawl, to its end")
        # Long after its intro has gone, the status line still says which stage this is.
        await until(pilot, lambda: "stage 3 · asyncio · demo site" in screen_text(app),
                    "stage 3 named on the status line")  # fmt: skip
        await pilot.press("left")  # back to stage 2, as a lecturer does
    assert app.went_back
    for run in runs:
        run.close()
    return crawler


async def test_a_lecture_recorded_through_three_stages_replays_stage_3(tmp_path: Path) -> None:
    path = tmp_path / "lecture.jsonl"
    (crawler,) = await a_lecture_of_three_stages(path)
    recording = load_lecture(path)
    assert [s.engine.value for s in recording.steps] == ["callbacks"] * 5 + ["generators"] * 5
    (run,) = recording.runs
    assert run.after == len(recording.steps)
    played = run.crawl
    played.goto(len(played.events))
    assert played.accounting() == crawler.accounting() and crawler.accounting().done > 10
    assert {w.id for w in played.snapshot().workers} == set(crawler.workers)
    assert {r.url for r in played.done.values()} == set(crawler.ledger.done)

    replay = LectureReplayApp(recording, paused=True)
    async with replay.run_test(size=SIZE) as pilot:
        stages = replay.replay
        await pilot.press("end")
        await until(pilot, lambda: stages.index == len(recording.steps) - 1, "stage 2's last step")
        assert "stage 2" in stage_status(replay.screen)
        await pilot.press("full_stop")  # one step on: into stage 3
        await until(pilot, lambda: isinstance(replay.screen, Stage3ReplayScreen), "stage 3")
        screen = replay.screen
        assert isinstance(screen, Stage3ReplayScreen)
        assert screen.replay.index == 0
        await pilot.press("end")
        last = len(screen.replay.events)
        await until(pilot, lambda: screen.replay.index == last, "stage 3's end")
        # Its pages and its workers, as the lecture crawled them.
        done = crawler.accounting().done
        await until(pilot, lambda: f" {done} pages " in screen_text(replay), "the pages counted")  # type: ignore[arg-type]
        text = screen_text(replay)  # type: ignore[arg-type]
        assert "FINISHED" in text and "stage 3" in text and f"done {done} " in text
        for worker in crawler.workers.values():  # each row: id, state, for, pages
            row = rf"^\W*{worker.id}\s+stopped\s+\S+\s+{worker.pages}\s"
            assert re.search(row, text, re.MULTILINE), (row, text)
        # Back out of stage 3 at its first event, to stage 2's last step.
        await pilot.press("home", "comma")
        await until(pilot, lambda: replay.screen is stages, "back on the stages' screen")
        await until(pilot, lambda: stages.index == len(recording.steps) - 1, "stage 2's last")
        assert "stage 2" in stage_status(replay.screen)
        assert played.index == 0
        # Played from stage 2, the replay goes on into stage 3 and plays it to its end.
        await pilot.press("comma", "p")

        def played_through() -> bool:
            return replay.screen is stages and played.index == len(played.events)

        await until(pilot, played_through, "stage 3 played to its end, and out")
        assert stages.index == len(recording.steps) - 1 and not stages.playing


async def test_each_stage_3_of_a_lecture_is_kept_and_replayed_in_its_place(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lecture.jsonl"
    first, second = await a_lecture_of_three_stages(path, visits=2)
    recording = load_lecture(path)
    engines = [s.engine.value for s in recording.steps]
    assert engines == ["callbacks"] * 5 + ["generators"] * 10
    assert [run.after for run in recording.runs] == [10, 15]
    for run, crawler in zip(recording.runs, (first, second), strict=True):
        run.crawl.goto(len(run.crawl.events))
        assert run.crawl.accounting() == crawler.accounting()
        assert run.crawl.config.roots == crawler.config.roots  # each its own demo site
    assert first.config.roots != second.config.roots

    replay = LectureReplayApp(recording, paused=True)
    async with replay.run_test(size=SIZE) as pilot:
        stages = replay.replay

        async def step_to(index: int) -> None:
            await until(pilot, lambda: replay.screen is stages and stages.index == index,
                        f"step {index} of the stages")  # fmt: skip

        def in_run(number: int) -> bool:
            screen = replay.screen
            return isinstance(screen, Stage3ReplayScreen) and screen.run_index == number

        await pilot.press("home", *["full_stop"] * 9)
        await step_to(9)  # stage 2's last step before the first stage 3
        await pilot.press("full_stop")
        await until(pilot, lambda: in_run(0), "the first stage 3")
        await pilot.press("end", "full_stop")
        await step_to(10)  # stage 2 again, its first step
        await pilot.press("comma")
        await until(pilot, lambda: in_run(0), "back into the first stage 3, at its end")
        run = recording.runs[0].crawl
        assert run.index == len(run.events)
        await pilot.press("full_stop")
        await step_to(10)
        await pilot.press("end")
        await step_to(14)
        await pilot.press("full_stop")
        await until(pilot, lambda: in_run(1), "the second stage 3")
        text = screen_text(replay)  # type: ignore[arg-type]
        assert "stage 3 (2 of 2)" in text


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A lecture recorded by `crawlscope lecture --record F --headless`: all three stages."""
    path = tmp_path_factory.mktemp("lecture") / "lecture.jsonl"
    result = run_cli("lecture", "--record", str(path), "--headless", "--steps", "5")
    assert result.returncode == 0, result.stderr
    assert "stage asyncio:" in result.stderr
    return path


def test_a_headless_lecture_records_stage_3_too(recorded: Path) -> None:
    recording = load_lecture(recorded)
    (run,) = recording.runs
    crawl = run.crawl
    crawl.goto(len(crawl.events))
    assert crawl.phase is Phase.FINISHED and crawl.accounting().balanced
    assert crawl.accounting().done > 20 and len(crawl.workers) == 3


def test_a_lecture_cut_short_in_stage_3_plays_what_it_holds(recorded: Path, tmp_path: Path) -> None:
    """A lecture killed mid-crawl: no end lines, its last stage-3 line cut in half."""
    lines = lines_of(recorded)
    keep = crawl_line(lines, "fetch") + 10
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:keep]) + "\n" + lines[keep][:40])
    result = run_cli("replay", str(cut))
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1
    assert f"cut.jsonl:{keep + 1}: " in result.stderr  # the half line, named
    cut.write_text("\n".join(lines[:keep]) + "\n")
    (run,) = load_lecture(cut).runs
    crawl = run.crawl
    crawl.goto(len(crawl.events))
    assert crawl.accounting().done >= 1 and crawl.phase is Phase.RUNNING


def lines_of(path: Path) -> list[str]:
    return path.read_text().split("\n")[:-1]


def crawl_line(lines: list[str], kind: str) -> int:
    """The index of the first stage-3 line whose crawl event is of `kind`."""
    return next(
        i for i, line in enumerate(lines)
        if json.loads(line)["kind"] == "crawl" and json.loads(line)["event"]["kind"] == kind
    )  # fmt: skip


def fetch_status(event: dict[str, object]) -> None:
    record = event["record"]
    assert isinstance(record, dict)
    record["status"] = "two hundred"


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        ("status", "stage 3, run 1: the fetch record's 'status' is wrong: 'two hundred'"),
        ("config", "stage 3, run 1: bad config"),
        ("orphan", "stage 3, run 2: a line of run 2, which has not started here"),
        ("no event", "stage 3, run 1: a crawl line without its event"),
        ("time", "stage 3, run 1: 't' goes back in time"),
        ("kind", "stage 3, run 1: unknown phase 'bogus'"),
    ],
)
def test_a_damaged_stage_3_is_one_line_and_status_2(
    recorded: Path, tmp_path: Path, damage: str, said: str
) -> None:
    lines = lines_of(recorded)
    if damage == "config":
        at = crawl_line(lines, "start")
        line = json.loads(lines[at])
        line["event"]["config"]["max_tasks"] = "three"
    elif damage == "time":
        at = crawl_line(lines, "fetch")
        line = json.loads(lines[at])
        line["event"]["t"] = 0.0
        first = json.loads(lines[at - 1])
        first["event"]["t"] = 1.0
        lines[at - 1] = json.dumps(first)
    else:
        at = crawl_line(lines, "fetch")
        line = json.loads(lines[at])
        if damage == "status":
            fetch_status(line["event"])
        elif damage == "orphan":
            line["run"] = 2
        elif damage == "kind":  # a kind this replay does not know, with its counts
            line["event"] = {"kind": "newer", "t": line["event"]["t"], "phase": "bogus"}
        else:
            del line["event"]
    lines[at] = json.dumps(line)
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    result = run_cli("replay", str(bad))
    assert result.returncode == 2
    assert result.stdout == ""
    err = result.stderr.splitlines()
    assert len(err) == 1, result.stderr
    assert err[0].startswith(f"crawlscope: {bad}:{at + 1}: {said}"), err[0]


async def test_a_lecture_viewer_sees_stage_3s_crawl_then_the_stage_screen_again() -> None:
    """The lecture's socket, bound once; stage 3 served on a copy of it by a lecture
    monitor following the crawl (as the lecture's stage-3 app serves it), then stage 2 on
    another copy (the lecturer pressed ←): `attach`'s lecture app, over a real socket,
    draws the crawl on the crawl's screen, then the stage screen again."""
    place = listen("127.0.0.1", 0)
    relay = StageRelay()
    viewer = LectureWatchApp(socket_url(place, None, LECTURE_PATH))
    try:
        async with DemoServer(DEMO) as demo, viewer.run_test(size=SIZE) as pilot:
            async with (
                LectureMonitor(relay, place.dup()),
                CrawlPlan(two_workers([demo.url])).open() as crawl,
            ):
                relay.follow_crawl(crawl.crawler)
                await crawl.run()
                crawler = crawl.crawler
                done = crawler.accounting().done

                # Each worker's row as the crawl left it: id, state, for, pages.
                rows = [
                    rf"^\W*{w.id}\s+stopped\s+\S+\s+{w.pages}\s" for w in crawler.workers.values()
                ]

                def crawl_drawn() -> bool:
                    shown = viewer.crawl_screen
                    if shown is None or viewer.screen is not shown:
                        return False
                    text = screen_text(viewer)  # type: ignore[arg-type]
                    return f" {done} pages " in text and all(
                        re.search(row, text, re.MULTILINE) for row in rows
                    )

                await until(pilot, crawl_drawn, "stage 3's crawl at the viewer, to its end")
                text = screen_text(viewer)  # type: ignore[arg-type]
                assert "FINISHED" in text and "read-only" in text and f"done {done} " in text
                await pilot.press("p", "a")  # the keys that steer a crawl do nothing here
                assert len(crawler.workers) == 2
            first_screen = viewer.crawl_screen
            # Stage 3 again (← then → while this viewer was away): another crawl, drawn.
            async with (
                DemoServer(DEMO) as other,
                LectureMonitor(relay, place.dup()),
                CrawlPlan(two_workers([other.url])).open() as crawl,
            ):
                relay.follow_crawl(crawl.crawler)
                await crawl.run()
                again = crawl.crawler.accounting().done

                def other_drawn() -> bool:
                    shown = viewer.crawl_screen
                    return (
                        shown is first_screen
                        and shown is not None
                        and shown.site == other.url
                        and viewer.screen is shown
                        and f" {again} pages " in screen_text(viewer)  # type: ignore[arg-type]
                    )

                await until(pilot, other_drawn, "the other stage 3's crawl at the viewer")
            # The lecturer went back to stage 2: its app serves the stage again.
            stage = Stage("generators", two_workers([demo.url]))
            relay.follow(stage)
            stage.start(stepping=True)
            try:
                async with LectureMonitor(relay, place.dup()):
                    for _ in range(3):
                        while not stage.step_once(jump=True):
                            await pilot.pause(0.01)  # the demo site answers meanwhile
                    screen = viewer.watched

                    def stage_drawn() -> bool:
                        return viewer.screen is screen and screen.shown == stage.snapshot()

                    await until(pilot, stage_drawn, "the stage screen again, at step 3")
                    assert viewer.crawl_screen is None and "stage 2" in stage_status(screen)
            finally:
                stage.close()
    finally:
        place.close()


RIGHT, LEFT = b"\x1b[C", b"\x1b[D"


def forget(term: Terminal) -> None:
    """Drop what `term` showed so far: what it shows next is looked for in what follows."""
    with term._lock:
        term.out.clear()


async def test_the_lecture_command_serves_and_records_stage_3(tmp_path: Path) -> None:
    """`lecture --monitor 0 --record F` and `attach URL`, each in a real terminal: the
    viewer follows the lecturer into stage 3's crawl and back to stage 2, and the file
    holds the stages' steps and stage 3's crawl between them."""
    record = tmp_path / "lecture.jsonl"
    async with watched_lecture(str(record)) as (lecturer, viewer):
        lecturer.press(RIGHT)
        await viewer.shows(b"stage 2", what="stage 2 at the viewer")
        forget(viewer)
        lecturer.press(RIGHT)
        await lecturer.shows(b"redirect chains", what="stage 3, the main TUI")
        await viewer.shows(b"redirect chains", b"suspended at", b"read-only",
                           what="stage 3's crawl at the viewer")  # fmt: skip
        await viewer.shows(b"pages", what="its pages counted")
        forget(viewer)
        forget(lecturer)
        lecturer.press(LEFT)
        await lecturer.shows(b"STEP MODE", what="the lecturer back in stage 2")
        await viewer.shows(b"WATCHING", b"stage 2", what="the stage screen at the viewer")
        viewer.press(b"q")
        await wait_until(lambda: viewer.proc.poll() is not None, "the viewer closed")
        assert viewer.proc.returncode == 0
        lecturer.press(b"q")
        await wait_until(lambda: lecturer.proc.poll() is not None, "the lecture closed")
    recording = load_lecture(record)
    engines = [snap.engine.value for snap in recording.steps]
    assert engines == ["callbacks", "generators", "generators"], engines
    (run,) = recording.runs
    assert run.after == 2
    crawl = run.crawl
    crawl.goto(len(crawl.events))
    assert crawl.phase in (Phase.STOPPED, Phase.FINISHED) and crawl.accounting().balanced
    assert crawl.config.max_tasks == 2 and len(crawl.workers) == 2
