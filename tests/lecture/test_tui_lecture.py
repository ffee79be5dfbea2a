"""The lecture screens: stages 1 and 2 crawling on screen, one loop callback per key."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Sequence

import pytest
from textual.pilot import Pilot
from tui_support import screen_text, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.lecture.narration import narrate
from crawlscope.engine.lecture.steps import (
    ClockJumped,
    FutureResolved,
    Scheduled,
    SleepEnded,
    SocketReady,
    Step,
    TimerFired,
)
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.lecture.stage_screen import FRAMES_PER_SECOND, StageScreen
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
    """Press n `times`, waiting each time until the callback has run. For a frozen stage
    only: while it runs, its timer moves the count too (see `frozen`)."""
    stage = stage_of(pilot)
    for _ in range(times):
        before = stage.steps
        await pilot.press("n")
        await until(pilot, lambda b=before: stage.steps == b + 1 or stage.over, "one step")
    await pilot.pause()


async def ticks_pass(pilot: Pilot[str], count: int = 5) -> None:
    """Wait until the stage's frame timer has had `count` chances to run a step: a timer
    of the test's own, on the stage's screen at the stage's rate, has fired `count` times."""
    stage = stage_of(pilot)
    fired = 0

    def tick() -> None:
        nonlocal fired
        fired += 1

    timer = stage.set_interval(1 / FRAMES_PER_SECOND, tick)
    try:
        await until(pilot, lambda: fired >= count, f"{count} ticks of the stage's timer")
    finally:
        timer.stop()


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
        await ticks_pass(pilot)
        assert stage.steps == 0  # frozen: nothing runs without a key
        await step(pilot)
        assert stage.steps == 1 and len(stage.recent) == 1
        await step(pilot, 9)
        assert stage.steps == 10 and stage.crawler.loop.steps == 10
        await ticks_pass(pilot)
        assert stage.steps == 10  # still frozen between keys
        text = screen_text(app)
        assert "STEP MODE" in text and "step 10" in text
        assert stage.recent[-1].sentence.split()[0] in text.split()


async def test_a_reproducible_stage_still_explains_its_socket_steps() -> None:
    # Socket numbers are hidden for snapshots; the narration must still know the step.
    app = LectureApp(["callbacks"], make_config=two_workers, demo=DEMO, reproducible=True)
    async with app.run_test(size=(120, 40)) as pilot:
        stage = await mounted(pilot)

        def socket_step() -> bool:
            return bool(stage.recent) and stage.recent[-1].raw.startswith("socket N ")

        await step_until(pilot, socket_step, "a socket's step")
        told = stage.recent[-1]
        assert told.sentence.startswith("select() reports socket N "), told.sentence
        assert "http://demo/" in told.raw and stage.source.origin not in told.raw


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
        # The bytecode offsets are for those who ask (o); the line is what a student reads.
        assert "waits on <Future" in text and "f_lasti" not in text
        await pilot.press("o")
        assert "f_lasti" in screen_text(app)
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
        await until(
            pilot,
            lambda: (
                "The crawl is over" in screen_text(app)
                and not app.screen.active_bindings["n"].enabled
            ),
            "the end said, and n greyed out",
        )


async def frozen(pilot: Pilot[str]) -> StageScreen:
    """Wait until the stage is in step mode with no step left to run. From then on only
    n moves the step count: the running timer's callbacks cannot."""
    stage = stage_of(pilot)
    await until(pilot, lambda: (stage.stepping and not stage.wanted) or stage.over, "frozen")
    return stage


async def test_n_while_running_freezes_the_crawl() -> None:
    # A site big enough that the running crawl cannot end before n reaches it.
    big = DemoConfig(pages=200, links_per_page=4)
    app = LectureApp(["generators"], make_config=two_workers, demo=big, stepping=False)
    async with app.run_test(size=(120, 40)) as pilot:
        stage = await mounted(pilot)
        await until(pilot, lambda: stage.steps >= 5, "running")
        await pilot.press("n")
        await frozen(pilot)
        steps, drawn = stage.steps, stage.redraws
        await ticks_pass(pilot)
        assert stage.steps == steps and not stage.over
        assert stage.redraws == drawn  # a frozen screen is not drawn again and again
        await step(pilot)
        assert stage.steps == steps + 1


def slow_backoff(roots: Sequence[str]) -> CrawlConfig:
    # One worker, and backoffs far longer than any test waits: only a clock that jumps
    # to the backoff's timer can get a step past it. One page: /flaky's link to the rest
    # of the site is not followed.
    return CrawlConfig(roots=tuple(roots), max_tasks=1, max_pages=1, backoff=600, max_backoff=1200)


def jumped(stage: StageScreen) -> float:
    """The seconds the clock jumped in the last step, as its narration says."""
    told = stage.recent[-1].sentence
    found = re.search(r"the clock jumps (\d+(?:\.\d+)?) s to the next timer", told)
    assert found, told
    return float(found.group(1))


def in_backoff(stage: StageScreen) -> bool:
    return any(w.state is WorkerState.BACKOFF for w in stage.crawler.workers.values())


async def step_until(pilot: Pilot[str], condition: Callable[[], bool], what: str) -> None:
    """Press n until `condition` holds (a bounded number of times)."""
    for _ in range(300):
        if condition():
            return
        await step(pilot)
    raise AssertionError(f"no {what} within 300 steps")


def jumped_last(stage: StageScreen) -> bool:
    return bool(stage.recent) and "the clock jumps" in stage.recent[-1].sentence


@pytest.mark.parametrize("running", [False, True], ids=["stepping", "running"])
@pytest.mark.parametrize("engine", ["callbacks", "generators"])
async def test_n_steps_through_a_backoff_by_jumping_the_clock(engine: str, running: bool) -> None:
    async with DemoServer(DemoConfig(pages=3, links_per_page=1, latency=0)) as demo:
        flaky = demo.url + "flaky"
        app = LectureApp([engine], [flaky], make_config=slow_backoff, stepping=not running)
        async with app.run_test(size=(120, 40)) as pilot:
            stage = await mounted(pilot)
            if running:
                # The case: running until the only worker sleeps, then n.
                await until(pilot, lambda: in_backoff(stage), "the first backoff")
                await pilot.press("n")
                await frozen(pilot)
            else:
                await step_until(pilot, lambda: in_backoff(stage), "backoff")
            await step_until(pilot, lambda: jumped_last(stage), "a jump to the backoff's end")
            # Running, the clock ran a little before n held it: the jump is a bit shorter.
            first = jumped(stage)
            assert 0 < first <= 600
            assert "backoff" in stage.recent[-1].sentence
            assert "waiting for the network" not in screen_text(app).lower()
            # The second drop, its backoff (twice as long), and on to the answer.
            await step_until(pilot, lambda: not in_backoff(stage), "retry")
            await step_until(pilot, lambda: in_backoff(stage), "second backoff")
            await step_until(pilot, lambda: jumped_last(stage), "a jump to its end")
            assert first < jumped(stage) <= 1200  # the backoff doubled
            await step_until(pilot, lambda: stage.over, "end of the crawl")
            record = stage.crawler.ledger.done[flaky]
            assert (record.status, record.tries) == (200, 3)
            assert stage.error is None and stage.crawler.accounting().balanced


@pytest.mark.parametrize("engine", ["callbacks", "generators"])
async def test_n_waiting_on_a_silent_server_lets_the_clock_run_to_its_deadline(
    engine: str,
) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel completes the handshake; nobody ever answers
        root = f"http://127.0.0.1:{silent.getsockname()[1]}/"

        def patient(roots: Sequence[str]) -> CrawlConfig:
            # Long enough for the screen to be read while it waits, short for a test.
            return CrawlConfig(
                roots=tuple(roots), max_tasks=1, max_tries=1, total_timeout=4, obey_robots=False
            )

        app = LectureApp([engine], [root], make_config=patient)
        async with app.run_test(size=(120, 40)) as pilot:
            stage = await mounted(pilot)
            awaiting = lambda: any(  # noqa: E731
                w.state is WorkerState.HEADERS for w in stage.crawler.workers.values()
            )
            await step_until(pilot, awaiting, "the request sent")
            before = stage.steps
            await pilot.press("n")
            waiting = "Waiting for the network: select() watches 1"
            await until(pilot, lambda: waiting in screen_text(app), "the note on the wait")
            # The held clock runs while n waits, so the deadline comes and is the step.
            await until(pilot, lambda: stage.steps == before + 1, "the deadline")
            assert "A deadline passed" in stage.recent[-1].sentence
            await step_until(pilot, lambda: stage.over, "end of the crawl")
            record = stage.crawler.ledger.failed[root]
            assert record.exception == "TimeoutError: no complete answer within 4 s"


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
        stage = await mounted(pilot)
        assert app.check_action("stage", (1,)) is False  # the key is refused, not just slow
        await pilot.press("right")
        await ticks_pass(pilot, 2)  # time enough for a stage switch, had there been one
        assert app.is_running and stage_of(pilot) is stage and stage.engine == "generators"
        await pilot.press("q")
    assert app.return_value == "quit"


FLAKY = "http://h:1/flaky"


@pytest.mark.parametrize(
    ("step", "line", "words", "task"),
    [
        (
            SocketReady(8, False, "Fetcher.connected", "http://h:1/a"),
            "socket 8 writable: Fetcher.connected [http://h:1/a]",
            "connection for /a is up",
            "http://h:1/a",
        ),
        (
            SocketReady(8, True, "Fetcher.read_response", "http://h:1/a"),
            "socket 8 readable: Fetcher.read_response [http://h:1/a]",
            "read_response() recv()s",
            "http://h:1/a",
        ),
        (
            SocketReady(9, False, "writable.<locals>.on_writable"),
            "socket 9 writable: writable.<locals>.on_writable",
            "only resolves the Future",
            None,
        ),
        (
            SocketReady(9, True, "read.<locals>.on_readable"),
            "socket 9 readable: read.<locals>.on_readable",
            "task suspended in read()",
            None,
        ),
        (
            FutureResolved("socket 9 readable", "Task._wakeup", "worker-1"),
            "'socket 9 readable' resolved -> Task._wakeup [worker-1]",
            "send() on worker-1's",
            "worker-1",
        ),
        (
            FutureResolved("queue get", "Task._wakeup", "worker-0"),
            "'queue get' resolved -> Task._wakeup [worker-0]",
            "worker-0 waited on in Queue.get()",
            "worker-0",
        ),
        (
            FutureResolved("queue join", "Task._wakeup", "crawl"),
            "'queue join' resolved -> Task._wakeup [crawl]",
            "unfinished counter reached 0",
            "crawl",
        ),
        (
            FutureResolved("robots http://h:1", "Task._wakeup", "worker-0"),
            "'robots http://h:1' resolved -> Task._wakeup [worker-0]",
            "(a Task is a Future)",
            "worker-0",
        ),
        (
            Scheduled("Task.step", "worker-2"),
            "scheduled: Task.step [worker-2]",
            "worker-2 takes a step",
            "worker-2",
        ),
        (
            Scheduled("Queue.put_nowait"),
            "scheduled: Queue.put_nowait",
            "The loop runs Queue.put_nowait, which was put on its ready queue.",
            None,
        ),
        (
            TimerFired("Fetcher.fetch", FLAKY),
            "timer fired: Fetcher.fetch [http://h:1/flaky]",
            "retry /flaky",
            FLAKY,
        ),
        (
            TimerFired("_expire", "worker-1"),
            "timer fired: _expire [worker-1]",
            "A deadline passed",
            "worker-1",
        ),
        (
            SleepEnded(0.8, "worker-0"),
            "timer fired: Future.set_result [sleep 0.8s: backoff of worker-0]",
            "The backoff of worker-0 is over (sleep 0.8s",
            "worker-0",
        ),
        (
            SleepEnded(0.25),
            "timer fired: Future.set_result [sleep 0.25s]",
            "A sleep(0.25) timer ran out",
            "sleep 0.25s",
        ),
        (
            ClockJumped(0.8, TimerFired("Fetcher.fetch", FLAKY)),
            "clock jumped 0.8 s: timer fired: Fetcher.fetch [http://h:1/flaky]",
            "the clock jumps 0.8 s to the next timer. A backoff timer ran out",
            FLAKY,
        ),
    ],
)
def test_each_kind_of_step_is_told_in_the_chapters_terms(
    step: Step, line: str, words: str, task: str | None
) -> None:
    told = narrate(step, "http://h:1")
    assert words in told.sentence
    assert told.raw == str(step) == line  # the engine's terse line, as it always read
    assert told.task == task


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
