"""The lecture screens: stages 1 and 2 crawling on screen, one loop callback per key."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from textual.pilot import Pilot
from tui_support import screen_text, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.engine.snapshot import Phase
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.lecture.narration import narrate
from crawlscope.tui.lecture.stage_screen import StageScreen
from crawlscope.tui.lecture.widgets.traceback_screen import TracebackScreen
from helpers import expected, outcomes

DEMO = DemoConfig(pages=20, links_per_page=4)


def two_workers(roots: Sequence[str]) -> CrawlConfig:
    return CrawlConfig(roots=tuple(roots), max_tasks=2)


def stage_of(pilot: Pilot[str]) -> StageScreen:
    app = pilot.app
    assert isinstance(app, LectureApp)
    assert app.stage is not None
    return app.stage


async def step(pilot: Pilot[str], times: int = 1) -> None:
    """Press n `times`, waiting each time until the callback has run."""
    stage = stage_of(pilot)
    for _ in range(times):
        before = stage.steps
        await pilot.press("n")
        await until(pilot, lambda b=before: stage.steps == b + 1 or stage.over, "one step")
    await pilot.pause()


async def mounted(pilot: Pilot[str]) -> StageScreen:
    app = pilot.app
    assert isinstance(app, LectureApp)
    await until(pilot, lambda: app.stage is not None, "the stage screen")
    return stage_of(pilot)


@pytest.mark.parametrize("engine", ["callbacks", "generators"])
async def test_n_runs_exactly_one_callback_and_says_what_it_was(engine: str) -> None:
    app = LectureApp([engine], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=(120, 40)) as pilot:
        stage = await mounted(pilot)
        assert stage.stepping and stage.steps == 0
        await pilot.pause(0.3)
        assert stage.steps == 0  # frozen: nothing runs without a key
        await step(pilot)
        assert stage.steps == 1 and len(stage.recent) == 1
        await step(pilot, 9)
        assert stage.steps == 10 and stage.crawler.loop.steps == 10
        await pilot.pause(0.3)
        assert stage.steps == 10  # still frozen between keys
        text = screen_text(app)
        assert "STEP MODE" in text and "step 10" in text
        assert stage.recent[-1].sentence.split()[0] in text.split()


async def test_stage_2_shows_each_tasks_chain_down_to_its_future() -> None:
    app = LectureApp(["generators"], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=(120, 40)) as pilot:
        stage = await mounted(pilot)
        await step(pilot, 20)
        for _ in range(10):  # on to a step that resumed a worker (a socket's is anonymous)
            if (stage.recent[-1].task or "").startswith("worker-"):
                break
            await step(pilot)
        text = screen_text(app)
        for name in ("crawl", "worker-0", "worker-1", "GeneratorCrawler.work", "Future.__iter__"):
            assert name in text, name
        assert "waits on <Future" in text and "f_lasti" in text
        assert "▶ worker-" in text  # the task the last step resumed
        assert "unfinished" in text and "<Future queue join pending>" in text


async def test_stage_1_shows_the_selectors_callbacks_and_timers() -> None:
    app = LectureApp(["callbacks"], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=(120, 40)) as pilot:
        stage = await mounted(pilot)
        await step(pilot, 6)
        text = screen_text(app)
        assert "Fetcher.timed_out" in text and "slot 0" in text
        assert "Fetcher.connected" in text or "Fetcher.read_response" in text
        assert "select() reports socket" in text
        assert stage.crawler.loop.registered()


@pytest.mark.parametrize("engine", ["callbacks", "generators"])
async def test_p_runs_the_crawl_to_the_end_with_every_url_accounted(engine: str) -> None:
    app = LectureApp([engine], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=(120, 40)) as pilot:
        stage = await mounted(pilot)
        await step(pilot, 3)
        await pilot.press("p")
        for _ in range(4):
            await pilot.press("right_square_bracket")
        # A quick crawl may end before the last key, which then no longer applies.
        assert not stage.stepping and (stage.speed == 64 or stage.over)
        await until(pilot, lambda: stage.over, "the crawl ends")
        crawler = stage.crawler
        assert stage.error is None and crawler.phase is Phase.FINISHED
        assert outcomes(crawler) == expected(DEMO)  # type: ignore[arg-type]
        assert crawler.accounting().balanced and crawler.accounting().held == 0
        await pilot.pause(0.2)
        assert "The crawl is over" in screen_text(app)
        assert not app.screen.active_bindings["n"].enabled


async def test_n_while_running_freezes_the_crawl() -> None:
    app = LectureApp(["generators"], make_config=two_workers, demo=DEMO, stepping=False)
    async with app.run_test(size=(120, 40)) as pilot:
        stage = await mounted(pilot)
        await until(pilot, lambda: stage.steps >= 5, "running")
        await step(pilot)
        assert stage.stepping
        steps = stage.steps
        await pilot.pause(0.3)
        assert stage.steps == steps


async def test_the_lecture_walks_through_the_stages_and_hands_over_to_stage_3() -> None:
    app = LectureApp(["callbacks", "generators"], make_config=two_workers, demo=DEMO, walk=True)
    async with app.run_test(size=(120, 40)) as pilot:
        stage = await mounted(pilot)
        assert stage.engine == "callbacks" and "Stage 1: callbacks" in screen_text(app)
        assert not app.check_action("stage", (-1,))  # nothing before stage 1
        await step(pilot, 2)
        await pilot.press("right")
        await until(pilot, lambda: stage_of(pilot).engine == "generators", "stage 2")
        assert "Stage 2: coroutines" in screen_text(app)
        assert stage.crawler.loop.selector.get_map() is None  # stage 1's loop was closed
        await pilot.press("left")
        await until(pilot, lambda: stage_of(pilot).engine == "callbacks", "back to stage 1")
        assert stage_of(pilot).steps == 0  # a fresh crawl
        await pilot.press("right", "right")
    assert app.return_value == "next"


async def test_a_single_stage_has_no_other_stages_to_go_to() -> None:
    app = LectureApp(["generators"], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=(120, 40)) as pilot:
        await mounted(pilot)
        await pilot.press("right")
        await pilot.pause(0.1)
        assert app.is_running and stage_of(pilot).engine == "generators"
        await pilot.press("q")
    assert app.return_value == "quit"


@pytest.mark.parametrize(
    ("description", "words"),
    [
        ("socket 8 writable: Fetcher.connected [http://h:1/a]", "connection for /a is up"),
        ("socket 8 readable: Fetcher.read_response [http://h:1/a]", "read_response() recv()s"),
        ("socket 9 writable: writable.<locals>.on_writable", "only resolves the Future"),
        ("socket 9 readable: read.<locals>.on_readable", "task suspended in read()"),
        ("'socket 9 readable' resolved -> Task._wakeup [worker-1]", "send() on worker-1's"),
        ("'queue get' resolved -> Task._wakeup [worker-0]", "worker-0 waited on in Queue.get()"),
        ("'queue join' resolved -> Task._wakeup [crawl]", "unfinished counter reached 0"),
        ("'robots http://h:1' resolved -> Task._wakeup [worker-0]", "(a Task is a Future)"),
        ("scheduled: Task.step [worker-2]", "worker-2 takes a step"),
        ("timer fired: Fetcher.fetch [http://h:1/flaky]", "retry /flaky"),
        ("timer fired: _expire [worker-1]", "A deadline passed"),
        ("something new", "The loop runs a callback: something new."),
    ],
)
def test_each_kind_of_step_is_told_in_the_chapters_terms(description: str, words: str) -> None:
    told = narrate(description, "http://h:1")
    assert words in told.sentence and told.raw == description


@pytest.mark.parametrize(
    ("engine", "inside", "missing"),
    [("callbacks", "in read_response", "in begin"), ("generators", "in work", "in run_forever")],
)
async def test_t_shows_the_stages_traceback(engine: str, inside: str, missing: str) -> None:
    app = LectureApp([engine], make_config=two_workers, demo=DEMO)
    async with app.run_test(size=(120, 40)) as pilot:
        await mounted(pilot)
        await pilot.press("t")
        await until(pilot, lambda: isinstance(app.screen, TracebackScreen), "the traceback")
        shown = app.screen
        assert isinstance(shown, TracebackScreen)
        assert inside in shown.traceback and missing not in shown.traceback
        assert "parse_links" in shown.traceback
        await pilot.press("escape")
        assert isinstance(app.screen, StageScreen)
