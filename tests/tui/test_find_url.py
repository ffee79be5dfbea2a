"""`/` on the live screen (issue 42): a URL the crawl fetched is answered from the flight
recorder's kept past as `crawlscope why` answers it; one never seen says so, with the
nearest seen. The real TUI under Pilot on the demo site."""

from __future__ import annotations

import pytest
from textual.widgets import Static
from tui_support import config, crawler_of, until

from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.find_url_screen import FindUrlScreen

pytestmark = pytest.mark.slow


async def test_slash_answers_for_a_fetched_url_and_a_never_seen_one() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(4), demo=DemoConfig(pages=200)))
    async with app.run_test(size=(160, 45)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: len(crawler.ledger.done) >= 20, "20 pages")
        url, record = next((u, r) for u, r in crawler.ledger.done.items() if r.referrer)
        await pilot.press("slash")
        await until(pilot, lambda: isinstance(app.screen, FindUrlScreen), "the question")
        screen = app.screen
        screen.query_one("#find-input").value = url  # type: ignore[attr-defined]
        await pilot.press("enter")

        def answer() -> str:
            return str(screen.query_one("#find-answer", Static).render())

        await until(pilot, lambda: url in answer(), "the answer")
        text = answer()
        assert f"fetched: {record.status} by worker {record.worker}" in text
        assert f"{record.referrer}  [depth {record.depth - 1}]" in text  # its referrer
        screen.query_one("#find-input").value = url + "-never"  # type: ignore[attr-defined]
        await pilot.press("enter")
        await until(pilot, lambda: "never seen in this crawl" in answer(), "never seen")
        assert url in answer().split("nearest seen:")[1]
