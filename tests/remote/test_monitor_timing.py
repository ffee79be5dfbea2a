"""Timing over the monitor: a viewer in another process's place (a real WebSocket) sees
each worker's figures, the warnings and loop health; a peer's bad or oversized timing
data is refused or cut, never trusted."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
from timing_support import DENSE_LINKS, Serve, dense_site

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.exchange.plain import BadMessage
from crawlscope.engine.lints.lint import LintKind
from crawlscope.engine.observe.snapshot import MAX_WARNINGS, Phase
from crawlscope.engine.remote.client import RemoteCrawl
from crawlscope.engine.remote.monitor import Monitor, listen
from crawlscope.engine.remote.protocol import snapshot_from_plain, snapshot_to_plain
from crawlscope.engine.timing.loop_health import MAX_HOLDS
from helpers import until


async def test_a_viewer_sees_the_timing_and_the_warnings_of_the_crawl(serve: Serve) -> None:
    base = (await serve(dense_site())).rstrip("/")
    config = CrawlConfig(roots=(base + "/",), max_tasks=3, max_links=DENSE_LINKS, max_pages=8)
    crawler = Crawler(config)
    async with Monitor(crawler, crawler, listen("127.0.0.1", 0), fps=30) as monitor:
        remote = RemoteCrawl(monitor.view_url)
        watching = asyncio.create_task(remote.run())
        try:
            await crawler.crawl()
            final = crawler.snapshot()
            await until(
                lambda: (
                    remote.ready.is_set()
                    and remote.snapshot().warning_count == final.warning_count
                    and remote.snapshot().phase is Phase.FINISHED
                ),
                "the last frame",
            )
            # A viewer gets the rows it shows: these, as a screen of three rows would ask.
            rows = {view.id for view in final.workers}
            await until(
                lambda: {view.id for view in remote.snapshot(rows).workers} == rows, "the rows"
            )
        finally:
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watching
    seen = remote.snapshot()
    assert any(lint.kind is LintKind.LOOP_BLOCKED for lint in seen.warnings)
    assert seen.warnings == final.warnings
    assert seen.holds == final.holds
    assert any(view.step_max > 0 for view in seen.workers)


def test_a_snapshots_timing_travels_unchanged_and_bad_timing_is_refused() -> None:
    crawler = Crawler(CrawlConfig(roots=("http://127.0.0.1:9/",)))
    plain = json.loads(json.dumps(snapshot_to_plain(crawler.snapshot())))
    lint = {"kind": "loop-blocked", "t": 1.0, "text": "worker 0 held the loop", "worker": 0}
    hold = {"seconds": 0.2, "t": 1.0, "worker": 0, "state": "parsing"}
    plain.update(warnings=[lint], warning_count=1, holds=[hold], loop_lag_p99=0.01)
    snap = snapshot_from_plain(plain)
    assert snap.warnings[0].kind is LintKind.LOOP_BLOCKED and snap.holds[0].seconds == 0.2
    assert snapshot_from_plain(json.loads(json.dumps(snapshot_to_plain(snap)))) == snap
    with pytest.raises(BadMessage, match=r"snapshot.warnings\[0\].kind is not a known LintKind"):
        snapshot_from_plain({**plain, "warnings": [{**lint, "kind": "melted"}]})
    with pytest.raises(BadMessage, match=r"snapshot.loop_lag_p50 is not a number"):
        snapshot_from_plain({**plain, "loop_lag_p50": "slow"})
    # A peer that sends more than an engine keeps is cut to the latest.
    flood = [{**lint, "text": f"w{i}"} for i in range(MAX_WARNINGS * 3)]
    cut = snapshot_from_plain({**plain, "warnings": flood, "holds": [hold] * 100})
    assert len(cut.warnings) == MAX_WARNINGS and cut.warnings[-1].text == flood[-1]["text"]
    assert len(cut.holds) == MAX_HOLDS
