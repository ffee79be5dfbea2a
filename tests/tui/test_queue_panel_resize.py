"""A resize redraws the queue panel whole (issue 28, 16).

From 140x40 to 80x24 the panel narrows and its lines wrap anew. The panel redrew only
the rows whose line changed, compared with rows as they wrapped at the old width, so a
row was left as drawn in between: `join() waits` vanished and `counts it` stayed. The
live TUI crawls the real demo site here (the real TUI in tmux showed the same, and the
same fix)."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from tui_support import config, live_crawler, until

from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.queue_panel import QueueFigures


def rows(app: CrawlScopeApp) -> list[str]:
    """The panel's figures as drawn, a row each."""
    panel = app.screen.query_one(QueueFigures)
    width, height = panel.size
    return [strip.text for strip in panel.render_lines(Region(0, 0, width, height))]


def given(app: CrawlScopeApp) -> str:
    """The text of the lines the panel was last given to show."""
    panel = app.screen.query_one(QueueFigures)
    return " ".join("".join(text for text, _ in line) for line in panel._lines)


def words(text: str) -> list[str]:
    return text.split()


def whole(app: CrawlScopeApp) -> bool:
    """What is drawn is every word given, in order, and nothing else."""
    return words(" ".join(rows(app))) == words(given(app))


@pytest.mark.parametrize("when", ["paused", "finished"])
async def test_a_resize_from_140x40_to_80x24_redraws_the_queue_panel_whole(when: str) -> None:
    paused = when == "paused"
    demo = DemoConfig(pages=30, latency=0.01)
    app = CrawlScopeApp(LiveCrawl(make_config=config(4), demo=demo, paused=paused))
    async with app.run_test(size=(140, 40)) as pilot:
        if paused:
            await until(pilot, lambda: "join() waits: paused" in given(app), "paused")
        else:
            await until(
                pilot,
                lambda: (c := live_crawler(app)) is not None and c.phase is Phase.FINISHED,
                "the crawl's end",
            )
            await until(pilot, lambda: "join() returned" in given(app), "the end shown")
        await until(pilot, lambda: whole(app), "the panel drawn at 140x40")
        assert "← join() counts it" in " ".join(rows(app))  # the wide words
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: app.screen.query_one(QueueFigures).size.width < 34, "narrow")
        await until(pilot, lambda: "counts it" not in given(app), "the narrow words given")
        await until(pilot, lambda: whole(app), "the whole panel redrawn at 80x24")
        drawn = " ".join(rows(app))
        assert "counts it" not in drawn
        assert ("join() waits" if paused else "join() returned") in drawn
