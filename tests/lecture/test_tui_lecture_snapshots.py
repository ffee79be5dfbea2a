"""Snapshots of step mode and of a replay (pytest-textual-snapshot).

Step mode is deterministic with one worker: one socket at a time, so the loop runs its
callbacks in one order; `reproducible=True` hides socket numbers, the demo site's port,
timer figures and source offsets. The replay plays a recording kept in tests/data, so
every figure on screen comes from the file. Regenerate with
`pytest tests/lecture/test_tui_lecture_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from textual.pilot import Pilot
from tui_support import frames, stage_settled, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.startup import Recording

RECORDING = Path(__file__).parents[1] / "data" / "demo-crawl.jsonl"
DEMO = DemoConfig(pages=24, links_per_page=4, seed=3)
Compare = Callable[..., bool]


def one_worker(roots: Sequence[str]) -> CrawlConfig:
    return CrawlConfig(roots=tuple(roots), max_tasks=1)


def stage_app(engine: str) -> LectureApp:
    return LectureApp([engine], make_config=one_worker, demo=DEMO, walk=True, reproducible=True)


def steps(count: int) -> Callable[[Pilot[str]], object]:
    async def run_before(pilot: Pilot[str]) -> None:
        app = pilot.app
        assert isinstance(app, LectureApp)
        await until(pilot, lambda: app.stage is not None, "the stage screen")
        stage = app.stage
        assert stage is not None
        for _ in range(count):
            before = stage.steps
            await pilot.press("n")
            await until(pilot, lambda b=before: stage.steps > b, "one step")
        await stage_settled(pilot, count)

    return run_before


def test_stage_2_in_step_mode(snap_compare: Compare) -> None:
    assert snap_compare(stage_app("generators"), terminal_size=(120, 40), run_before=steps(24))


def test_stage_1_in_step_mode(snap_compare: Compare) -> None:
    assert snap_compare(stage_app("callbacks"), terminal_size=(120, 40), run_before=steps(9))


def test_a_replay_paused_part_way(snap_compare: Compare) -> None:
    app = CrawlScopeApp(Recording(ReplayedCrawl.load(RECORDING), RECORDING.name, paused=True))

    async def run_before(pilot: Pilot[int]) -> None:
        await pilot.press("pagedown", "pagedown", "pagedown", "pagedown", "full_stop")
        await frames(pilot, 2)  # a frame that draws every panel, the redirect tree too

    assert snap_compare(app, terminal_size=(120, 40), run_before=run_before)
