"""Helpers for driving the TUI in tests: bounded waits, never wall-clock assertions."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from textual.geometry import Region
from textual.pilot import Pilot

import helpers
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.code import ROOTS, own_position
from crawlscope.engine.observe.workers import WorkerView
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.lecture.app import LectureApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.waiting import wait_until
from crawlscope.tui.widgets.code_pane import CodePane
from crawlscope.tui.widgets.source_pane import GUTTER, NUMBER, SourcePane

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


# ---- the code pane (issue 41): what it draws, against the modules' own files ----------

CODE_LINE = re.compile(r"^ *(\d+)$")


def drawn(pane: SourcePane) -> dict[int, tuple[list[str], str]]:
    """Each code line the pane draws: its number -> (the names in its margin, its text)."""
    out = {}
    for line in str(pane.render()).splitlines():
        number = CODE_LINE.match(line[GUTTER : GUTTER + NUMBER - 1])
        if number is None:
            continue
        margin = line[:GUTTER].removeprefix("▶").split()
        out[int(number.group(1))] = (margin, line[GUTTER + NUMBER :])
    return out


def file_line(module: str, number: int) -> str:
    first, _, rest = module.partition("/")
    return (ROOTS[first] / rest).read_text().splitlines()[number - 1]


def assert_cursors_match(pane: CodePane, views: Sequence[WorkerView]) -> int:
    """Every worker standing in the module shown has its name on its line, whose text is
    that line of the module's file; no name stands anywhere else. The cursors drawn."""
    lines = drawn(pane)
    assert lines, str(pane.render())
    module = str(pane.border_title).split(" · ")[0]
    where = {}
    for view in views:
        found = own_position(view.own_at)
        if view.alive and found is not None and found[1] == module:
            where[f"w{view.id}"] = found[2]
    assert where, [v.own_at for v in views]
    for name, number in where.items():
        margin, text = lines[number]
        assert name in margin or any(m.startswith("+") for m in margin), (name, margin)
        assert text == file_line(module, number).rstrip()[: len(text)]
    for number, (margin, _) in lines.items():
        for name in margin:
            if name.startswith("w"):
                assert where[name] == number
    return len(where)
