"""A snapshot of the TUI after crawling the hostile site's text cases.

URLs, redirect targets, content types and error messages carrying Rich markup, ANSI
and OSC escapes, control and bidi characters must appear as characters: a markup tag
that acted, or an escape that reached the terminal, would change the picture. The
terminal is wide enough for the recent-fetches panel to show the hostile part of the
unusable Location header and of the parser's error (neither is percent-encoded), and
the characters on screen are checked as well as the picture.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.pilot import Pilot
from tui_support import config, crawler_of, frames, screen_text, until

from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.demo import DemoConfig
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
    text = screen_text(pilot.app)  # type: ignore[arg-type]
    # The Location header's markup as characters, its escapes escaped, on screen.
    assert "[@click=app.quit]quit[/] [link=http://evil.invalid/]click me[/link]" in text
    assert "\\x1b[31mred\\x1b[0m \\x1b]8;;" in text
    assert "Invalid header token:" in text and "b'X-[bold]\\\\x1b[31mred" in text
    for char in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert char not in text, repr(char)


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
    # 440 columns: the recent-fetches panel's 200 show the hostile part of each line, and
    # stop short of the demo site's port in the parser's error (which changes every run).
    assert snap_compare(app, terminal_size=(440, 50), run_before=finished)
