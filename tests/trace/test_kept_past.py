"""A rewind's jump (engine/trace/kept_past.py): the state at a moment read straight from the
ring's items is the state that applying every event before it gives, field by field, at
every moment, whether the ring let go of its oldest events or not. A real crawl of a real
server with failures, redirects, paused and retiring workers and a warning."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.trace import flight
from crawlscope.engine.trace.events import COUNT_KEYS, to_event
from crawlscope.engine.trace.flight import FlightRing
from crawlscope.engine.trace.kept_past import state_at, summarize
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import CrawlState, apply_event


async def busy_crawl(ring: FlightRing) -> Crawler:
    """A crawl whose events hold every kind a state can be made of."""
    site = DemoConfig(pages=600, latency=0.002, error_rate=0.1)
    async with DemoServer(site) as demo:
        crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=6, max_tries=1))
        recorder = Recorder(crawler, None, ring)
        task = asyncio.ensure_future(crawler.crawl())
        while len(crawler.ledger.done) < 60:
            await asyncio.sleep(0.01)
        crawler.pause(1)
        crawler.pause_all()
        await asyncio.sleep(0.05)
        crawler.resume_all()
        crawler.remove_worker()
        crawler.add_worker()
        await task
        recorder.close()
    return crawler


def fields(state: CrawlState) -> dict[str, object]:
    return {f.name: getattr(state, f.name) for f in dataclasses.fields(state)}


def folded(base: CrawlState, ring: FlightRing, k: int) -> CrawlState:
    s = base.copy()
    s.index = 0
    for item in ring.items()[:k]:
        apply_event(s, to_event(item))
        s.index += 1
    return s


@pytest.mark.parametrize("bound", [None, 200_000], ids=["whole", "let-go"])
@pytest.mark.parametrize("chunk", [1024, 50], ids=["chunks-of-1024", "chunks-of-50"])
async def test_the_state_read_from_the_items_is_the_state_folded(
    bound: int | None, chunk: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read item by item, or a whole chunk at once from its summary (with chunks of 50,
    most of the crawl is read so, and chunks holding phase, hosts and health events)."""
    monkeypatch.setattr(flight, "CHUNK", chunk)
    ring = FlightRing() if bound is None else FlightRing(max_bytes=bound)
    ring.summarize = True
    crawler = await busy_crawl(ring)
    items = ring.items()
    summaries = ring.summaries()
    assert len(summaries) == len(items) // chunk and None not in summaries
    if bound is None:  # the phase's first event is in the first chunk; hosts, health...
        assert any(s.others for s in summaries)
    assert (ring.dropped > 0) == (bound is not None)
    kinds = {to_event(item)["kind"] for item in items}
    assert {"state", "fetch", "hosts", "phase", "end"} <= kinds, kinds
    assert any(item[0] == 0 and item[6] for item in items), "no paused or retiring worker"
    assert crawler.ledger.failed
    # Every moment from the first to the last, each checked against its own fold.
    fold = ring.base.copy()
    fold.index = 0
    for k in range(len(items) + 1):
        # Here and there, and at each chunk's edges, where a summary's last counts count.
        if k % 97 == 0 or k % chunk in (0, 1) or k < 5 or k > len(items) - 5:
            assert fields(state_at(ring.base, items, k)) == fields(fold), k
            # From the summaries, and from a state part of the way (as a rewind's marks).
            got = state_at(ring.base, items, k, summaries=summaries, chunk=chunk)
            assert fields(got) == fields(fold), k
            part = state_at(ring.base, items, k // 3, summaries=summaries, chunk=chunk)
            got = state_at(part, items, k, k // 3, summaries=summaries, chunk=chunk)
            assert fields(got) == fields(fold), k
        if k < len(items):
            apply_event(fold, to_event(items[k]))
            fold.index += 1
    assert fold.counts["phase"] == "finished" and fold.ended_at is not None
    assert fold.hops and fold.failed and any(w.timing.step_p50 for w in fold.workers.values())


async def test_a_rewind_jumps_back_and_forth_to_where_the_file_is() -> None:
    ring = FlightRing(max_bytes=200_000)
    await busy_crawl(ring)
    past = ring.replay()
    items = ring.items()
    for k in (len(items), 3, len(items) // 2, 7, len(items) - 1, len(items) // 3 + 1):
        past.goto(k)
        assert fields(past.state) == fields(folded(ring.base, ring, k)), k


def test_a_crawl_ends_where_its_counts_first_say_so() -> None:
    """A worker's state change may carry the counts of a crawl just stopped before the
    phase's own event does: the clock stops there, as a fold stops it."""
    stopped = ("stopped", 0, 3, 9, 6, 0, 0, 0, 0)
    running = ("running", *stopped[1:])
    items = [
        (0, 1.0, 1, "headers", "http://a/", 0, 0, None, running),
        (0, 2.0, 1, "cancelled", None, 0, 0, None, stopped),
        (2, 2.5, {"t": 2.5, "kind": "phase", **dict(zip(COUNT_KEYS, stopped, strict=True))}),
    ]
    for k in range(4):
        got, want = state_at(CrawlState(), items, k), CrawlState()
        for item in items[:k]:
            apply_event(want, to_event(item))
        want.index = k
        assert fields(got) == fields(want), k
        # A chunk whose counts say the crawl ended is read item by item, not summed up.
        chunks = [summarize(items[i : i + 2]) for i in range(0, len(items), 2)]
        assert chunks[0].ended and not chunks[1].ended
        got = state_at(CrawlState(), items, k, summaries=chunks, chunk=2)
        assert fields(got) == fields(want), k
    assert state_at(CrawlState(), items, 2).ended_at == 2.0


async def test_a_rewind_reads_from_the_states_it_kept_on_its_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With a kept state every 500 events, jumps land from the nearest one and still
    agree with the fold, wherever they go and in any order."""
    from crawlscope.engine.trace import kept_past

    monkeypatch.setattr(kept_past, "MARK_EVERY", 500)
    monkeypatch.setattr(kept_past, "JUMP_AFTER", 100)
    ring = FlightRing(max_bytes=200_000)
    ring.summarize = True
    await busy_crawl(ring)
    past = ring.replay()
    n = len(ring.items())
    for k in (n - 2, 1, n // 2, n // 2 + 50, 640, n // 2 - 1, n):
        past.goto(k)
        assert fields(past.state) == fields(folded(ring.base, ring, k)), k
    # Kept where it jumped 500 or more from those kept around: the end, then the middle;
    # not 1, nor 640 (the middle is within 500 after it).
    assert [m.index for m in past._marks] == [0, n // 2, n - 2]


@pytest.mark.parametrize("bound", [None, 200_000], ids=["whole", "let-go"])
async def test_a_waterfall_found_from_the_newest_back_is_the_one_read_whole(
    bound: int | None,
) -> None:
    """`enter` on the timeline asks the ring for the events of one URL's last fetch: its
    waterfall is the one cut from every kept event, for every URL kept."""
    from crawlscope.engine.observe.waterfall import waterfall_of, waterfalls

    ring = FlightRing() if bound is None else FlightRing(max_bytes=bound)
    await busy_crawl(ring)
    whole = ring.events()
    urls = {fall.url for fall in waterfalls(whole)}
    assert len(urls) > 50
    for url in urls:
        assert waterfall_of(ring.events_for(url), url) == waterfall_of(whole, url), url
    # Queued behind a referrer's record: the queue's part is there, and known.
    assert any(waterfall_of(ring.events_for(url), url).queued_at for url in urls)  # type: ignore[union-attr]
    assert ring.events_for("http://nowhere.invalid/") == []


def test_a_chunk_ending_in_an_object_event_keeps_the_counts_before_it() -> None:
    """Counts a state change carried, then a loop-health event (which has none) closing
    the chunk: read from the chunk's summary, the counts are the state change's."""
    running = ("running", 4, 7, 9, 2, 0, 0, 0, 1)
    health = {"t": 1.5, "kind": "health", "lag_p50": 0.001, "lag_p99": 0.002, "holds": []}
    items = [(0, 1.0, 1, "headers", "http://a/", 0, 0, None, running), (2, 1.5, health)]
    want = CrawlState()
    for item in items:
        apply_event(want, to_event(item))
    got = state_at(CrawlState(), items, 2, summaries=[summarize(items)], chunk=2)
    assert got.counts == want.counts == dict(zip(COUNT_KEYS, running, strict=True))
    assert got.lag == want.lag == (0.001, 0.002)
