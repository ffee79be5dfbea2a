"""Timing through --record and replay: each worker's figures, the warnings and loop
health at the moments they were recorded; bad timing lines refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from timing_support import DENSE_LINKS, Serve, dense_site, page

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.lints.lint import LintKind
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl, ReplayError


async def record_dense_crawl(serve: Serve, path: Path) -> Crawler:
    base = (await serve(dense_site())).rstrip("/")
    config = CrawlConfig(roots=(base + "/",), max_tasks=3, max_links=DENSE_LINKS, max_pages=8)
    crawler = Crawler(config)
    recorder = Recorder(crawler, path)
    await crawler.crawl()
    recorder.close()
    return crawler


async def record_small_crawl(serve: Serve, path: Path) -> None:
    base = (await serve({"/": page(b"a page")})).rstrip("/")
    crawler = Crawler(CrawlConfig(roots=(base + "/",), max_tasks=1))
    recorder = Recorder(crawler, path)
    await crawler.crawl()
    recorder.close()


def events_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()[1:]]


@pytest.mark.slow
async def test_a_replay_shows_the_same_warnings_at_the_same_moments(
    serve: Serve, tmp_path: Path
) -> None:
    path = tmp_path / "crawl.jsonl"
    crawler = await record_dense_crawl(serve, path)
    live = crawler.snapshot()
    assert any(lint.kind is LintKind.LOOP_BLOCKED for lint in live.warnings)
    replay = ReplayedCrawl.load(path)
    replay.seek(replay.duration)
    played = replay.snapshot()
    assert played.warnings == live.warnings
    assert played.warning_count == live.warning_count
    # Each warning appears with its event, not before: scrubbing shows that moment's.
    events = events_of(path)
    for index, event in enumerate(events):
        if event["kind"] != "lint":
            continue
        replay.goto(index)
        before = replay.snapshot().warning_count
        replay.goto(index + 1)
        after = replay.snapshot()
        assert after.warning_count == before + 1
        assert after.warnings[-1].text == event["lint"]["text"]


@pytest.mark.slow
async def test_a_replay_shows_each_workers_timing_as_of_that_moment(
    serve: Serve, tmp_path: Path
) -> None:
    path = tmp_path / "crawl.jsonl"
    crawler = await record_dense_crawl(serve, path)
    replay = ReplayedCrawl.load(path)
    events = events_of(path)
    states = [(i, e) for i, e in enumerate(events) if e["kind"] == "state"]
    assert any(e["timing"][2] > 0 for _, e in states if "timing" in e)
    # A state event carries the worker's timing when it was worked out again (at most
    # every recording.TIMING_EVERY s); one without it leaves the last one standing.
    last: dict[int, list[float]] = {}
    for index, event in states:
        if "timing" in event:
            last[event["worker"]] = event["timing"]
        replay.goto(index + 1)
        view = next(v for v in replay.snapshot().workers if v.id == event["worker"])
        shown = [view.step_p50, view.step_p99, view.step_max, view.delay_p99]
        assert shown == last.get(event["worker"], [0.0, 0.0, 0.0, 0.0])
    # The longest hold went into a health event, and a replay at its end shows it.
    replay.seek(replay.duration)
    holds = replay.snapshot().holds
    if any(e["kind"] == "health" and e["holds"] for e in events):
        assert holds and holds[0].seconds >= 0.05
    # A worker's longest step at the end of the replay is the live one's at its last
    # state change: never more than the live worker's now.
    for view in replay.snapshot().workers:
        assert view.step_max <= crawler.workers[view.id].timing.step.max_ns / 1e9


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"kind": "state", "worker": 0, "state": "waiting", "timing": [0.1, "x", 0, 0]},
         "'timing' is not 4 durations"),
        ({"kind": "state", "worker": 0, "state": "waiting", "timing": [0.1, -1, 0, 0]},
         "'timing' is not 4 durations"),
        ({"kind": "state", "worker": 0, "state": "waiting", "timing": [0.1, 1e308, 0, 0]},
         "'timing' is not 4 durations"),
        ({"kind": "lint", "lint": {"kind": "melted", "t": 1.0, "text": "x"}},
         "a bad warning: lint.kind is not a known LintKind"),
        ({"kind": "lint", "lint": {"kind": "stuck", "t": 1.0}},
         "a bad warning: lint.text is missing"),
        ({"kind": "health", "lag_p50": -1, "lag_p99": 0, "holds": []},
         "'lag_p50' is not a duration"),
        ({"kind": "health", "lag_p50": 0, "lag_p99": 0, "holds": [{"seconds": "long"}]},
         "a bad hold: holds\\[0\\]"),
        ({"kind": "health", "lag_p50": 0, "lag_p99": 0, "holds": [{}] * 21},
         "'holds' is not a list of at most 20"),
        ({"kind": "health", "lag_p50": 0, "lag_p99": 0, "holds": [], "verdict": ["cpu"]},
         "'verdict' is not a line of at most 400 characters"),
        ({"kind": "health", "lag_p50": 0, "lag_p99": 0, "holds": [], "verdict": "x" * 401},
         "'verdict' is not a line of at most 400 characters"),
        ({"kind": "unfetched", "url": "http://h/", "depth": 3, "referrer": None, "why": "x"},
         "an unfetched line's 'why' is unknown"),
        ({"kind": "unfetched", "url": ["http://h/"], "depth": 3, "why": "max-depth"},
         "an unfetched line's 'url' is not a URL"),
        ({"kind": "filtered", "url": "http://h/", "depth": -1, "reason": "out of scope"},
         "a filtered line's 'depth' is not a count"),
        ({"kind": "filtered", "url": "http://h/", "depth": 1, "reason": {"x": 1}},
         "a filtered line's 'reason' is not a line of text"),
    ],
)  # fmt: skip
async def test_a_bad_timing_line_is_refused_by_its_number(
    serve: Serve, tmp_path: Path, line: dict[str, Any], message: str
) -> None:
    good = tmp_path / "good.jsonl"
    await record_small_crawl(serve, good)
    lines = good.read_text().splitlines()
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([lines[0], json.dumps({"t": 0.0, **line}), *lines[1:]]) + "\n")
    with pytest.raises(ReplayError, match=rf"^{bad}:2: {message}"):
        ReplayedCrawl.load(bad)


async def test_a_warning_with_escapes_replays_escaped(serve: Serve, tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    await record_small_crawl(serve, good)
    lines = good.read_text().splitlines()
    lint = {"kind": "stuck", "t": 0.0, "text": "worker 1 \x1b[2J headers", "url": "http://h/\x07"}
    path = tmp_path / "escaped.jsonl"
    event = json.dumps({"t": 0.0, "kind": "lint", "lint": lint})
    path.write_text("\n".join([lines[0], event, *lines[1:]]) + "\n")
    replay = ReplayedCrawl.load(path)
    replay.goto(1)
    (shown,) = replay.snapshot().warnings
    assert "\x1b" not in shown.text and "\\x1b[2J" in shown.text
    assert shown.url == "http://h/\\x07"
