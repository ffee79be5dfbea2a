"""The flight recorder (engine/trace/flight.py), always on: its ring and its bounds, the
state it folds what it lets go into, a fetch's waterfall cut from its events, and a saved
flight that `crawlscope replay` plays. Real crawls of real servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bench.recorder_cost import held_bytes
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.waterfall import waterfalls
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.trace.flight import FlightRing
from crawlscope.engine.trace.load import load_recording
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl

HEADERS_AFTER = 0.2  # the server's wait before it answers
BODY_PAUSE = 0.15  # and between the first and the last part of the body
READ_SLACK = 0.03  # what reading the headers may take off the body's part, at most
CRAWL_DELAY = 0.3  # robots.txt's Crawl-delay


def slow_site() -> dict[str, Any]:
    async def robots(_request: web.Request) -> web.Response:
        return web.Response(text=f"User-agent: *\nCrawl-delay: {CRAWL_DELAY}\n")

    async def page(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(HEADERS_AFTER)
        response = web.StreamResponse(headers={"Content-Type": "text/html"})
        await response.prepare(request)
        await response.write(b"<html><body>")
        await asyncio.sleep(BODY_PAUSE)
        links = b'<a href="/p/1">1</a><a href="/p/2">2</a>' if request.path == "/" else b""
        await response.write(links + b"</body></html>")
        return response

    return {"/robots.txt": robots, "/": page, "/p/{n}": page}


async def test_a_waterfall_holds_what_the_server_and_the_gate_imposed(serve: Any) -> None:
    root = await serve(slow_site())
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=3))
    ring = FlightRing()
    recorder = Recorder(crawler, None, ring)
    await crawler.crawl()
    recorder.close()
    falls = {fall.url: fall for fall in waterfalls(ring)}
    assert set(falls) == {root, root + "p/1", root + "p/2"}
    for fall in falls.values():
        # The server's waits, each in its own part (the loop adds a little, never less).
        assert HEADERS_AFTER <= fall.part("headers") < HEADERS_AFTER + 0.1, fall
        # The server's pause starts as it writes the headers; the body part, when the
        # worker has read them: later by however long that took (a CI run: 5 ms).
        assert BODY_PAUSE - READ_SLACK <= fall.part("body") < BODY_PAUSE + 0.1, fall
        # The parts add up to the whole, from being queued to the record (the issue asks
        # for 1%; cut from one clock, they are exact), the parse included.
        assert fall.queued_at is not None
        assert abs(sum(s for _, s in fall.parts) - fall.total) <= 1e-6, fall
        assert fall.part("parsing") > 0 and fall.part("connecting") > 0, fall
        assert fall.total == pytest.approx(fall.ended_at - fall.queued_at)
    # The root was queued as the crawl began and waited for robots.txt first.
    assert falls[root].queued_at == 0.0 and falls[root].part("robots") > 0
    # The two links were queued as the root's record was kept; one of them waited at the
    # host's gate for the Crawl-delay since the other's request began.
    kept = falls[root].ended_at
    for url in (root + "p/1", root + "p/2"):
        assert falls[url].queued_at == kept
    gated = sorted(falls[root + f"p/{n}"].part("throttled") for n in (1, 2))
    assert gated[1] >= CRAWL_DELAY - 0.05, gated
    # And the first one's request waited the Crawl-delay after the root's.
    assert gated[0] + falls[root + "p/1"].part("queue") >= 0.0


@pytest.mark.slow
async def test_the_ring_holds_its_bound_and_what_it_let_go_is_folded() -> None:
    bound = 1 << 20
    async with DemoServer(DemoConfig(pages=3000, latency=0.0)) as demo:
        crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=20))
        ring = FlightRing(max_bytes=bound)
        recorder = Recorder(crawler, None, ring)
        await crawler.crawl()
        recorder.close()
    assert ring.dropped > 0, "the crawl never filled the ring"
    # The estimate is not below what the events hold, measured object by object...
    measured = held_bytes(ring.items())
    assert ring.bytes >= measured, (ring.bytes, measured)
    # ...and the ring keeps within its bound, give or take the chunk being filled.
    assert ring.bytes - ring.filling <= bound, (ring.bytes, ring.filling)
    assert measured <= bound + ring.filling
    # What it let go is folded into its base: played from there, the kept past ends where
    # the crawl ended.
    replay = ring.replay()
    replay.goto(len(replay.events))
    assert replay.accounting() == crawler.accounting()
    assert replay.snapshot(()).unfinished == 0
    done = len(crawler.ledger.done) + len(crawler.ledger.failed)
    assert len(replay.done) + len(replay.failed) == done


@pytest.mark.slow
async def test_the_kept_past_is_the_recording_at_every_moment(tmp_path: Path) -> None:
    """The same events with --record: the ring's replay and the file's agree at every
    moment the ring still holds, panels and counts alike, even after the ring let go."""
    path = tmp_path / "crawl.jsonl"
    async with DemoServer(DemoConfig(pages=600, latency=0.005)) as demo:
        crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=8))
        ring = FlightRing(max_bytes=300_000)
        recorder = Recorder(crawler, path, ring)
        await crawler.crawl()
        recorder.close()
    assert ring.dropped > 0
    from_file = ReplayedCrawl.load(path)
    from_ring = ring.replay()
    # The file has all of it; the ring, the end. (The file alone keeps the URLs no worker
    # fetched, for `crawlscope why`: a page's 200,000 links would push the minutes out.)
    kept = [e for e in from_file.events if e["kind"] not in ("filtered", "unfetched")]
    assert len(kept) == ring.added
    assert any(e["kind"] == "filtered" for e in from_file.events)  # the demo's two
    moments = [from_ring.first + k * (from_ring.duration - from_ring.first) / 9 for k in range(10)]
    for t in moments:
        from_file.seek(t)
        from_ring.seek(t)
        a, b = from_file.snapshot(), from_ring.snapshot()
        assert a.accounting == b.accounting, t
        assert [(w.id, w.state, w.url, w.pages) for w in a.workers] == [
            (w.id, w.state, w.url, w.pages) for w in b.workers
        ], t
        assert a.hosts == b.hosts and a.warnings == b.warnings, t
        assert [r.url for r in from_file.recent_fetches()][-50:] == [
            r.url for r in from_ring.recent_fetches()
        ][-50:], t


@pytest.mark.slow
async def test_a_loop_block_saves_a_flight_that_replays_and_shows_it(
    serve: Any, tmp_path: Path
) -> None:
    from timing_support import dense_site

    root = (await serve(dense_site())).rstrip("/") + "/"
    flights = tmp_path / "flights"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "crawlscope", "crawl", root, "--max-tasks", "3",
        "--max-links", "200000", "--max-pages", "8", "--flight-dir", str(flights),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    saved = sorted(flights.glob("flight-*loop-blocked*.jsonl"))
    assert len(saved) == 1, (list(flights.iterdir()), err.decode())
    # The report and the last lines name the file.
    report = out.decode()
    assert f"Flight saved (loop-blocked): {saved[0]}" in report
    assert str(saved[0]) in err.decode()
    # The report's slowest fetches, each with its parts: /big's parse among them.
    slowest = report.split("Slowest fetches (of the ", 1)[1].split("Time per part", 1)[0]
    assert big_line(slowest, root + "big") and "parsing" in big_line(slowest, root + "big")
    assert f"  {root.rstrip('/')}: " in report.split("Time per part of a fetch, per host", 1)[1]
    replay = load_recording(saved[0])
    assert isinstance(replay, ReplayedCrawl)
    replay.goto(len(replay.events))
    big = root + "big"
    blocked = [w for w in replay.snapshot(()).warnings if w.kind.value == "loop-blocked"]
    assert blocked and blocked[0].url == big
    # The block itself is in the flight: the worker that held the loop parsing /big.
    parsing = [
        e for e in replay.events
        if e["kind"] == "state" and e["state"] == "parsing" and e.get("url") == big
    ]  # fmt: skip
    assert parsing and parsing[0]["worker"] == blocked[0].worker
    start = json.loads(saved[0].read_text().split("\n", 1)[0])
    assert start["kind"] == "start" and start["offset"] >= 0.0


def big_line(section: str, url: str) -> str:
    """The parts line under `url`'s line in the report's slowest fetches ("" if none)."""
    lines = section.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.endswith(" " + url):
            return lines[i + 1]
    return ""


def test_a_hostile_flight_file_is_one_line(tmp_path: Path) -> None:
    import subprocess

    bad = tmp_path / "flight-x.jsonl"
    bad.write_text(
        '{"kind": "start", "version": 1, "wall": 1.0, "config": {"roots": ["http://x/"]}}\n'
        '{"t": 0.0, "kind": "state", "worker": -1, "state": "waiting"}\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "crawlscope", "replay", str(bad)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().count("\n") == 0 and ":2:" in proc.stderr, proc.stderr
