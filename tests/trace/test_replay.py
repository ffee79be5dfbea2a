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
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.workers import Worker, WorkerState
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl, ReplayError


def panels(crawl: Crawler | ReplayedCrawl) -> dict[str, Any]:
    """What the screen's panels show, less the wall-clock figures."""
    snap = crawl.snapshot()
    return {
        "phase": snap.phase,
        "workers": [(v.id, v.state, v.url, v.pages, v.paused) for v in snap.workers],
        "accounting": snap.accounting,
        "unfinished": snap.unfinished,
        "recent": [r.url for r in list(crawl.recent_fetches())[-20:]],
        "chains": [(c.urls, c.end, c.status, c.meets) for c in crawl.chain_preview(999, 999)[0]],
    }


async def test_a_state_is_recorded_at_the_moment_the_worker_entered_it(tmp_path: Path) -> None:
    # Something told before the recorder holds the loop a while, as a parse thread holding
    # the GIL can: the recording keeps the crawler's moment, not a later reading of its own.
    path = tmp_path / "crawl.jsonl"
    entered: list[float] = []

    async with DemoServer(DemoConfig(pages=10)) as server:
        crawler = Crawler(CrawlConfig(roots=(server.url,), max_tasks=2))
        recorder = Recorder(crawler, path)
        record = crawler.tap
        assert record is not None  # the recorder is the crawler's tap

        def slow_then_record(w: Worker | None) -> None:
            if w is not None:
                entered.append(w.since)
                time.sleep(0.003)
            assert record is not None
            record(w)

        crawler.tap = slow_then_record
        await crawler.crawl()
        recorder.close()
    assert crawler.t0 is not None and entered
    events = [json.loads(line) for line in path.read_text().splitlines()]
    recorded = [event["t"] for event in events if event["kind"] == "state"]
    assert recorded == pytest.approx([since - crawler.t0 for since in entered], abs=1e-6)


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
            # One reading of the clock for both: a parse thread can take the GIL between
            # two readings for longer than the tolerance below.
            snap = crawler.snapshot()
            t = snap.t - crawler.t0
            since = {v.id: v.since for v in snap.workers}
            samples.append((t, panels(crawler), since))
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
    for t, live, since in samples:
        replay.seek(t)
        assert panels(replay) == live, f"at t={t:.4f}"
        for view in replay.snapshot().workers:
            assert view.since == pytest.approx(since[view.id], abs=0.002)
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
    assert {"waiting", "connecting", "headers", "parsing", "stopped"} <= states
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


def start_line(tmp_path: Path) -> str:
    """A real recording's start line (a Recorder on a crawler that never ran)."""
    path = tmp_path / "start.jsonl"
    Recorder(Crawler(CrawlConfig(roots=("http://127.0.0.1:9/",))), path).close()
    return path.read_text(encoding="utf-8").splitlines()[0]


GOOD_STATE = '{"t": 0.5, "kind": "state", "worker": 0, "state": "waiting", "url": null}'
GOOD_FETCH = json.dumps(
    {"t": 0.6, "kind": "fetch", "record": {
        "url": "http://127.0.0.1:9/", "status": 200, "next_url": None, "exception": None,
        "size": 10, "content_type": "text/html", "encoding": "utf-8", "num_urls": 0,
        "num_new_urls": 0, "tries": 1, "depth": 0, "referrer": None, "worker": 0,
        "t_start": 1.0, "t_end": 2.0}}
)  # fmt: skip


def without(line: str, *keys: str, inside: str | None = None) -> str:
    event = json.loads(line)
    target = event[inside] if inside else event
    for key in keys:
        del target[key]
    return json.dumps(event)


LATER_STATE = GOOD_STATE.replace("0.5", "0.8")  # after GOOD_FETCH's time
BAD_LINES = [
    (without(LATER_STATE, "worker"), "a state event without a worker number: None"),
    (without(GOOD_FETCH, "status", "size", inside="record"), "a fetch record without status, size"),
    (LATER_STATE.replace("0.8", "NaN"), "not a JSON line (NaN is not a JSON number)"),
    (LATER_STATE.replace("0.8", "1e400"), "'t' is not a time in seconds: inf"),
    ("[" * 10**6 + "]" * 10**6, "JSON nested too deeply"),
    (LATER_STATE.replace('"waiting"', '"dancing"'), "unknown worker state 'dancing'"),
    (LATER_STATE.replace('"worker": 0', '"worker": true'), "without a worker number: True"),
    (GOOD_FETCH.replace('"size": 10', '"size": "big"'), "the fetch record's 'size' is wrong"),
    (GOOD_FETCH.replace('"tries": 1', '"tries": 1, "x": 2'), "record with unknown fields: x"),
    ('{"t": 0.7, "kind": "phase", "phase": "sleeping"}', "unknown phase 'sleeping'"),
    ('{"t": 0.7, "kind": "end", "done": -1}', "'done' is not a count: -1"),
    ('{"t": 0.1, "kind": "end"}', "'t' goes back in time (0.1 after 0.6)"),
    ('{"kind": "end"}', "'t' is not a time in seconds: None"),
    ('{"t": 1, "kind": "start", "config": {}}', "a second start line"),
    ('"\\u001b[31m"', "not a crawlscope event (not a JSON object)"),
]


@pytest.mark.parametrize(("line", "message"), BAD_LINES, ids=[m[:30] for _, m in BAD_LINES])
def test_a_bad_line_is_refused_with_its_number_and_what_is_wrong(
    tmp_path: Path, line: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    lines = [start_line(tmp_path), GOOD_STATE, GOOD_FETCH, line]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ReplayError) as caught:
        ReplayedCrawl.load(path)
    assert str(caught.value).startswith(f"{path}:4: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value) and "\x1b" not in str(caught.value)


def test_lines_that_pass_the_checks_replay(tmp_path: Path) -> None:
    path = tmp_path / "good.jsonl"
    lines = [start_line(tmp_path), GOOD_STATE, GOOD_FETCH, '{"t": 0.9, "kind": "new-kind"}']
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    replay = ReplayedCrawl.load(path)  # a kind from a newer recorder is passed over
    replay.seek(replay.duration)
    assert list(replay.done) == ["http://127.0.0.1:9/"]
    assert replay.snapshot().workers[0].state is WorkerState.WAITING


def test_a_bad_start_line_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    start = json.loads(start_line(tmp_path))
    start["config"]["max_tasks"] = -1
    path.write_text(json.dumps(start) + "\n", encoding="utf-8")
    with pytest.raises(ReplayError, match=rf"^{path}:1: bad config: .*max_tasks"):
        ReplayedCrawl.load(path)


# A recording's config is read by the one check a monitor's hello and a cluster entry
# pass (engine/exchange/config_json.py): each field's type, not only what CrawlConfig refuses.
BAD_CONFIGS = [
    ("max_tasks", True, "bad config.max_tasks is not a whole number"),
    ("connect_timeout", "10", "bad config.connect_timeout is not a number"),
    ("roots", ["http://127.0.0.1:9/", 7], "bad config.roots[1] is not a string"),
    ("obey_robots", 1, "bad config.obey_robots is not true or false"),
    ("exclude", "x", "bad config.exclude is not a list"),
    ("max_pages", 2**64, "bad config.max_pages is out of range"),
]


@pytest.mark.parametrize(("name", "value", "message"), BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_a_start_line_config_is_checked_field_by_field(
    tmp_path: Path, name: str, value: object, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    start = json.loads(start_line(tmp_path))
    start["config"][name] = value
    path.write_text(json.dumps(start) + "\n" + GOOD_STATE + "\n", encoding="utf-8")
    with pytest.raises(ReplayError) as caught:
        ReplayedCrawl.load(path)
    assert str(caught.value) == f"{path}:1: {message}"


def test_a_recorded_config_replays_as_the_crawl_had_it_and_its_text_escaped(
    tmp_path: Path,
) -> None:
    path = tmp_path / "crawl.jsonl"
    config = CrawlConfig(
        roots=("http://127.0.0.1:9/",), max_tasks=3, exclude=("/private",), host_delay=0.5
    )
    Recorder(Crawler(config), path).close()
    assert ReplayedCrawl.load(path).config == config
    # A recording edited by hand (or not ours) cannot make a screen draw an escape.
    start = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    start["config"]["user_agent"] = "bot\x1b[2J"
    start["config"]["a_newer_field"] = 1  # from a newer recorder: passed over
    path.write_text(json.dumps(start) + "\n", encoding="utf-8")
    assert ReplayedCrawl.load(path).config.user_agent == "bot\\x1b[2J"
