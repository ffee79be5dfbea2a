"""A viewer's own recent past (issue 40): each monitor frame carries the flight recorder's
events since the last, the viewer checks them as a recording's lines and keeps them, and
its timeline and rewind draw what the crawl's own ring would. Real crawls of the demo site,
real WebSockets; hostile events are refused without effect."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from test_monitor import attached

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.remote.client import RemoteCrawl
from crawlscope.engine.remote.monitor import Monitor, listen
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.trace.flight import FlightRing
from crawlscope.engine.trace.recording import Recorder
from helpers import until

pytestmark = pytest.mark.slow


@contextlib.asynccontextmanager
async def recorded(pages: int = 200) -> AsyncIterator[tuple[Crawler, FlightRing, Monitor]]:
    async with DemoServer(DemoConfig(pages=pages, latency=0.02)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=4))
        ring = FlightRing()
        recorder = Recorder(crawler, None, ring)
        monitor = Monitor(crawler, crawler, listen("127.0.0.1", 0), fps=30.0, past=ring)
        async with monitor:
            crawl = asyncio.create_task(crawler.crawl())
            try:
                yield crawler, ring, monitor
            finally:
                crawler.stop()
                await crawl
                recorder.close()


async def test_a_viewers_past_is_the_crawls_from_when_it_joined() -> None:
    async with recorded() as (crawler, ring, monitor), attached(monitor.view_url) as remote:
        await until(lambda: crawler.t1 is not None, "the crawl's end")
        await until(
            lambda: remote.past is not None and remote.past.added > 0
            and remote.past.last_t == ring.last_t,
            "the viewer's past caught up",
        )  # fmt: skip
        past = remote.past
        assert past is not None
        # The viewer's events are the crawl's own, from its first frame on.
        mine = json.loads(json.dumps(ring.events()))  # as they travel: tuples as lists
        theirs = past.events()
        assert theirs == mine[len(mine) - len(theirs) :]
        # Played from the crawl's state at the viewer's first event, the two agree at
        # every moment the viewer holds (the viewer's own base is empty: it compares the
        # worker rows a state event set since).
        whole, seen = ring.replay(), past.replay()
        for k in range(1, 10):
            t = seen.first + k * (seen.duration - seen.first) / 10
            whole.seek(t)
            seen.seek(t)
            ids = {w.id for w in seen.snapshot().workers}
            a = {w.id: (w.state, w.url) for w in whole.snapshot().workers if w.id in ids}
            b = {w.id: (w.state, w.url) for w in seen.snapshot().workers}
            assert a == b, t
        assert seen.snapshot().accounting == whole.snapshot().accounting


@pytest.mark.parametrize(
    ("events", "words"),
    [
        ([{"t": 1.0, "kind": "state", "worker": -3, "state": "waiting"}], "events[0]"),
        ([{"t": 2.0, "kind": "phase"}, {"t": 1.0, "kind": "phase"}], "goes back in time"),
        ("nope", "events is not a list"),
        ([{"t": 1.0, "kind": "fetch", "record": {"url": 5}}], "events[0]"),
    ],
)
async def test_hostile_events_are_refused_and_change_nothing(events: Any, words: str) -> None:
    async with recorded(pages=30) as (crawler, _ring, monitor), attached(monitor.view_url) as r:
        await until(lambda: r.past is not None and r.past.added > 0, "a past")
        await refused(r, crawler, events, words)


async def refused(remote: RemoteCrawl, crawler: Crawler, events: Any, words: str) -> None:
    """A frame carrying `events` is dropped whole, saying `words`; the past kept is untouched."""
    past = remote.past
    assert past is not None
    kept, bad = past.added, remote.bad_frames
    frame = {"kind": "frame", "snapshot": json.loads(json.dumps(_plain(crawler))),
             "recent": [], "viewers": [], "events": events}  # fmt: skip
    assert remote._take(json.dumps(frame)) is False
    assert remote.bad_frames == bad + 1 and words in remote.bad
    assert remote.past is past and past.added == kept


def _plain(crawler: Crawler) -> dict[str, Any]:
    from crawlscope.engine.remote.protocol import snapshot_to_plain

    return snapshot_to_plain(crawler.snapshot(()), rows=True)
