"""The host rows in a recording: written as the crawl goes, checked on load, and shown by
a replay at the moment it is moved to."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from host_sites import counted_site

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import HOST_ROWS, LATENCY_BUCKETS, HostView
from crawlscope.engine.records import FetchRecord
from crawlscope.engine.trace import recording
from crawlscope.engine.trace.flight import FlightRing
from crawlscope.engine.trace.recording import HOSTS_EVERY, Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl, ReplayError
from crawlscope.engine.trace.validation import host_rows
from helpers import Handler

Serve = Callable[[dict[str, Handler]], Awaitable[str]]


async def recorded(serve: Serve, path: Path) -> Crawler:
    """A crawl of 40 pages at 30 ms, one worker: a couple of seconds, several lines."""
    root = await serve(counted_site("p", 40, []))
    crawler = Crawler(CrawlConfig(roots=(root,), max_tasks=1))
    recorder = Recorder(crawler, path)
    await crawler.crawl()
    recorder.close()
    return crawler


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
async def test_a_replay_shows_the_host_rows_of_the_moment_it_is_at(
    serve: Serve, tmp_path: Path
) -> None:
    path = tmp_path / "crawl.jsonl"
    crawler = await recorded(serve, path)
    events = lines(path)[1:]
    at = [i for i, event in enumerate(events) if event["kind"] == "hosts"]
    assert len(at) >= 3  # at the start, as it goes (every HOSTS_EVERY at most), at the end
    replay = ReplayedCrawl.load(path)
    for i in at:
        replay.goto(i + 1)
        written = tuple(HostView.from_plain(row) for row in events[i]["rows"])
        assert replay.snapshot().hosts == written
        assert replay.snapshot().host_count == events[i]["count"] == 1
    # Some moment in the middle shows fewer pages done than the end: that moment's rows.
    middle = at[len(at) // 2]
    replay.goto(middle + 1)
    assert 0 < replay.snapshot().hosts[0].done < 41
    # Scrubbed back to the start, then to the end: the end shows the live crawl's rows.
    replay.seek(0.0)
    replay.seek(replay.duration)
    assert replay.snapshot().hosts == crawler.snapshot().hosts
    assert replay.snapshot().depths == crawler.snapshot().depths == (1, 40)


def hosts_line(rows: object, count: object = 1, depths: object = (1, 2)) -> str:
    line = {"t": 0.5, "kind": "hosts", "rows": rows, "count": count, "depths": depths}
    return json.dumps(line)


def good_row(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {
        "origin": "http://a.example", "queued": 1, "in_flight": 0, "done": 2, "failed": 0,
        "tries": 2, "errors": 0, "streak": 0, "latency": [0] * LATENCY_BUCKETS,
        "next_fetch": 0.0, "crawl_delay": 0.0, "delay": 0.0, "limit": 8,
        "robots": "allowed", "blocked": False, "waiting": 0,
    }  # fmt: skip
    row.update(changes)
    return row


@pytest.mark.parametrize(
    ("rows", "count", "depths", "why"),
    [
        ([good_row(latency=[1, 2])], 1, [1], "latency is not 20 counts"),
        ([good_row(done=-1)], 1, [1], "negative figure"),
        ([good_row(robots="sure")], 1, [1], "robots is not a known RobotsState"),
        ([good_row(origin=7)], 1, [1], "origin is not a string"),
        ([good_row()] * (HOST_ROWS + 1), HOST_ROWS + 1, [1], f"more than {HOST_ROWS} host rows"),
        ([good_row()], 0, [1], "'count' is wrong"),
        ("rows", 1, [1], "is not a list"),
        ([good_row()], 1, [1] * 33, "more than 32 depths"),
        ([good_row()], 1, [1, -2], "'depths' is not a list of counts"),
    ],
)
def test_a_bad_hosts_line_is_refused_naming_it(
    tmp_path: Path, rows: object, count: object, depths: object, why: str
) -> None:
    good = tmp_path / "good.jsonl"
    start = {"kind": "start", "version": 1, "wall": 0.0, "config": {"roots": ["http://a.example/"]}}
    good.write_text(json.dumps(start) + "\n" + hosts_line([good_row()]) + "\n")
    replay = ReplayedCrawl.load(good)
    replay.seek(1.0)
    assert replay.snapshot().hosts[0].origin == "http://a.example"
    assert replay.snapshot().depths == (1, 2)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(start) + "\n" + hosts_line(rows, count, depths) + "\n")
    with pytest.raises(ReplayError, match=r"bad\.jsonl:2: .*") as caught:
        ReplayedCrawl.load(bad)
    assert why in str(caught.value)


def test_a_hosts_line_text_is_escaped() -> None:
    (row,) = host_rows({"rows": [good_row(origin="http://a\x1b[2J")], "count": 1})
    assert "\x1b" not in row.origin


def test_host_rows_that_stay_the_same_are_looked_at_once_an_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A crawl of many hosts fetches on ones its rows do not show: the rows stay the same,
    and building them (every host sorted) at each fetch would cost the crawl more than
    its fetches."""
    crawler = Crawler(CrawlConfig(roots=("http://a.example/",)))
    recorder = Recorder(crawler, None, FlightRing())
    built: list[float] = []
    build = recording.host_rows_of

    def counted(*args: Any) -> Any:
        built.append(time.monotonic())
        return build(*args)

    monkeypatch.setattr(recording, "host_rows_of", counted)
    now = time.time()
    record = FetchRecord(
        url="http://a.example/", status=200, next_url=None, exception=None, size=10,
        content_type="text/html", encoding=None, num_urls=0, num_new_urls=0, tries=1,
        depth=0, referrer=None, worker=0, t_start=now, t_end=now, filtered=None,
    )  # fmt: skip
    began = time.monotonic()
    for _ in range(2000):
        recorder.on_record(record)
    spent = time.monotonic() - began
    assert 1 <= len(built) <= 1 + spent / HOSTS_EVERY
