"""Record a live crawl, replay it, and see the same state at the same moments."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.snapshot import Phase
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl, ReplayError
from crawlscope.engine.workers import WorkerState


def panels(crawl: Crawler | ReplayedCrawl) -> dict[str, Any]:
    """What the screen's panels show, less the wall-clock figures."""
    snap = crawl.snapshot()
    return {
        "phase": snap.phase,
        "workers": [(v.id, v.state, v.url, v.pages, v.paused) for v in snap.workers],
        "accounting": snap.accounting,
        "unfinished": snap.unfinished,
        "recent": [r.url for r in list(crawl.recent)[-20:]],
        "chains": [(c.urls, c.end, c.status, c.meets) for c in crawl.chains()],
    }


async def test_a_replay_shows_the_same_panels_at_the_same_moments(tmp_path: Path) -> None:
    path = tmp_path / "crawl.jsonl"
    async with DemoServer(DemoConfig(pages=40, latency=0.01, jitter=0.02)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=5))
        recorder = Recorder(crawler, path)
        crawl = asyncio.create_task(crawler.crawl())
        samples: list[tuple[float, dict[str, Any], dict[int, float]]] = []
        while not crawl.done():
            await asyncio.sleep(0.007)
            if crawler.t0 is None:
                continue
            t = time.monotonic() - crawler.t0
            in_state = {v.id: v.in_state for v in crawler.snapshot().workers}
            samples.append((t, panels(crawler), in_state))
            if len(samples) == 10:
                crawler.pause_all()  # a phase change and paused workers, recorded too
            if len(samples) == 20:
                crawler.resume_all()
        await crawl
        recorder.close()
    final = panels(crawler)

    replay = ReplayedCrawl.load(path)
    assert len(samples) > 30
    assert {s[1]["phase"] for s in samples} >= {Phase.RUNNING, Phase.PAUSED}
    for t, live, in_state in samples:
        replay.seek(t)
        assert panels(replay) == live, f"at t={t:.4f}"
        for view in replay.snapshot().workers:
            assert view.in_state == pytest.approx(in_state[view.id], abs=0.002)
    replay.seek(replay.duration)
    assert panels(replay) == final
    assert replay.phase is Phase.FINISHED

    # Scrubbing back and forth lands on the same states.
    t_mid = samples[len(samples) // 2][0]
    replay.seek(t_mid)
    first = panels(replay)
    replay.seek(0)
    assert replay.accounting().done == 0
    replay.seek(t_mid)
    assert panels(replay) == first


def test_each_line_of_a_recording_is_json_with_a_time(tmp_path: Path) -> None:
    path = tmp_path / "crawl.jsonl"

    async def record() -> None:
        async with DemoServer(DemoConfig(pages=10)) as server:
            crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=3))
            recorder = Recorder(crawler, path)
            await crawler.crawl()
            recorder.close()

    asyncio.run(record())
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["kind"] == "start" and lines[0]["config"]["max_tasks"] == 3
    assert lines[-1]["kind"] == "end" and lines[-1]["phase"] == "finished"
    times = [e["t"] for e in lines[1:]]
    assert times == sorted(times)
    states = {e["state"] for e in lines if e["kind"] == "state"}
    assert {"waiting", "connecting", "headers", "body", "stopped"} <= states
    assert all(WorkerState(s) for s in states)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "no start line"),
        ("not json\n", "not a JSON line"),
        ('{"kind": "fetch", "t": 0}\n', "no start line"),
        ("[1, 2]\n", "not a crawlscope event"),
    ],
)
def test_a_file_that_is_not_a_recording_is_refused_clearly(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ReplayError, match=message):
        ReplayedCrawl.load(path)


def test_a_missing_file_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="cannot read"):
        ReplayedCrawl.load(tmp_path / "nope.jsonl")
