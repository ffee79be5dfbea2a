"""A replay builds views for the rows a screen asks for only, and keeps its state counts
as events apply, through seeks back and forth (issue 32, item 3)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import CHECKPOINT_EVERY, ReplayedCrawl, load_events

WORKERS = 300


@pytest.mark.slow
async def test_a_replay_builds_the_rows_asked_for_and_counts_every_worker(
    tmp_path: Path,
) -> None:
    path = tmp_path / "crawl.jsonl"
    async with DemoServer(DemoConfig(pages=1000, latency=0.01, jitter=0.01)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=WORKERS, per_host=0))
        recorder = Recorder(crawler, path)
        await crawler.crawl()
        recorder.close()
    replay = ReplayedCrawl(*load_events(path))
    assert len(replay.events) > 2 * CHECKPOINT_EVERY  # seeks back start from checkpoints
    shown = {3, 7, WORKERS - 1}
    # Forward, then back (a checkpoint's copy), then forward again from there.
    indexes = [len(replay.events) // 2, 1, 50, len(replay.events), 40, CHECKPOINT_EVERY + 5]
    for index in indexes:
        replay.goto(index)
        snap = replay.snapshot(shown)
        assert [v.id for v in snap.workers] == sorted(i for i in shown if i in replay.workers)
        assert snap.worker_ids == tuple(sorted(replay.workers))
        live = [w for w in replay.workers.values() if w.alive]
        assert dict(snap.state_counts()) == dict(Counter(w.state for w in live)), index
        assert snap.live_workers == len(live)
        assert snap.retiring == sum(1 for w in live if w.retiring)
        # Every worker still, when asked for every one (a report, a test).
        assert len(replay.snapshot().workers) == len(replay.workers)
    assert not replay.snapshot((), rows=False).workers
