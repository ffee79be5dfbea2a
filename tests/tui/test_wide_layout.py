"""At 140 columns the panels give their words room: a worker's "suspended at" whole
where its URL needs a few cells, and the queue's "join() waits" broken between phrases,
never between a number and its noun. The real app on the real demo site."""

from __future__ import annotations

import re

from tui_support import config, crawler_of, screen_text, until

from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.queue_panel import QueueFigures

# Ten workers on one host whose limit is 8: two wait at its gate, in HostGate's await.
DEMO = DemoConfig(pages=400, latency=0.2)
GATE = re.compile(r"HostGate\._wait_for_slot politeness\.py:\d+ ")


async def test_at_140_columns_suspended_at_is_whole_and_join_waits_breaks_between_phrases() -> None:
    app = CrawlScopeApp(LiveCrawl(make_config=config(10), demo=DEMO))
    async with app.run_test(size=(140, 40)) as pilot:
        crawler = await crawler_of(pilot)
        seen: list[str] = []

        def drawn(word: str) -> bool:
            seen.append(screen_text(app))
            return word in seen[-1]

        await until(pilot, lambda: drawn("HostGate._"), "a worker waiting at the host's gate")
        assert GATE.search(seen[-1]), "suspended at is cut: " + seen[-1][:2000]

        figures = app.screen.query_one(QueueFigures)

        def queue_text() -> str:
            lines = figures.render_lines(figures.region.reset_offset)
            return "\n".join(strip.text.rstrip() for strip in lines)

        said: list[str] = []

        def waits_long() -> bool:
            said.append(queue_text())
            # 10 in flight and 100 queued or more: longer than the panel's 36 cells.
            return bool(re.search(r"waits: \d\d+ in flight, \d\d\d+", said[-1].replace("\n", " ")))

        await until(pilot, waits_long, "join() waits on 10 or more in flight and 100 queued")
        assert re.search(r"join\(\) waits: \d+ in flight,\n\d+ queued\n", said[-1]), said[-1]
        crawler.stop()
