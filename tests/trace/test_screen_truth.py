"""The screen tells the truth: what each panel shows agrees with the crawl at that moment,
in a live crawl, in slow motion, in a replay after any seek, and in the lecture (issue 12)."""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey
from tui_support import config, crawler_of, frames, stage_settled, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.workers import BUSY, WorkerState
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.startup import LiveCrawl, Recording

Compare = Callable[..., bool]
STATE_WORDS = "|".join(state.value for state in WorkerState)
# A row of the workers table: its id, then its state word.
ROW = re.compile(rf"^\W*(\d+)\s+({STATE_WORDS})\b")
# The status line's "10 workers: 8 body · 2 throttled".
COUNTS = re.compile(rf"(\d+) ({STATE_WORDS})\b")


def text_of(widget: Widget) -> str:
    """A widget as drawn, border included (styles dropped)."""
    width, height = widget.outer_size
    return "\n".join(strip.text for strip in widget.render_lines(Region(0, 0, width, height)))


def rows(app: CrawlScopeApp) -> dict[int, str]:
    """The workers table as drawn: each row's worker id and state word."""
    found = (ROW.match(line) for line in text_of(app.query_one("#workers")).splitlines())
    return {int(m[1]): m[2] for m in found if m}


def status_counts(app: CrawlScopeApp) -> Counter[str]:
    line = text_of(app.query_one("#status"))
    _, _, counts = line.partition("workers:")
    return Counter({state: int(n) for n, state in COUNTS.findall(counts)})


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real crawl recorded with more workers than the per-host limit lets fetch."""
    path = tmp_path_factory.mktemp("truth") / "crawl.jsonl"

    async def record() -> None:
        async with DemoServer(DemoConfig(pages=60, latency=0.02)) as server:
            crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=10, per_host=8))
            recorder = Recorder(crawler, path)
            await crawler.crawl()
            recorder.close()

    asyncio.run(record())
    return path


def replay_app(path: Path) -> tuple[CrawlScopeApp, ReplayedCrawl]:
    replay = ReplayedCrawl.load(path)
    return CrawlScopeApp(Recording(replay, path.name, paused=True)), replay


# ---- slow motion shows the real await points ------------------------------------------


async def test_slow_motion_shows_the_await_it_lingers_after_never_its_own_sleep() -> None:
    demo = DemoConfig(pages=40, latency=0.05, jitter=0.02)
    app = CrawlScopeApp(LiveCrawl(make_config=config(3), demo=demo, slowmo=0.1))
    seen: list[tuple[WorkerState, str, str | None]] = []

    def a_slowed_real_await() -> bool:
        snap = app.panels.snap
        if snap is not None:
            seen.extend((w.state, w.suspended_at, w.url) for w in snap.workers)
        return any(at.startswith("(slowed) ") and ".py:" in at for _, at, _ in seen)

    async with app.run_test(size=(120, 40)) as pilot:
        await crawler_of(pilot)
        await until(pilot, a_slowed_real_await, "a row lingering after a real await")
        await pilot.press("q")
    # The linger's own asyncio.sleep is never shown; a backoff's sleep is a real await.
    linger = [
        (s, at) for s, at, _ in seen if "sleep tasks.py" in at and s is not WorkerState.BACKOFF
    ]
    assert not linger, linger
    # A worker lingers at the end of a fetch still holding its URL, as its state says.
    assert all(url for state, _, url in seen if state in BUSY)


# ---- a replay shows exactly the moment it is at ---------------------------------------


@pytest.mark.slow
async def test_seeking_back_removes_the_rows_of_workers_not_started_yet(recording: Path) -> None:
    app, replay = replay_app(recording)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("end")
        ten = {worker: "stopped" for worker in range(10)}
        await until(pilot, lambda: rows(app) == ten, "ten stopped rows at the end")

        await pilot.press("home")
        await frames(pilot, 2)
        assert rows(app) == {}

        # Part way: just before the sixth worker's first event, five rows.
        sixth = next(i for i, e in enumerate(replay.events) if e.get("worker") == 5)
        await pilot.press("end")
        await frames(pilot, 1)
        replay.goto(sixth)
        app.panels.moved()
        await frames(pilot, 1)
        assert sorted(rows(app)) == [0, 1, 2, 3, 4] == sorted(replay.workers)


# ---- the status line counts the states the rows show -----------------------------------


async def test_the_status_line_counts_the_states_the_rows_show(recording: Path) -> None:
    app, replay = replay_app(recording)
    throttled = None
    for index in range(len(replay.events)):
        replay.goto(index)
        if any(w.state is WorkerState.THROTTLED for w in replay.workers.values()):
            throttled = index
            break
    assert throttled is not None, "the recording has a throttled worker (per_host 8 < 10)"
    async with app.run_test(size=(160, 40)) as pilot:
        await frames(pilot, 1)
        replay.goto(throttled)
        app.panels.moved()
        await frames(pilot, 1)
        shown = rows(app)
        assert "throttled" in shown.values()
        assert status_counts(app) == Counter(shown.values())


# ---- clocks stop with the crawl -----------------------------------------------------


async def test_the_for_column_stops_when_the_crawl_finishes() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(3), demo=DemoConfig(pages=10)))
    async with app.run_test(size=(120, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl to finish")
        await frames(pilot, 1)
        first = crawler.snapshot()
        await until(pilot, lambda: crawler.snapshot().t - first.t > 0.05, "some time after the end")
        await frames(pilot, 2)
        later = app.panels.snap
        assert later is not None and later.t > first.t
        assert later.elapsed == first.elapsed
        assert [w.time_in_state(later.elapsed) for w in later.workers] == [
            w.time_in_state(first.elapsed) for w in first.workers
        ]


# ---- the lecture ------------------------------------------------------------------------

LECTURE_DEMO = DemoConfig(pages=24, links_per_page=4, seed=3)


def lecture(engine: str = "callbacks") -> LectureApp:
    return LectureApp(
        [engine],
        make_config=lambda roots: CrawlConfig(roots=tuple(roots), max_tasks=1),
        demo=LECTURE_DEMO,
        walk=True,
        reproducible=True,
    )


async def steps(pilot: Pilot[str], count: int) -> None:
    app = pilot.app
    assert isinstance(app, LectureApp)
    await until(pilot, lambda: app.stage is not None, "the stage screen")  # type: ignore[arg-type]
    stage = app.stage
    assert stage is not None
    for _ in range(count):
        before = stage.steps
        await pilot.press("n")
        await until(pilot, lambda b=before: stage.steps > b, "one step")  # type: ignore[arg-type,misc]
    await stage_settled(pilot, count)


def lecture_lines(app: LectureApp) -> tuple[str, str]:
    """The lecture's status line and its footer's keys, as drawn."""
    footer = app.screen.query_one(Footer)
    shown = footer.region
    keys = " ".join(
        text_of(key).strip() for key in footer.query(FooterKey) if shown.contains_region(key.region)
    )
    return text_of(app.screen.query_one("#stage-status")), keys


async def test_the_lecture_keeps_its_step_counter_and_keys_at_80x24() -> None:
    app = lecture()
    async with app.run_test(size=(80, 24)) as pilot:
        await steps(pilot, 3)
        status, footer = lecture_lines(app)
        assert "step 3" in status
        for key in ("n Step", "p Run/Freeze", "→ Next stage", "← Back", "q Quit"):
            assert key in footer, (key, footer)


async def test_the_lecture_header_has_one_state_word() -> None:
    app = lecture()
    async with app.run_test(size=(120, 40)) as pilot:
        await steps(pilot, 2)
        status, _ = lecture_lines(app)
        assert "STEP MODE" in status and "RUNNING" not in status, status
        await pilot.press("p")
        await until(pilot, lambda: "RUNNING" in lecture_lines(app)[0], "RUNNING in the header")
        status, _ = lecture_lines(app)
        assert "STEP" not in status, status


def test_the_lecture_at_80x24(snap_compare: Compare) -> None:
    async def run_before(pilot: Pilot[str]) -> None:
        await steps(pilot, 9)  # which waits for what the screenshot shows

    assert snap_compare(lecture(), terminal_size=(80, 24), run_before=run_before)


async def test_a_task_that_ran_once_ran_one_step() -> None:
    app = lecture("generators")
    async with app.run_test(size=(120, 40)) as pilot:
        await steps(pilot, 1)
        chains = text_of(app.screen.query_one("#stage-main"))
        assert "(1 step)" in chains and "(1 steps)" not in chains, chains
