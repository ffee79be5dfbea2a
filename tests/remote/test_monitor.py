"""The monitor (engine/remote/monitor.py): one crawl's frames to many viewers over a real
WebSocket, controls only with the token, and bad input refused without effect."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Container, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import Phase, Snapshot
from crawlscope.engine.records import FetchRecord
from crawlscope.engine.redirects import MAX_CHAINS, MAX_HOPS, Chain
from crawlscope.engine.remote.client import Link, RemoteControls, RemoteCrawl
from crawlscope.engine.remote.monitor import (
    BURST,
    FLOOD_LIMIT,
    MAX_MESSAGE,
    Monitor,
    listen,
    parse_address,
)
from crawlscope.engine.remote.protocol import snapshot_to_plain
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import until

TIMEOUT = 60.0


@dataclass
class Sampled:
    """The crawler, noting what each frame the monitor takes holds, by its time."""

    crawler: Crawler
    # By the snapshot's time: whether the frame had the rows, and what the panels drew.
    frames: dict[float, tuple[bool, dict[str, Any]]] = field(default_factory=dict)

    @property
    def config(self) -> CrawlConfig:
        return self.crawler.config

    def snapshot(self, where_for: Container[int] | None = None, rows: bool = True) -> Snapshot:
        snap = self.crawler.snapshot(where_for, rows)
        if isinstance(where_for, frozenset):  # a frame, not the check of a worker id
            self.frames[snap.t] = (bool(where_for), panels(self.crawler, snap))
        return snap

    def recent_fetches(self) -> Sequence[FetchRecord]:
        return self.crawler.recent_fetches()

    def chain_preview(self, limit: int, hops: int) -> tuple[list[Chain], int]:
        return self.crawler.chain_preview(limit, hops)


def panels(crawl: Crawler | RemoteCrawl, snap: Snapshot) -> dict[str, Any]:
    """Everything the panels draw from a source."""
    return {
        "snapshot": snap,
        "recent": [r.to_dict() for r in list(crawl.recent_fetches())[-50:]],
        "chains": crawl.chain_preview(MAX_CHAINS, MAX_HOPS),
    }


@contextlib.asynccontextmanager
async def watched(
    pages: int = 300, tasks: int = 5, paused: bool = False, fps: float = 30.0, latency=0.01
) -> AsyncIterator[tuple[Crawler, Monitor]]:
    """A crawl of the demo site running with a monitor on a free port."""
    async with DemoServer(DemoConfig(pages=pages, latency=latency)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=tasks))
        if paused:
            crawler.pause_all()
        async with Monitor(Sampled(crawler), crawler, listen("127.0.0.1", 0), fps=fps) as monitor:
            crawl = asyncio.create_task(crawler.crawl())
            await until(lambda: crawler.t0 is not None, "the crawl starts")
            try:
                yield crawler, monitor
            finally:
                crawler.stop()
                await crawl


@contextlib.asynccontextmanager
async def attached(url: str) -> AsyncIterator[RemoteCrawl]:
    remote = RemoteCrawl(url)
    task = asyncio.create_task(remote.run())
    try:
        await until(remote.ready.is_set, "the first frame")
        yield remote
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@contextlib.asynccontextmanager
async def raw(url: str) -> AsyncIterator[aiohttp.ClientWebSocketResponse]:
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        yield ws


async def answer(ws: aiohttp.ClientWebSocketResponse) -> dict[str, Any]:
    """The next message that is not a frame or the hello."""
    while True:
        message = await asyncio.wait_for(ws.receive(), TIMEOUT)
        assert message.type is aiohttp.WSMsgType.TEXT, message
        data = json.loads(message.data)
        if data["kind"] in ("ok", "error"):
            return data


def steering(crawler: Crawler) -> tuple[object, ...]:
    """What a control could have changed."""
    return (
        crawler.paused_all,
        crawler.slowmo,
        [(w.id, w.paused, w.retiring, w.alive) for w in crawler.workers.values()],
        crawler._stop.is_set(),
    )


def suspended_at(snap: Snapshot) -> dict[int, str]:
    return {w.id: w.suspended_at for w in snap.workers}


def without_rows(drawn: dict[str, Any]) -> dict[str, Any]:
    return {**drawn, "snapshot": dataclasses.replace(drawn["snapshot"], workers=())}


async def test_a_viewer_sees_each_frame_as_the_crawl_was_when_it_was_taken() -> None:
    async with watched(pages=200, tasks=5, latency=0.02) as (crawler, monitor):
        sampled = monitor.observed
        assert isinstance(sampled, Sampled)
        async with attached(monitor.view_url) as remote:
            # Once the monitor knows the rows shown, frames with rows read their "where".
            await until(lambda: suspended_at(remote.snapshot({1, 2})).get(2), "rows told")
            compared: dict[float, bool] = {}
            while len(compared) < 10 or not any(compared.values()) or all(compared.values()):
                snap = remote.snapshot({1, 2})
                if snap.t not in compared:
                    rows, drawn = sampled.frames[snap.t]
                    assert without_rows(panels(remote, snap)) == without_rows(drawn)
                    # The rows are those of the last frame that had them.
                    last = max(t for t, (had, _) in sampled.frames.items() if had and t <= snap.t)
                    assert snap.workers == sampled.frames[last][1]["snapshot"].workers
                    compared[snap.t] = rows
                if remote.snapshot().phase is Phase.FINISHED:
                    break
                await asyncio.sleep(0.005)
            assert len(compared) >= 10, compared
            assert remote.config == crawler.config
            assert remote.viewers == ("127.0.0.1",)


async def test_a_snapshot_travels_as_the_engine_writes_it() -> None:
    async with watched(paused=True) as (crawler, _monitor):
        snap = crawler.snapshot()
        assert len(snap.workers) == 5
        sent = json.dumps(snapshot_to_plain(snap))
        assert json.loads(sent) == json.loads(json.dumps(snap.to_plain()))
        assert Snapshot.from_plain(json.loads(sent)) == snap


async def test_suspended_at_is_read_for_the_rows_a_viewer_shows() -> None:
    async with watched(paused=True) as (_crawler, monitor), attached(monitor.view_url) as remote:

        def where() -> dict[int, str]:
            return suspended_at(remote.snapshot({1, 2}))

        await until(lambda: where().get(1) and where().get(2), "rows 1 and 2 say where they wait")
        # The rows shown alone come, each with where it waits.
        assert set(where()) == {1, 2}


async def test_a_relayed_viewer_is_named_by_whom_it_relays_for() -> None:
    async with (
        watched(paused=True) as (_crawler, monitor),
        attached(monitor.view_url + "?viewer=10.0.0.7") as browser,
        attached(monitor.view_url + "?viewer=[bold]x%20y") as liar,
    ):
        await until(lambda: len(liar.viewers) == 2, "both counted")
        await until(lambda: set(browser.viewers) == set(liar.viewers), "the same list")
        assert sorted(browser.viewers) == ["10.0.0.7 via 127.0.0.1", "127.0.0.1"]


async def test_two_viewers_get_the_same_frames() -> None:
    async with (
        watched(paused=True) as (_crawler, monitor),
        attached(monitor.view_url) as one,
        attached(monitor.url) as two,
    ):
        await until(lambda: len(one.viewers) == 2, "both viewers counted")
        frames = monitor.frames
        await until(lambda: monitor.frames > frames + 1, "a frame more")
        await until(lambda: one.snapshot() == two.snapshot(), "the same frame")
        assert one.viewers == two.viewers == ("127.0.0.1", "127.0.0.1")
        assert not one.steer and two.steer


async def test_the_token_steers_the_crawl() -> None:
    async with watched(paused=True) as (crawler, monitor), attached(monitor.url) as remote:
        controls = RemoteControls(remote)
        controls.resume_all()
        await until(lambda: not remote.snapshot().paused_all, "resumed")
        assert crawler.phase is Phase.RUNNING
        controls.pause_all()
        await until(lambda: remote.snapshot().phase is Phase.PAUSED, "paused")
        controls.pause(1)
        controls.set_slowmo(0.25)
        await until(lambda: remote.snapshot().slowmo == 0.25, "slowed")
        assert crawler.workers[1].paused and not remote.errors


async def test_a_viewer_is_told_at_the_frame_that_shows_the_crawl_steered() -> None:
    async with watched(paused=True) as (crawler, monitor), attached(monitor.url) as remote:
        await until(
            lambda: (
                remote.ready.is_set()
                and remote.snapshot().live_workers == crawler.snapshot().live_workers > 0
            ),
            "every worker started",
        )
        told: list[tuple[bool, int]] = []
        remote.steered = lambda: told.append(
            (remote.snapshot().paused_all, remote.snapshot().live_workers)
        )
        frames = remote.frames
        await until(lambda: remote.frames > frames + 2, "frames of a crawl left as it is")
        assert told == []
        crawler.resume_all()
        await until(lambda: told, "resumed")
        assert told == [(False, crawler.snapshot().live_workers)]
        crawler.add_worker()
        await until(lambda: len(told) == 2, "a worker more")
        assert told[1][1] == told[0][1] + 1


async def test_without_the_token_the_view_is_read_only() -> None:
    async with watched(paused=True) as (crawler, monitor), attached(monitor.view_url) as remote:
        before = steering(crawler)
        RemoteControls(remote).resume_all()
        await until(lambda: remote.answers == 1, "the answer")
        assert list(remote.errors) == ["read-only: this connection has no control token"]
        assert steering(crawler) == before and crawler.phase is Phase.PAUSED


async def test_a_wrong_token_is_refused_at_the_door() -> None:
    async with watched(paused=True) as (_crawler, monitor):
        remote = RemoteCrawl(monitor.view_url + "?token=guess")
        task = asyncio.create_task(remote.run())
        await until(lambda: remote.why, "the refusal")
        task.cancel()
        assert remote.link is Link.DROPPED
        assert remote.why == "the monitor refused: wrong control token"


BAD_INPUT = [
    ("not json", "not JSON"),
    ("[1, 2]", 'expected {"control": NAME'),
    ('{"control": "fetch", "args": {"url": "http://evil/"}}', "unknown control 'fetch'"),
    ('{"control": "read_file", "args": {"path": "/etc/passwd"}}', "unknown control"),
    ('{"control": "pause", "args": {"worker": 99}}', "no worker 99"),
    ('{"control": "pause", "args": {"worker": "1"}}', "worker must be a worker id"),
    ('{"control": "pause", "args": {"worker": true}}', "worker must be a worker id"),
    ('{"control": "pause", "args": {}}', "pause needs 'worker'"),
    ('{"control": "pause_all", "args": {"worker": 1}}', "pause_all takes no argument"),
    ('{"control": "set_slowmo", "args": {"seconds": 1e308}}', "seconds must be from 0 to"),
    ('{"control": "set_slowmo", "args": {"seconds": NaN}}', "seconds must be from 0 to"),
    ('{"control": "set_slowmo", "args": {"seconds": "1"}}', "seconds must be a number"),
    ('{"control": "stop", "args": []}', "and nothing else"),
    ('{"control": "stop", "extra": 1}', "and nothing else"),
    ("[" * 4000, "not JSON"),
    ('{"view": "all"}', "view must be a list of at most 1000 worker ids"),
    ('{"view": [1, true]}', "view must be a list of worker ids"),
]


@pytest.mark.parametrize(("text", "error"), BAD_INPUT, ids=[error for _, error in BAD_INPUT])
async def test_bad_input_gets_an_error_and_changes_nothing(text: str, error: str) -> None:
    async with watched(paused=True) as (crawler, monitor), raw(monitor.url) as ws:
        before = steering(crawler)
        await ws.send_str(text)
        reply = await answer(ws)
        assert reply["kind"] == "error" and error in reply["error"], reply
        assert steering(crawler) == before
        await ws.send_str('{"control": "add_worker"}')  # the connection is still good
        assert await answer(ws) == {"kind": "ok", "control": "add_worker"}


async def test_a_binary_message_is_refused() -> None:
    async with watched(paused=True) as (crawler, monitor), raw(monitor.url) as ws:
        before = steering(crawler)
        await ws.send_bytes(b'{"control": "stop"}')
        assert (await answer(ws))["error"] == "send text: JSON messages only"
        assert steering(crawler) == before


async def test_a_message_too_big_closes_that_connection_only() -> None:
    async with (
        watched(paused=True) as (crawler, monitor),
        attached(monitor.view_url) as other,
        raw(monitor.url) as ws,
    ):
        before = steering(crawler)
        await ws.send_str('{"control": "stop", "args": {"x": "' + "a" * MAX_MESSAGE + '"}}')
        while (message := await asyncio.wait_for(ws.receive(), TIMEOUT)).type is (
            aiohttp.WSMsgType.TEXT
        ):
            pass
        assert ws.close_code == aiohttp.WSCloseCode.MESSAGE_TOO_BIG, message
        assert steering(crawler) == before
        frames = other.frames
        await until(lambda: other.frames > frames, "the other viewer goes on")
        assert other.link is Link.CONNECTED


async def test_a_flood_is_refused_then_dropped() -> None:
    async with watched(paused=True) as (crawler, monitor), raw(monitor.url) as ws:
        before = steering(crawler)
        errors: list[str] = []

        async def read() -> None:
            async for message in ws:
                data = json.loads(message.data)
                if data["kind"] == "error":
                    errors.append(data["error"])

        reading = asyncio.create_task(read())
        for _ in range(int(BURST) + FLOOD_LIMIT + 50):
            await ws.send_str('{"control": "pause", "args": {"worker": 999}}')
        await asyncio.wait_for(reading, TIMEOUT)
        assert ws.closed and monitor.dropped == 1
        assert ws.close_code == aiohttp.WSCloseCode.POLICY_VIOLATION
        assert "too many messages: at most 10 a second; the rest are ignored" in errors
        # Each refused alike up to the limit, and the flood past it said once.
        assert errors.count("no worker 999") <= BURST + 1
        assert steering(crawler) == before


async def test_a_viewer_that_stops_reading_is_dropped_and_the_others_go_on() -> None:
    # Many workers make big frames, so the stuck viewer's buffers fill in moments.
    async with (
        watched(pages=2000, tasks=400, fps=60.0) as (crawler, monitor),
        attached(monitor.view_url) as reader,
        aiohttp.ClientSession() as session,
    ):
        stuck = await session.ws_connect(monitor.view_url)  # never read
        await until(lambda: monitor.dropped == 1, "the stuck viewer dropped")
        assert monitor.viewers == ["127.0.0.1"]
        frames = reader.frames
        await until(lambda: reader.frames > frames, "the reader goes on")
        done = crawler.accounting().done
        await until(
            lambda: crawler.accounting().done > done or crawler.phase is Phase.FINISHED,
            "the crawl goes on",
        )
        await stuck.close()


async def test_when_the_crawl_goes_the_viewer_keeps_its_last_state() -> None:
    async with DemoServer(DemoConfig(pages=30)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=3))
        monitor = Monitor(crawler, crawler, listen("127.0.0.1", 0))
        await monitor.start()
        async with attached(monitor.view_url) as remote:
            await crawler.crawl()
            await monitor.close()
            await until(lambda: remote.link is Link.ENDED, "ended")
            assert remote.snapshot().phase is Phase.FINISHED
            assert remote.snapshot().accounting == crawler.accounting()
            assert remote.why == "the crawl ended"


async def test_a_viewer_connects_again_when_the_crawl_comes_back() -> None:
    sock = listen("127.0.0.1", 0)
    port = sock.getsockname()[1]
    async with DemoServer(DemoConfig(pages=30)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=3))
        crawler.pause_all()
        monitor = Monitor(crawler, crawler, sock)
        await monitor.start()
        crawl = asyncio.create_task(crawler.crawl())
        async with attached(monitor.view_url) as remote:
            await monitor.close()  # the monitor goes, the crawl still paused: dropped
            await until(lambda: remote.link is Link.DROPPED, "dropped")
            assert remote.snapshot().phase is Phase.PAUSED  # the last state stays
            again = Monitor(crawler, crawler, listen("127.0.0.1", port))
            await again.start()
            await until(lambda: remote.link is Link.CONNECTED, "back")
            crawler.stop()
            await crawl
            await again.close()


@pytest.mark.parametrize(
    ("text", "address"),
    [("8765", ("127.0.0.1", 8765)), ("0.0.0.0:0", ("0.0.0.0", 0)), ("[::1]:80", ("::1", 80)),
     (":9", ("127.0.0.1", 9))],
)  # fmt: skip
def test_an_address_is_host_and_port(text: str, address: tuple[str, int]) -> None:
    assert parse_address(text) == address


@pytest.mark.parametrize(
    ("text", "error"),
    [("x", "not a port number: 'x'"), ("1:2:3", "put an IPv6 address in brackets"),
     ("70000", "port must be from 0 to 65535, not 70000")],
)  # fmt: skip
def test_a_bad_address_is_a_clear_error(text: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_address(text)
