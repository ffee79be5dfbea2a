"""`/` on the live screen (issue 42): a URL the crawl fetched is answered from the flight
recorder's kept past as `crawlscope why` answers it; one never seen says so, with the
nearest seen. The real TUI under Pilot on the demo site."""

from __future__ import annotations

import time

import pytest
from textual.widgets import Static
from tui_support import config, crawler_of, until

from crawlscope.engine.observe.workers import Worker, WorkerState
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


async def test_slash_answers_from_the_crawls_books_for_queued_held_and_refused_urls() -> None:
    # Two workers and 2 s a page: URLs wait in the queue, a worker holds one for seconds.
    demo = DemoConfig(pages=200, latency=2.0)
    app = CrawlScopeApp(LiveCrawl(make_config=config(2), demo=demo))
    async with app.run_test(size=(160, 45)) as pilot:
        crawler = await crawler_of(pilot)
        private = crawler.config.roots[0] + "private/secret"
        ready = lambda: private in crawler.ledger.filtered and crawler.q.qsize() >= 5  # noqa: E731
        await until(pilot, ready, "a queue and a refusal")
        await pilot.press("slash")
        await until(pilot, lambda: isinstance(app.screen, FindUrlScreen), "the question")
        screen = app.screen

        async def ask(url: str, words: str) -> str:
            screen.query_one("#find-input").value = url  # type: ignore[attr-defined]
            await pilot.press("enter")
            answer = screen.query_one("#find-answer", Static)
            await until(pilot, lambda: str(answer.render()).startswith(url), url)
            text = str(answer.render())
            assert words in text, text
            return text

        await ask(private, "not fetched: disallowed by robots.txt (Disallow: /private/)")
        # The last URL queued: the workers reach it tens of seconds from now.
        last, _ = crawler.q._queue[-1]  # type: ignore[attr-defined]
        depth, referrer = crawler.ledger.origin(last)
        text = await ask(last, "still queued: not fetched yet (one of ")
        assert f"{referrer}  [depth {depth - 1}]" in text  # its discovery path

        def just_sent() -> Worker | None:
            # Seconds from its answer: it still holds the URL when `/` is asked.
            return next((w for w in crawler.workers.values() if w.state is WorkerState.HEADERS
                         and time.monotonic() - w.since < 0.5), None)  # fmt: skip

        await until(pilot, just_sent, "a request just sent")
        held = just_sent()
        assert held is not None and held.url is not None
        await ask(held.url, f"in a worker's hands: worker {held.id}, headers")
