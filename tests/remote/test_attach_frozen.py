"""A monitor that goes leaves its last frame on screen, drawn whole: the screen paces the
redirect tree by its own clock, since the source's clock stops with the last frame."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web
from hostile_peers import hello
from tui_support import frames, screen_text, until

from crawlscope.engine.observe.snapshot import Accounting, Phase, Snapshot
from crawlscope.engine.redirects import Chain, ChainEnd
from crawlscope.engine.remote.client import Link, RemoteCrawl
from crawlscope.engine.remote.protocol import PATH, chain_to_plain, snapshot_to_plain
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.attach import Attached


def frame_at(t: float, done: int) -> str:
    """A frame at the crawl's second `t` with `done` pages: the tree's version moves
    with every page done, so two of these 0.1 s apart are two versions of the chains."""
    snap = Snapshot(
        t=t, elapsed=t, phase=Phase.RUNNING, workers=(), live_workers=0,
        accounting=Accounting(done + 5, done, 0, 0, 5, 0, 0), unfinished=5,
        redirect_version=1, paused_all=False, slowmo=0.0, crawl_delay="",
    )  # fmt: skip
    chain = Chain(("http://127.0.0.1:9/a", "http://127.0.0.1:9/b"), ChainEnd.FETCHED, None, True)
    plain: dict[str, Any] = {
        "kind": "frame", "snapshot": snapshot_to_plain(snap), "recent": [],
        "recent_reset": True, "viewers": [], "chains": [chain_to_plain(chain)],
        "chain_count": 1,
    }  # fmt: skip
    return json.dumps(plain)


async def test_the_last_frame_of_a_monitor_that_went_is_drawn_whole() -> None:
    first_drawn = asyncio.Event()

    async def socket(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_str(json.dumps(hello()))
        await ws.send_str(frame_at(1.0, done=2))
        await first_drawn.wait()
        # Within the tree's pace of the first, by the crawl's clock; then nothing more.
        await ws.send_str(frame_at(1.1, done=3))
        await ws.close()
        return ws

    site = web.Application()
    site.router.add_get(PATH, socket)
    runner = web.AppRunner(site)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    url = f"ws://127.0.0.1:{runner.addresses[0][1]}{PATH}"
    try:
        attached = Attached(url)
        app = CrawlScopeApp(attached)
        async with app.run_test(size=(120, 40)) as pilot:
            remote: RemoteCrawl = attached.remote
            await until(pilot, lambda: remote.frames >= 1, "the first frame")
            await frames(pilot, 2)  # the first frame, every panel drawn
            first_drawn.set()
            await until(pilot, lambda: remote.link is Link.DROPPED, "the monitor gone")
            assert remote.snapshot().accounting.done == 3
            # Every panel drawn again, from the last frame: before, the tree waited
            # for the crawl's clock to move half a second, which it never did.
            await frames(pilot, 2)
            assert "dropped" in screen_text(app)
    finally:
        await runner.cleanup()
