"""← in every lecture stage: one step back, showing the screen as that step left it.

Each test crawls a real demo site (aiohttp on 127.0.0.1) with the stage's own engine,
in a Pilot-driven LectureApp, and compares what the panels draw."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from tui_support import crawler_of, screen_text, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.lecture.app import ASYNCIO_INTRO, LectureApp
from crawlscope.tui.lecture.stage3 import AsyncioStage
from crawlscope.tui.lecture.stage_screen import StageScreen
from crawlscope.tui.lecture.widgets.traceback_screen import TracebackScreen
from crawlscope.tui.startup import LiveCrawl

DEMO = DemoConfig(pages=20, links_per_page=4)
PANELS = ("#stage-main", "#stage-queue", "#stage-narration")


def two_workers(roots: Sequence[str]) -> CrawlConfig:
    return CrawlConfig(roots=tuple(roots), max_tasks=2)


def stage_of(app: LectureApp) -> StageScreen:
    assert app.stage is not None
    return app.stage


def drawn(app: LectureApp) -> dict[str, str]:
    """Each panel's text as drawn."""
    shown = {}
    for panel in PANELS:
        widget = app.screen.query_one(panel)
        strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
        shown[panel] = "\n".join(strip.text for strip in strips)
    return shown


def status(app: LectureApp) -> str:
    widget = app.screen.query_one("#stage-status")
    return "\n".join(s.text for s in widget.render_lines(Region(0, 0, widget.size.width, 1)))


async def step(pilot: Pilot[str], times: int = 1) -> None:
    """n, `times`, each waited for until its callback ran and was drawn."""
    app = pilot.app
    assert isinstance(app, LectureApp)
    stage = stage_of(app)
    for _ in range(times):
        before = stage.steps
        await pilot.press("n")
        await until(pilot, lambda b=before: stage.steps == b + 1, "one step")
        await until(pilot, lambda: f"step {stage.steps}" in status(app), "the step drawn")


async def back_at(pilot: Pilot[str], app: LectureApp, number: int) -> None:
    await until(
        pilot,
        lambda: "LOOKING BACK" in status(app) and f"step {number} of" in status(app),
        f"the look back at step {number}",
    )


async def three_forward_one_back(pilot: Pilot[str], app: LectureApp) -> None:
    stage = stage_of(app)
    await step(pilot, 2)
    at_two = drawn(app)
    await step(pilot)
    at_three = drawn(app)
    assert at_three != at_two  # else the comparison below would prove nothing
    await pilot.press("left")
    await back_at(pilot, app, 2)
    assert drawn(app) == at_two
    assert stage.steps == 3 and stage.crawler.loop.steps == 3  # nothing ran or undid
    assert "step 2 of 3" in status(app)
    # n goes forward again through what was seen, then on to a new step.
    await pilot.press("n")
    await until(pilot, lambda: "LOOKING BACK" not in status(app), "live again")
    assert drawn(app) == at_three and stage.steps == 3
    await step(pilot)
    assert stage.steps == 4


@pytest.mark.parametrize("engine", ["callbacks", "generators"])
async def test_left_steps_back_in_a_single_stage(engine: str) -> None:
    """`crawlscope tui --engine callbacks|generators`: there ← did nothing."""
    app = LectureApp([engine], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.stage is not None, "the stage screen")
        await three_forward_one_back(pilot, app)


async def test_left_steps_back_in_stage_1_of_the_lecture() -> None:
    """`crawlscope lecture`, stage 1: ← was greyed out (no stage before it)."""
    app = LectureApp(["callbacks", "generators"], make_config=two_workers, demo=DEMO, walk=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.stage is not None, "the stage screen")
        await three_forward_one_back(pilot, app)
        assert stage_of(app).engine == "callbacks"


async def test_left_steps_back_in_stage_2_of_the_lecture_then_to_stage_1() -> None:
    """Stage 2: ← went straight to stage 1, throwing the crawl away. Now it steps back,
    and only from the stage's first step goes to the stage before."""
    app = LectureApp(["callbacks", "generators"], make_config=two_workers, demo=DEMO, walk=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.stage is not None, "the stage screen")
        await pilot.press("right")
        await until(pilot, lambda: stage_of(app).engine == "generators", "stage 2")
        await three_forward_one_back(pilot, app)
        stage = stage_of(app)
        for number in (3, 2, 1, 0):
            await pilot.press("left")
            await back_at(pilot, app, number)
        assert stage_of(app) is stage  # still stage 2, at its first step
        assert "Nothing has run yet" in screen_text(app)
        await pilot.press("left")
        await until(pilot, lambda: stage_of(app).engine == "callbacks", "back to stage 1")


@pytest.mark.parametrize("engine", ["callbacks", "generators"])
async def test_left_while_running_freezes_on_the_step_before(engine: str) -> None:
    app = LectureApp([engine], make_config=two_workers, demo=DEMO, stepping=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.stage is not None, "the stage screen")
        stage = stage_of(app)
        await until(pilot, lambda: len(stage.history) >= 3, "a few frames drawn")
        await pilot.press("left")
        await until(pilot, lambda: "LOOKING BACK" in status(app), "the look back")
        frozen_at = stage.steps
        shown = stage.history[stage.looking or 0].steps
        assert shown < frozen_at and f"step {shown} of {frozen_at}" in status(app)
        await pilot.pause(0.3)
        assert stage.steps == frozen_at  # frozen while looking back


async def test_left_in_stage_3_goes_back_to_stage_2() -> None:
    """Stage 3 is asyncio's own loop, which cannot be stepped: ← stops its crawl as q
    does and says to go back; the lecture then reopens stage 2 (`start`)."""
    live = LiveCrawl(make_config=two_workers, demo=DemoConfig(pages=200, latency=0.05))
    app = AsyncioStage(live, greeting=ASYNCIO_INTRO)
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await pilot.press("left")
        await until(pilot, lambda: not app.is_running, "stage 3 closed")
    assert app.went_back
    assert crawler.phase is Phase.STOPPED  # stopped gracefully, as q would
    lecture = LectureApp(
        ["callbacks", "generators"], make_config=two_workers, demo=DEMO, walk=True, start=1
    )
    async with lecture.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: lecture.stage is not None, "the stage screen")
        assert stage_of(lecture).engine == "generators"
        assert "Stage 2: coroutines" in screen_text(lecture)


async def test_back_from_stage_3_stage_2_runs_on_to_where_it_was_left() -> None:
    lecture = LectureApp(["callbacks", "generators"], make_config=two_workers, demo=DEMO,
                         walk=True, start=1)  # fmt: skip
    async with lecture.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: lecture.stage is not None, "stage 2")
        await step(pilot, 15)
        left_at = lecture.last_stage.steps if lecture.last_stage else 0
    assert left_at == 15
    # The lecture reopens stage 2 (its crawl closed with the app) at the step it was left.
    again = LectureApp(["callbacks", "generators"], make_config=two_workers, demo=DEMO,
                       walk=True, start=1, resume=left_at)  # fmt: skip
    async with again.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: again.stage is not None, "stage 2 again")
        stage = stage_of(again)
        await until(pilot, lambda: stage.steps == left_at and not stage.wanted,
                    f"run on to step {left_at}")  # fmt: skip
        assert f"step {left_at} " in status(again) and stage.stepping
        # Frozen there, as it was left: n is the next step, ← goes back through the rest.
        await step(pilot)
        assert stage.steps == left_at + 1
        await pilot.press("left", "left")
        await until(pilot, lambda: f"step {left_at - 1} " in status(again), "two steps back")


async def test_left_over_a_traceback_does_not_move_the_stage_beneath() -> None:
    app = LectureApp(["callbacks", "generators"], make_config=two_workers, demo=DEMO, walk=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.stage is not None, "the stage screen")
        await pilot.press("right")
        await until(pilot, lambda: stage_of(app).engine == "generators", "stage 2")
        stage = stage_of(app)
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TracebackScreen), "the traceback")
        await pilot.press("left")
        await pilot.pause(0.2)
        assert isinstance(app.screen, TracebackScreen) and app.index == 1
        await pilot.press("escape")
        await until(pilot, lambda: app.stage is stage, "back on stage 2, the same crawl")
