"""Credentials in a root URL are sent, and never shown or written (issue 10, item 9)."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import AsyncIterator
from dataclasses import asdict
from pathlib import Path

import pytest
from aiohttp import web
from tui_support import crawler_of, frames, screen_text, until

from crawlscope.engine.config import ConfigError, CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.credentials import Credentials
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.text import mask_userinfo
from crawlscope.engine.report import write_report
from crawlscope.engine.urls import normalize
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from helpers import run_cli

SECRET = "TopSecret1"
BASIC = "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode()


class Site:
    """Pages behind basic auth: each answers 401 without alice's password."""

    def __init__(self) -> None:
        self.authorization: dict[str, list[str | None]] = {}
        self.base = ""

    async def handle(self, request: web.Request) -> web.Response:
        got = request.headers.get("Authorization")
        self.authorization.setdefault(request.path_qs, []).append(got)
        if request.path == "/robots.txt":
            return web.Response(status=404)
        if got != BASIC:
            return web.Response(status=401, headers={"WWW-Authenticate": 'Basic realm="x"'})
        if request.path == "/":
            # A relative link (it inherits the root's userinfo) and a redirect.
            page = '<a href="/page">page</a> <a href="/moved">moved</a>'
        else:
            page = f"<p>{request.path}</p>"
        if request.path == "/moved":
            raise web.HTTPFound("/page?from=moved")
        return web.Response(text=page, content_type="text/html")


@pytest.fixture
async def site() -> AsyncIterator[Site]:
    site = Site()
    app = web.Application()
    app.router.add_get("/{tail:.*}", site.handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    site.base = f"127.0.0.1:{runner.addresses[0][1]}"
    yield site
    await runner.cleanup()


def root_of(site: Site) -> str:
    return f"http://alice:{SECRET}@{site.base}/"


async def test_the_password_is_sent_and_the_pages_answer(site: Site) -> None:
    crawler = Crawler(CrawlConfig(roots=(root_of(site),), max_tasks=2))
    await crawler.crawl()
    assert site.authorization["/"] == [BASIC]
    assert site.authorization["/page"] == [BASIC]
    masked = f"http://alice:***@{site.base}"
    assert crawler.ledger.done[masked + "/"].status == 200
    assert crawler.ledger.done[masked + "/page"].status == 200
    # A relative Location keeps the user, as a relative link does.
    assert crawler.ledger.done[masked + "/moved"].next_url == masked + "/page?from=moved"
    assert crawler.ledger.done[masked + "/page?from=moved"].status == 200
    assert site.authorization["/page?from=moved"] == [BASIC]


async def test_the_password_is_in_no_report_record_or_recording(site: Site, tmp_path: Path) -> None:
    out, rec = tmp_path / "o.jsonl", tmp_path / "o.rec"
    args = ["crawl", root_of(site), "-o", str(out), "--record", str(rec), "-v"]
    result = await asyncio.to_thread(run_cli, *args)
    assert result.returncode == 0, result.stderr
    assert site.authorization["/page"] == [BASIC]
    written = {
        "report": result.stdout,
        "stderr": result.stderr,
        "jsonl": out.read_text(),
        "recording": rec.read_text(),
    }
    for name, text in written.items():
        assert SECRET not in text, name
    assert f"alice:***@{site.base}/page 200" in result.stdout
    urls = {json.loads(line)["url"] for line in written["jsonl"].splitlines()}
    assert f"http://alice:***@{site.base}/page" in urls


async def test_the_password_is_not_on_the_screen(site: Site) -> None:
    root = root_of(site)
    app = CrawlScopeApp(
        LiveCrawl((root,), make_config=lambda roots: CrawlConfig(roots=tuple(roots)))
    )
    async with app.run_test(size=(200, 40)) as pilot:
        crawler = await crawler_of(pilot)
        await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
        await frames(pilot, 3)
        text = screen_text(app)
        exported = app.export_screenshot()
    assert site.authorization["/page"] == [BASIC]
    assert SECRET not in text and SECRET not in exported
    assert "alice:***@" in text
    report = io.StringIO()
    app.write_report(report)
    assert SECRET not in report.getvalue()


def test_a_config_keeps_the_password_out_of_everything_it_shows() -> None:
    config = CrawlConfig(roots=(f"http://alice:{SECRET}@Example.com/",))
    assert config.roots == ("http://alice:***@Example.com/",)
    assert config.root_urls == ["http://alice:***@example.com/"]
    for text in (repr(config), json.dumps(asdict(config), default=str)):
        assert SECRET not in text
    assert config.credentials.request("http://alice:***@example.com/x") == (
        "http://example.com/x",
        "Basic " + base64.b64encode(f"alice:{SECRET}".encode()).decode(),
    )
    assert SECRET not in repr(config.credentials)
    with pytest.raises(ConfigError) as caught:
        CrawlConfig(roots=(f"ftp://alice:{SECRET}@example.com/",))
    assert SECRET not in str(caught.value) and "alice:***@" in str(caught.value)


def test_a_pages_password_is_masked_and_not_sent() -> None:
    # Only the roots' passwords are the user's; one a page writes is never sent.
    _roots, credentials = Credentials.take([f"http://alice:{SECRET}@h/"])
    link = normalize("http://bob:hunter2@h/x")
    assert link == "http://bob:***@h/x"
    assert credentials.request(link) == ("http://h/x", None)
    assert credentials.request("http://alice:***@h/y")[1] == BASIC
    # A user with no password is sent as aiohttp sends it: the user and an empty password.
    assert credentials.request("http://carol@h/")[1] == "Basic " + base64.b64encode(
        b"carol:"
    ).decode("ascii")


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://alice:s3cret@h/", "http://alice:***@h/"),
        ("see ftp://u:p@ss@h:21/x too", "see ftp://u:***@h:21/x too"),
        ("http://h/?q=a:b@c", "http://h/?q=a:b@c"),
        ("http://user@h/", "http://user@h/"),
    ],
)
def test_mask_userinfo(text: str, shown: str) -> None:
    assert mask_userinfo(text) == shown


async def test_the_report_of_a_crawl_names_the_user_not_the_password(site: Site) -> None:
    crawler = Crawler(CrawlConfig(roots=(root_of(site),)))
    await crawler.crawl()
    out = io.StringIO()
    write_report(crawler, out)
    assert SECRET not in out.getvalue()
    assert f"http://alice:***@{site.base}/ 200" in out.getvalue()
