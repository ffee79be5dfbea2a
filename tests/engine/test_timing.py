"""Time per worker (engine/timing/per_worker.py): step and scheduling-delay histograms, time in
each state, read from real crawls and real tasks on a real loop."""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.introspect import suspension_point
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.workers import WorkerState
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.timing.per_worker import (
    BUCKETS,
    Histogram,
    PollClock,
    TimedCoroutine,
    WorkerTiming,
    bucket_edge_ns,
    poll_clock,
)


async def test_every_worker_of_a_crawl_has_its_steps_delays_and_state_times() -> None:
    async with DemoServer(DemoConfig(pages=40, latency=0.005)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=4))
        await crawler.crawl()
    assert crawler.phase is Phase.FINISHED
    for w in crawler.workers.values():
        t = w.timing
        assert t.step.total > w.pages, (w.id, t.step.total, w.pages)
        assert t.delay.total > 0  # the default loop has a selector to time
        totals = t.state_totals()
        assert totals[WorkerState.WAITING][0] > 0 and totals[WorkerState.WAITING][1] > 0
        if w.pages:
            assert totals[WorkerState.HEADERS][0] > 0
    # The views carry the summary: a worker that fetched has a longest step, and its
    # median is no more than its 99th percentile, no more than its longest.
    views = [v for v in crawler.snapshot().workers if v.pages]
    assert views
    for v in views:
        assert 0 < v.step_p50 <= v.step_p99 <= v.step_max


async def test_suspended_at_reads_through_the_timing_wrapper() -> None:
    async with DemoServer(DemoConfig(pages=5)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=2))
        crawler.pause_all()
        crawl = asyncio.create_task(crawler.crawl())
        deadline = time.monotonic() + 30
        while len(crawler.workers) < 2 or any(
            w.state is not WorkerState.PAUSED for w in crawler.workers.values()
        ):
            assert time.monotonic() < deadline
            await asyncio.sleep(0.005)
        task = crawler.workers[0].task
        assert isinstance(task.get_coro(), TimedCoroutine)
        point = suspension_point(task)
        # Every frame from the worker's own coroutine down, not the wrapper.
        assert point.frames[0].function == "Crawler._work"
        assert str(point).startswith("Event.wait ")
        crawler.stop()
        await crawl


async def test_a_callback_queued_ahead_of_a_step_is_its_scheduling_delay() -> None:
    loop = asyncio.get_running_loop()
    clock = poll_clock(loop)
    await asyncio.sleep(0)
    assert clock.last  # installed: the loop polled since
    woken = asyncio.Event()
    timing = WorkerTiming()

    async def sleeper() -> None:
        await woken.wait()

    task = asyncio.create_task(TimedCoroutine(sleeper(), timing, clock))
    await asyncio.sleep(0)  # its first step: it now waits on the event

    def block() -> None:
        time.sleep(0.03)  # holds the loop ahead of the woken task

    def wake() -> None:
        loop.call_soon(block)
        woken.set()  # the task's wake-up is queued after `block`

    loop.call_soon(wake)
    await task
    # At least the 30 ms `block` held the loop between the poll and the step.
    assert timing.delay.max_ns >= 30_000_000
    assert timing.step.total == 2


async def test_the_wrapper_buckets_steps_and_delays_as_histogram_add_does() -> None:
    # One long step and one long scheduling delay, each its histogram's longest: counted
    # where Histogram.add counts it, so its quantile is the time measured (the bucket's
    # upper edge, capped at the maximum), not half of it.
    loop = asyncio.get_running_loop()
    clock = poll_clock(loop)
    await asyncio.sleep(0)
    woken = asyncio.Event()
    timing = WorkerTiming()

    async def parse_then_wait() -> None:
        time.sleep(0.03)
        await woken.wait()

    task = asyncio.create_task(TimedCoroutine(parse_then_wait(), timing, clock))
    await asyncio.sleep(0)
    loop.call_soon(lambda: (loop.call_soon(time.sleep, 0.03), woken.set()))
    await task
    for histogram in (timing.step, timing.delay):
        longest = histogram.max_ns
        assert longest >= 30_000_000
        alone = Histogram()
        alone.add(longest)
        bucket = alone.counts.index(1)
        assert histogram.counts[bucket] >= 1, (bucket, list(histogram.counts))
        assert histogram.quantile(1.0) == longest / 1e9


async def test_a_long_step_is_told_with_the_frame_it_gave_the_loop_back_at() -> None:
    heard: list[tuple[int, str]] = []
    timing = WorkerTiming()
    timing.on_long = lambda ns, _gc, frame, _began: heard.append(
        (ns, frame.f_code.co_name if frame else "")
    )

    async def parse_then_wait() -> None:
        time.sleep(0.06)  # a step over LONG_STEP_NS
        await asyncio.sleep(0)

    await asyncio.create_task(TimedCoroutine(parse_then_wait(), timing, PollClock()))
    assert len(heard) == 1
    assert heard[0][0] >= 60_000_000
    assert heard[0][1] == "parse_then_wait"


@pytest.mark.slow
async def test_garbage_collection_inside_a_step_does_not_make_it_long() -> None:
    heard: list[int] = []
    timing = WorkerTiming()
    timing.on_long = lambda ns, _gc, _frame, _began: heard.append(ns)
    # A heap worth collecting: a full collection of it takes some time, none of it the
    # step's own; told of nothing unless the rest of the step alone is long.
    junk = [[{} for _ in range(10)] for _ in range(200_000)]

    async def collect_then_wait() -> None:
        start = time.perf_counter_ns()
        while time.perf_counter_ns() - start < 60_000_000:
            gc.collect()  # 60 ms of nothing but collections
        await asyncio.sleep(0)

    await asyncio.create_task(TimedCoroutine(collect_then_wait(), timing, PollClock()))
    del junk
    assert timing.step.max_ns >= 60_000_000
    assert heard == []


def test_quantiles_read_from_buckets_are_upper_edges_capped_at_the_maximum() -> None:
    h = Histogram()
    assert h.quantile(0.5) == 0.0
    for _ in range(98):
        h.add(3_000)  # bucket of bit length 12
    h.add(5_000_000)
    h.add(9_000_000)
    assert h.quantile(0.5) == bucket_edge_ns(12 - 10) / 1e9
    assert h.quantile(0.99) == bucket_edge_ns(23 - 10) / 1e9  # 5 ms: bit length 23
    assert h.quantile(1.0) == 0.009  # the top bucket's edge is capped at the maximum
    h.add(1 << 60)  # past the last bucket: counted in it
    assert h.counts[BUCKETS - 1] == 1


@pytest.mark.slow
def test_a_workers_figures_stay_within_2_kb_however_long_it_runs() -> None:
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        timings = [WorkerTiming() for _ in range(100)]
        for timing in timings:
            for ns in range(1, 1 << 40, (1 << 40) // 5000):
                timing.step.add(ns)
                timing.delay.add(ns)
            for state in WorkerState:
                timing.moved(state, 1.5, state, "http://h/" * 20, 1.0)
        per_worker = (tracemalloc.get_traced_memory()[0] - before) / len(timings)
    finally:
        tracemalloc.stop()
    assert per_worker <= 2048, per_worker
