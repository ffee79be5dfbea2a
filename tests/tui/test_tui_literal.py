"""Crawled text is shown literally: markup stays characters, escapes are escaped."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from rich.text import Text
from textual.app import App, ComposeResult
from tui_support import config, crawler_of, frames, screen_text, until

from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.text import printable
from crawlscope.engine.observe.workers import WorkerState, WorkerView
from crawlscope.engine.records import FetchRecord
from crawlscope.engine.redirects import Chain, ChainEnd
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.format import short_url
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.recent_fetches import RecentFetches
from crawlscope.tui.widgets.redirect_tree import RedirectTree
from crawlscope.tui.widgets.status_line import StatusLine, StatusView
from crawlscope.tui.widgets.workers_table import WorkersTable
from helpers import Handler, html

MARKUP = "[bold]x[/bold]"
CLICK = "[@click=app.quit]"
ANSI = "\x1b[31m"
OSC = "\x1b]0;title\x07"
BIDI = "\u202e"
LOCATION = f"javascript:{MARKUP}{CLICK}{ANSI}{OSC}{BIDI}"
# Not a header name: the client's parser refuses the response with an error quoting it,
# its own newlines raw (control characters in the exception's text, not percent-encoded).
BAD_HEAD = b"HTTP/1.1 200 OK\r\nX-[bold]\x1b[31m: x\r\n"
# Not http(s): the crawler cannot follow it and reports it, header text and all.
REDIRECT = b"HTTP/1.1 302 Found\r\nLocation: " + LOCATION.encode() + b"\r\n"

Serve = Callable[[dict[str, Handler]], Awaitable[str]]


def raw_answer(head: bytes) -> Handler:
    """A handler that answers `head` as it is (aiohttp would refuse to send it)."""

    async def answer(request: web.Request) -> web.Response:
        assert request.transport is not None
        request.transport.write(head + b"Content-Length: 0\r\nConnection: close\r\n\r\n")
        request.transport.close()
        return web.Response()

    return answer


async def test_markup_and_escapes_in_crawled_urls_render_literally(serve: Serve) -> None:
    page = (
        f'<a href="/{MARKUP}">a</a> <a href="/{CLICK}">b</a>'
        f' <a href="/red{ANSI}text">c</a> <a href="/r">d</a> <a href="/bad">e</a>'
    )
    routes = {
        "/": html(page),
        "/r": raw_answer(REDIRECT),
        "/bad": raw_answer(BAD_HEAD),
        "/{tail:.*}": html("leaf"),
    }
    root = await serve(routes)
    # The root as given (from a command line or a seed list: text from elsewhere too), which
    # the status line draws and the engine keeps unencoded.
    root = f"{root}?from={OSC}{BIDI}"
    app = CrawlScopeApp(LiveCrawl((root,), make_config=config(2, max_tries=1)))
    # Wide, so that the whole exception line fits in the recent-fetches panel.
    async with app.run_test(size=(320, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
        await frames(pilot, 3)
        text = screen_text(app)
        assert app.is_running  # [@click=app.quit] quit nothing
        origin = root.partition("?")[0].rstrip("/")
        for url in list(crawler.ledger.done)[1:]:
            # However the engine spelled the URL, the screen shows exactly that.
            assert printable(short_url(url, origin)) in text, url
        assert "unusable Location header" in text
        # From the Location header, unencoded: the markup as characters, the escapes escaped.
        assert f"{MARKUP}{CLICK}\\x1b[31m\\x1b]0;title\\x07\\u202e" in text
        assert "?from=\\x1b]0;title\\x07\\u202e" in text  # the root on the status line
        assert "Invalid header token:" in text
        for char in ("\x1b", "\x07", "\u202e"):
            assert char not in text, repr(char)


class Panels(App[None]):
    """The widgets alone, fed hostile text directly, whatever the engine would do to it."""

    def compose(self) -> ComposeResult:
        yield StatusLine()
        yield WorkersTable()
        yield RecentFetches()
        yield RedirectTree()


# U+2028 and U+2029 end a line wherever they are drawn, like a newline.
HOSTILE = f"http://h/{MARKUP}{CLICK}{ANSI}red\u202eevil\u2028line\u2029para"


async def test_each_widget_shows_hostile_text_as_characters() -> None:
    app = Panels()
    async with app.run_test(size=(200, 30)) as pilot:
        now = time.time()
        record = FetchRecord(
            url=HOSTILE, status=None, next_url=None, exception=f"Boom: {MARKUP}{ANSI}",
            size=0, content_type=None, encoding=None, num_urls=0, num_new_urls=0, tries=1,
            depth=0, referrer=None, worker=0, t_start=now, t_end=now,
        )  # fmt: skip
        app.query_one(StatusLine).show(StatusView(Phase.RUNNING, 1.0, 1, 1, 0.0, site=HOSTILE))
        app.query_one(WorkersTable).show(
            [WorkerView(0, WorkerState.BODY, HOSTILE, 0.5, 3, False, False, None)]
        )
        app.query_one(RecentFetches).show([record], record)
        chain = Chain((HOSTILE, f"{HOSTILE}/2"), ChainEnd.LOOP, None, meets=True)
        app.query_one(RedirectTree).show([chain])
        await pilot.pause()
        text = screen_text(app)
        escaped = printable(HOSTILE)
        assert "\\x1b[31m" in escaped and "\\u202e" in escaped
        assert "\\u2028line\\u2029para" in escaped
        for widget in (StatusLine, WorkersTable, RecentFetches, RedirectTree):
            lines = screen_text_of(app, widget)
            assert escaped in lines, f"{widget.__name__} did not show the URL literally"
        assert f"Boom: {MARKUP}\\x1b[31m" in text
        for char in ("\x1b", "\u202e", "\u2028", "\u2029"):
            assert char not in text, repr(char)
        assert app.is_running


def screen_text_of(app: App[None], widget: type) -> str:
    from textual.geometry import Region

    w = app.query_one(widget)
    strips = w.render_lines(Region(0, 0, w.size.width, w.size.height))
    return "\n".join(strip.text for strip in strips)


def test_crawled_text_is_never_markup() -> None:
    """The helper every widget uses makes a Text with no spans from markup."""
    from crawlscope.tui.format import crawled

    shown = crawled(MARKUP + CLICK)
    assert isinstance(shown, Text)
    assert shown.plain == MARKUP + CLICK and not shown.spans
