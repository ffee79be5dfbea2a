"""The verdict on the main screen (issue 42): the line under the status line says what the
crawl's snapshot says limits it, and before there is evidence, that it waits for some."""

from __future__ import annotations

import pytest
from tui_support import config, crawler_of, until

from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.verdict_line import NOT_YET, VerdictLine

pytestmark = pytest.mark.slow


def line_of(app: CrawlScopeApp) -> str:
    widget = app.panels.query_one(VerdictLine)
    return widget.render_line(0).text.strip()


async def test_the_line_under_the_status_says_what_limits_the_crawl() -> None:
    # Twelve workers, a host limit of 8 and a slow site: held back by the host and the
    # server both, whatever the machine.
    demo = DemoConfig(pages=2000, latency=0.3)
    app = CrawlScopeApp(LiveCrawl(make_config=config(12), demo=demo))
    async with app.run_test(size=(160, 40)) as pilot:
        crawler = await crawler_of(pilot)
        assert line_of(app) == NOT_YET
        await until(pilot, lambda: bool(crawler.health.diagnosis.verdict.line), "a verdict",
                    timeout=30)  # fmt: skip
        said = crawler.health.diagnosis.verdict.line
        await until(pilot, lambda: line_of(app).startswith(said[:60]), "the verdict drawn")
        # The status line above it and the workers below: one line of its own.
        assert app.panels.query_one(VerdictLine).region.y == 1
