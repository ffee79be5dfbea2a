"""The docs' timing scenes: one worker in full (`enter`) and the warnings (`w`).

python -m crawlscope.tui.screenshots screenshots worker-detail.svg warnings.svg
"""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web
from textual.pilot import Pilot

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.plan import CrawlPlan
from crawlscope.engine.trace.replay import ReplayedCrawl

from .app import CrawlScopeApp
from .screenshot_run import shoot_app
from .startup import LiveCrawl, Recording
from .waiting import wait_until
from .widgets.warnings_screen import WarningsScreen
from .widgets.worker_detail_screen import WorkerDetailScreen

# A page of this many distinct links holds the loop for a few hundred ms while its
# links are taken in: the loop-blocked warning the scene shows.
DENSE_LINKS = 40_000


def _config(roots: Sequence[str]) -> CrawlConfig:
    return CrawlConfig(roots=tuple(roots), max_tasks=6)


def worker_detail_scene(target: Path) -> Path:
    """The demo crawl a few seconds in, `enter` on its third worker."""
    app = CrawlScopeApp(LiveCrawl(make_config=_config))

    async def steer(p: Pilot[Any]) -> None:
        await p.pause(3.0)
        await p.press("down", "down", "enter")
        await wait_until(lambda: isinstance(app.screen, WorkerDetailScreen), "the detail")
        await p.pause(0.6)  # its next refresh, with the histograms filled in

    return shoot_app(app, target, (120, 40), steer)


async def _record_dense_crawl(recording: Path) -> None:
    dense = b"".join(b"<a href=/p%d>p</a>" % i for i in range(DENSE_LINKS))
    pages: dict[str, bytes] = {"/": b'<a href="/big">a big page</a>', "/big": dense}

    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=pages.get(request.path, b"a page"), content_type="text/html")

    app = web.Application()
    app.router.add_get("/{tail:.*}", handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        root = f"http://127.0.0.1:{runner.addresses[0][1]}/"
        config = CrawlConfig(roots=(root,), max_tasks=4, max_links=DENSE_LINKS, max_pages=60)
        async with CrawlPlan(config, record=str(recording)).open() as crawl:
            await crawl.run()
    finally:
        await runner.cleanup()


def warnings_scene(target: Path) -> Path:
    """A crawl with a link-dense page, recorded, replayed to its end, and `w`."""
    with tempfile.TemporaryDirectory() as folder:
        recording = Path(folder) / "dense.jsonl"
        asyncio.run(_record_dense_crawl(recording))
        replay = ReplayedCrawl.load(recording)
    app = CrawlScopeApp(Recording(replay, "dense.jsonl", paused=True))

    async def steer(p: Pilot[Any]) -> None:
        await p.press("end")
        await p.pause(0.6)
        await p.press("w")
        await wait_until(lambda: isinstance(app.screen, WarningsScreen), "the warnings")

    return shoot_app(app, target, (120, 40), steer)


TIMING_SCENES: dict[str, Callable[[Path], Path]] = {
    "worker-detail.svg": worker_detail_scene,
    "warnings.svg": warnings_scene,
}
