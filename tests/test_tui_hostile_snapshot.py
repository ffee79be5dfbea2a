"""A snapshot of the TUI after crawling the hostile site's text cases.

URLs, redirect targets, content types and error messages carrying Rich markup, ANSI
and OSC escapes, control and bidi characters must appear as characters: a markup tag
that acted, or an escape that reached the terminal, would change the picture.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot
from tui_support import config, crawler_of, frames, until

from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.engine.snapshot import Phase
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl

# The demo site's own special routes plus the hostile text cases; the slow and huge
# hostile cases are excluded, so one worker finishes in a second or two.
ONLY_TEXT = (r"/page/\d", r"/hostile/(?!$|text/)")


async def finished(pilot: Pilot[int]) -> None:
    crawler = await crawler_of(pilot)
    await pilot.press("p")
    await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
    await frames(pilot, 10)


def test_hostile_text_is_shown_literally(snap_compare: Callable[..., bool]) -> None:
    live = LiveCrawl(
        make_config=config(1, exclude=ONLY_TEXT, max_tries=1, total_timeout=5),
        demo=DemoConfig(pages=2, hostile=True),
        paused=True,
    )
    app = CrawlScopeApp(
        live,
        reproducible=True,
    )
    assert snap_compare(app, terminal_size=(160, 50), run_before=finished)
