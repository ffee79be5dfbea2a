"""Helpers for driving the TUI in tests: bounded waits, never wall-clock assertions."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from textual.geometry import Region
from textual.pilot import Pilot

import helpers
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.waiting import wait_until

# Generous: a loaded two-core CI machine may be many times slower than a laptop.
TIMEOUT = 60.0


def config(tasks: int, **options: object) -> Callable[[Sequence[str]], CrawlConfig]:
    return lambda roots: CrawlConfig(roots=tuple(roots), max_tasks=tasks, **options)  # type: ignore[arg-type]


async def until(
    pilot: Pilot[int], condition: Callable[[], object], what: str, timeout: float = TIMEOUT
) -> None:
    """helpers.until for an app under a pilot: the loop runs through the pilot's pause,
    and a timeout says where the app's crawl stood."""
    await helpers.until(
        condition, what, timeout=timeout, poll=0.02, pause=pilot.pause,
        seen=lambda: describe(pilot.app),
    )  # fmt: skip


def live_crawler(app: CrawlScopeApp) -> Crawler | None:
    """The crawler behind a live app, once built (tests look inside it; the app does not)."""
    return app.source.crawler if isinstance(app.source, LiveCrawl) else None


def describe(app: object) -> str:
    """The app's crawl in one line, for a failure message."""
    if not isinstance(app, CrawlScopeApp):
        return repr(app)
    crawler = live_crawler(app)
    if crawler is None:
        return f"no crawler yet; error={app.crawl_error!r}; frames={app.frames}"
    states = [w.state.value for w in crawler.workers.values()]
    return f"{crawler.phase}; {crawler.accounting().line()}; workers={states}"


async def crawler_of(pilot: Pilot[int], timeout: float = TIMEOUT) -> Crawler:
    app = pilot.app
    assert isinstance(app, CrawlScopeApp)
    await until(
        pilot,
        lambda: app.crawl_error is not None or bool((c := live_crawler(app)) and c.t0),
        "the crawl to start",
        timeout,
    )
    assert app.crawl_error is None, app.crawl_error
    crawler = live_crawler(app)
    assert crawler is not None
    return crawler


async def frames(pilot: Pilot[int], count: int) -> None:
    """Let the app draw `count` more frames, the last of them (or a later one) every panel,
    and the screen catch up with them. A frame under the budget draws some panels only,
    and the budget can hold for a second after the loop was last busy: a count of frames
    alone can leave a panel behind."""
    app = pilot.app
    assert isinstance(app, CrawlScopeApp)
    view = getattr(app.screen, "view", None)
    if app.panels.hidden() and view is not None:
        # The timeline over the panels, which draw nothing meanwhile: its own ticks.
        ticks = view.ticks + count
        await until(pilot, lambda: view.ticks >= ticks, f"{count} ticks of the timeline")
        await pilot.pause()
        return
    target = app.frames + count
    await until(
        pilot,
        lambda: app.frames >= target and app.panels.whole_frame >= target - 1,
        f"{count} frames, then one that draws every panel",
    )
    await pilot.pause()


def screen_text(app: CrawlScopeApp) -> str:
    """The text of every widget on screen, as drawn (styles dropped)."""
    parts = []
    for widget in app.screen.query("*"):
        if widget.children or not widget.display or not widget.size.area:
            continue
        strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
        parts.append("\n".join(strip.text for strip in strips))
    return "\n".join(parts)


async def stage_settled(pilot: Pilot[str], steps: int) -> None:
    """Wait until a lecture stage is frozen after `steps` steps (none wanted, none running)
    and its status line, as drawn, says so: what a screenshot of it then shows."""
    app = pilot.app
    assert isinstance(app, LectureApp)
    said = re.compile(rf"\bstep {steps}\b")

    def settled() -> bool:
        stage = app.stage
        if stage is None or stage.steps != steps or stage.wanted:
            return False
        status = stage.query_one("#stage-status")
        lines = status.render_lines(Region(0, 0, status.size.width, status.size.height))
        return any(said.search(strip.text) for strip in lines)

    what = f"the stage frozen at step {steps}, and its status saying so"
    await wait_until(settled, what, timeout=TIMEOUT, pause=pilot.pause)
