"""The docs' pictures of answers (issue 42): the verdict line of a crawl held back by its
server, and `/` asked what became of a page reached through a redirect."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual.pilot import Pilot

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig

from .app import CrawlScopeApp
from .screenshot_run import shoot_app
from .startup import LiveCrawl
from .waiting import wait_until
from .widgets.find_url_screen import FindUrlScreen


def _app(demo: DemoConfig, workers: int, per_host: int) -> CrawlScopeApp:
    def config(roots: Any) -> CrawlConfig:
        return CrawlConfig(roots=tuple(roots), max_tasks=workers, per_host=per_host)

    return CrawlScopeApp(LiveCrawl(make_config=config, demo=demo))


async def _crawler(app: CrawlScopeApp) -> Crawler:
    source = app.source
    assert isinstance(source, LiveCrawl)
    await wait_until(lambda: source.crawler is not None and bool(source.crawler.t0), "a crawl")
    assert source.crawler is not None
    return source.crawler


def verdict_scene(target: Path) -> Path:
    # Answers of 0.3 s and no host limit to speak of: the server is what the crawl waits on.
    app = _app(DemoConfig(pages=2000, latency=0.3), workers=20, per_host=100)

    async def steer(_p: Pilot[Any]) -> None:
        crawler = await _crawler(app)
        said = crawler.health.diagnosis
        await wait_until(lambda: said.verdict.cause == "server", "the verdict", timeout=60)

    return shoot_app(app, target, (120, 30), steer)


def why_scene(target: Path) -> Path:
    app = _app(DemoConfig(pages=300, latency=0.05), workers=8, per_host=4)

    async def steer(p: Pilot[Any]) -> None:
        crawler = await _crawler(app)
        url = crawler.config.roots[0] + "baz"  # /foo and /bar redirect to it
        await wait_until(lambda: url in crawler.ledger.done, "/baz fetched", timeout=60)
        await p.press("slash")
        await wait_until(lambda: isinstance(app.screen, FindUrlScreen), "the question")
        await p.press(*url)
        await p.press("enter")
        await p.pause(0.3)

    return shoot_app(app, target, (120, 30), steer)


ANSWER_SCENES: dict[str, Callable[[Path], Path]] = {
    "verdict.svg": verdict_scene,
    "why.svg": why_scene,
}
