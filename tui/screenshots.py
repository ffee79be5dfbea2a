"""Screenshots of the TUI, taken headlessly: one on demand, or every picture of the docs.

    python -m crawlscope.tui.screenshots [DIR [NAME...]]   (default: screenshots/, every scene)

Each scene runs the real app on the in-process demo site, steers it the way a person
would (keys pressed through Textual's Pilot), and saves an SVG.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.plan import STAND_IN_ROOT, CrawlPlan
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.engine.trace.replay import ReplayedCrawl

from .answer_screenshots import ANSWER_SCENES
from .app import CrawlScopeApp
from .cluster_screenshot import cluster_scene
from .lecture.app import LectureApp
from .lecture.stage_screen import StageScreen
from .remote_screenshot import browser_scene
from .screens.hosts import HostsScreen
from .screenshot_run import Steer, shoot_app, take_screenshot
from .startup import LiveCrawl, Recording
from .time_screenshots import TIME_SCENES
from .timing_screenshots import TIMING_SCENES
from .waiting import wait_until

# ---- the docs' scenes (docs/hooks/screenshots.py runs them all as the site is built) ---


def _config(tasks: int) -> Callable[[Sequence[str]], CrawlConfig]:
    return lambda roots: CrawlConfig(roots=tuple(roots), max_tasks=tasks)


def _crawler(app: CrawlScopeApp) -> Crawler:
    assert isinstance(app.source, LiveCrawl) and app.source.crawler is not None
    return app.source.crawler


async def _select_row(p: Pilot[Any], row: int) -> None:
    for _ in range(row):
        await p.press("down")


async def _pause_one(p: Pilot[Any], app: CrawlScopeApp) -> None:
    await _select_row(p, 2)
    await p.press("space")
    crawler = _crawler(app)
    await wait_until(lambda: crawler.workers[2].state is WorkerState.PAUSED, "worker 2 paused")


async def _cancel_one(p: Pilot[Any], app: CrawlScopeApp) -> None:
    await _select_row(p, 3)
    await p.press("c")
    crawler = _crawler(app)
    await wait_until(
        lambda: crawler.workers[3].state is WorkerState.CANCELLED, "worker 3 cancelled"
    )
    await p.press("a")  # a fresh worker takes its place at the bottom


async def _show_chains(p: Pilot[Any], app: CrawlScopeApp) -> None:
    crawler = _crawler(app)
    await wait_until(lambda: crawler.phase is Phase.FINISHED, "the crawl to finish")
    await p.press("tab")  # the redirect tree takes the focus (and its border lights up)


async def _show_hosts(p: Pilot[Any], app: CrawlScopeApp) -> None:
    await p.press("h")
    await wait_until(lambda: isinstance(app.screen, HostsScreen), "the hosts screen")


SCENES: dict[str, tuple[Callable[[], CrawlScopeApp], float, tuple[int, int], Steer | None]] = {
    "overview.svg": (
        lambda: CrawlScopeApp(LiveCrawl(make_config=_config(12))),
        12.0,  # long enough for the sparklines to show a stretch of the minute
        (120, 40),
        None,
    ),
    "paused-worker.svg": (
        lambda: CrawlScopeApp(LiveCrawl(make_config=_config(10))),
        2.0,
        (120, 40),
        _pause_one,
    ),
    "cancelled-worker.svg": (
        lambda: CrawlScopeApp(LiveCrawl(make_config=_config(10))),
        2.0,
        (120, 40),
        _cancel_one,
    ),
    "redirect-loop.svg": (
        lambda: CrawlScopeApp(
            LiveCrawl(make_config=_config(10), demo=DemoConfig(pages=40, latency=0.02, jitter=0.02))
        ),
        0.5,
        (120, 40),
        _show_chains,
    ),
    "hosts.svg": (
        lambda: CrawlScopeApp(LiveCrawl(make_config=_config(10))),
        2.0,
        (120, 40),
        _show_hosts,
    ),
    "narrow-80x24.svg": (
        lambda: CrawlScopeApp(LiveCrawl(make_config=_config(10))),
        3.0,
        (80, 24),
        None,
    ),
}


# ---- the lecture's scenes: step mode and replay -------------------------------------


def _lecture_config(roots: Sequence[str]) -> CrawlConfig:
    return CrawlConfig(roots=tuple(roots), max_tasks=3)


async def _steps(p: Pilot[Any], app: LectureApp, count: int, resumed: str = "") -> None:
    """Press n `count` times, then on until a step resumed a task named `resumed`…"""
    await wait_until(lambda: app.stage is not None, "the stage screen")
    stage = app.stage
    assert stage is not None
    for i in range(count + 40):
        if i >= count and (stage.recent and (stage.recent[-1].task or "").startswith(resumed)):
            break
        before = stage.steps
        await p.press("n")
        await wait_until(_stepped(stage, before), "one step")


def _stepped(stage: StageScreen, before: int) -> Callable[[], bool]:
    return lambda: stage.steps > before or stage.over


def step_mode_scene(
    engine: str, count: int, resumed: str = "", size: tuple[int, int] = (120, 40)
) -> Callable[[Path], Path]:
    def shoot(target: Path) -> Path:
        app = LectureApp([engine], make_config=_lecture_config, walk=True)
        return shoot_app(app, target, size, lambda p: _steps(p, app, count, resumed))

    return shoot


def replay_scene(target: Path) -> Path:
    """Record a crawl of the demo site, then show its replay paused two-fifths through."""
    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / "crawl.jsonl"

        async def record() -> None:
            demo = DemoConfig(pages=120, latency=0.05, jitter=0.1)
            config = CrawlConfig(roots=(STAND_IN_ROOT,), max_tasks=8)
            plan = CrawlPlan(config, crawl_demo=True, demo=demo, record=str(recording))
            async with plan.open() as crawl:
                await crawl.run()

        asyncio.run(record())
        replay = ReplayedCrawl.load(recording)
    app = CrawlScopeApp(Recording(replay, "crawl.jsonl", paused=True))

    async def steer(p: Pilot[Any]) -> None:
        await p.press("pagedown", "pagedown", "pagedown", "pagedown", "full_stop")
        await p.pause(0.6)  # the redirect tree catches up

    return shoot_app(app, target, (120, 40), steer)


LECTURE_SCENES: dict[str, Callable[[Path], Path]] = {
    "step-mode-generators.svg": step_mode_scene("generators", 40, "worker-"),
    "step-mode-callbacks.svg": step_mode_scene("callbacks", 12),
    # Wide enough for the code beside the tasks (it folds away under 140 columns).
    "code-pane-generators.svg": step_mode_scene("generators", 40, "worker-", (170, 45)),
    "replay.svg": replay_scene,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    out = Path(args[0] if args else "screenshots")
    only = set(args[1:])  # scene names: just those (all when none is given)
    for name, (make, after, size, steer) in SCENES.items():
        if not only or name in only:
            path = take_screenshot(make(), out / name, after, size, steer)
            print(f"wrote {path}")
    scenes = {**LECTURE_SCENES, **TIMING_SCENES, **TIME_SCENES, **ANSWER_SCENES}
    for name, shoot in scenes.items():
        if not only or name in only:
            print(f"wrote {shoot(out / name)}")
    if not only or "browser.png" in only:
        # `crawlscope serve` in headless Chromium; skipped, with a word, without one.
        browser = browser_scene(out / "browser.png")
        if browser is not None:
            print(f"wrote {browser}")
    if not only or "cluster.svg" in only:
        # A real redis-server and two crawl processes; skipped, with a word, without one.
        cluster = cluster_scene(out / "cluster.svg")
        if cluster is not None:
            print(f"wrote {cluster}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
