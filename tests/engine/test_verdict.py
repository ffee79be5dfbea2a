"""What limits a crawl, in one line (issue 42): six crawls of real local servers, each
limited in one known way, reach their verdict within 10 s of the crawl's clock and hold it;
the report and a replay of the recording say the same; and the rules themselves (a cause
said only once it has led for a while, "mixed" when two share the crawl) on readings
written here."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import verdict_sites as sites
from timing_support import Serve

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.verdict import HOLD, Diagnosis, Reading, Verdict
from crawlscope.engine.report import write_report
from crawlscope.engine.trace.load import load_recording
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.tui.waiting import wait_until

SETTLE = 10.0  # seconds of the crawl's clock by which the verdict must be said
HELD = 3.0  # and then held for this long at least

# name: (the site, the crawl's options, the cause, words its line must hold)
SCENARIOS: dict[str, tuple[Callable[[], dict[str, Any]], dict[str, Any], str, tuple[str, ...]]] = {
    "a slow server, a high per-host limit": (
        lambda: sites.tree(0.3), {"max_tasks": 20, "per_host": 100}, "server",
        ("server-bound", "p50 answer", "more workers would help"),
    ),
    "one host with a Crawl-delay": (
        lambda: sites.tree(0.01, robots="User-agent: *\nCrawl-delay: 0.5\n"),
        {"max_tasks": 10}, "politeness",
        ("politeness-bound", "Crawl-delay 0.5 s (robots.txt)", "h changes it"),
    ),
    "pages that each link one new page": (
        lambda: sites.chain(0.02), {"max_tasks": 10, "per_host": 100}, "frontier",
        ("frontier-starved", "idle on q.get()", "fewer workers would do"),
    ),
    "link-dense pages, 200 workers, no latency": (
        lambda: sites.dense(400), {"max_tasks": 200, "per_host": 0}, "cpu",
        ("CPU-bound", "--procs N would help"),
    ),
    "one huge page admitted on the loop": (
        lambda: sites.huge(0.3),
        {"max_tasks": 10, "per_host": 100, "exclude": ("/x/",), "max_links": sites.HUGE_LINKS},
        "blocked", ("loop blocked", "held the loop", "/big"),
    ),
    "a slow server and a host limit, half and half": (
        lambda: sites.tree(0.3), {"max_tasks": 20, "per_host": 10}, "mixed",
        ("mixed", "server-bound", "politeness-bound"),
    ),
}  # fmt: skip


async def crawl_until_said(
    serve: Serve, name: str, record: Path | None = None
) -> tuple[Crawler, Verdict, str, float]:
    """The scenario's crawl, running, once its verdict has been said and held HELD
    seconds (or it said another): the crawler, the verdict first said, the root, and the
    crawl's clock when it was first seen said."""
    site, options, cause, _ = SCENARIOS[name]
    root = await serve(site())
    crawler = Crawler(CrawlConfig(roots=(root,), max_pages=1_000_000, **options))
    recorder = Recorder(crawler, record) if record is not None else None
    task = asyncio.create_task(crawler.crawl())
    history = crawler.health.diagnosis.history
    try:
        await wait_until(lambda: any(v.cause == cause for v in history), f"{cause}", timeout=60)
        said_at = crawler.elapsed
        said = next(v for v in history if v.cause == cause)
        hold = said.since + (HELD if cause != "blocked" else HOLD - 1.0)
        await wait_until(lambda: crawler.elapsed >= hold + 1.0, "the verdict held", timeout=60)
    finally:
        crawler.stop()
        await asyncio.wait_for(task, 60)
        if recorder is not None:
            recorder.close()
    return crawler, said, root, said_at


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SCENARIOS))
async def test_each_induced_crawl_gets_its_verdict_within_10_s_and_holds_it(
    serve: Serve, name: str
) -> None:
    crawler, said, root, said_at = await crawl_until_said(serve, name)
    _, _, cause, words = SCENARIOS[name]
    # Said (not only leading: a cause is said once it has led HOLD seconds) by then.
    assert said_at <= SETTLE, (said_at, crawler.health.diagnosis.history)
    for word in words:
        assert word in said.line, (word, said.line)
    if cause in ("server", "politeness", "blocked"):
        assert root.split("://")[1].rstrip("/") in said.line  # the crawl's own host
    # Held: no other cause was said for HELD seconds after it (a loop blocked by one
    # page is said for the window it stays in, then the crawl's own cause again).
    after = [v for v in crawler.health.diagnosis.history if v.since > said.since]
    held = HELD if cause != "blocked" else HOLD - 1.0
    assert all(v.since >= said.since + held for v in after), crawler.health.diagnosis.history


@pytest.mark.slow
async def test_a_replay_shows_the_verdicts_at_the_moments_the_crawl_said_them(
    serve: Serve, tmp_path: Path
) -> None:
    path = tmp_path / "crawl.jsonl"
    crawler, *_ = await crawl_until_said(serve, "pages that each link one new page", path)
    replay = load_recording(path)
    assert isinstance(replay, ReplayedCrawl)
    health = [i for i, event in enumerate(replay.events) if event["kind"] == "health"]
    assert len(health) >= 5
    shown = []
    for index in health:
        replay.goto(index + 1)
        verdict = replay.snapshot((), rows=False).verdict
        assert verdict == replay.events[index]["verdict"]
        if verdict and (not shown or shown[-1] != verdict):
            shown.append(verdict)
    # Every line the crawl said, in its order (the last of a cause's lines is the one
    # its history keeps; the recording has each).
    said = [v.line for v in crawler.health.diagnosis.history]
    assert [line for line in shown if line in said] == said
    # And the report says what limited it, from when.
    out = io.StringIO()
    write_report(crawler, out)
    report = out.getvalue()
    assert "What limited it:" in report
    assert said[-1] in report


# ---- the rules, on readings written here -------------------------------------------------


def reading(t: float, **counts: float) -> Reading:
    values: dict[str, Any] = {"live": 10, "idle": 0, "queued": 50, "gated": 0, "network": 0,
                              "cpu": 0.1, "lag": 0.0, "blocked": ""}  # fmt: skip
    values.update(counts)
    return Reading(t=t, **values)


def test_a_cause_is_said_only_once_it_has_led_for_hold_seconds() -> None:
    d = Diagnosis()
    said = [d.feed(reading(t, network=10)).cause for t in range(6)]
    assert said[: int(HOLD)] == [""] * int(HOLD) and said[int(HOLD) :] == ["server"] * 3
    # A second of another cause is noise: the verdict stands.
    assert d.feed(reading(6, idle=10, queued=0)).cause == "server"
    assert d.feed(reading(7, network=10)).cause == "server"
    # Workers idle with nothing queued for long enough: the frontier.
    causes = [d.feed(reading(t, idle=10, queued=0)).cause for t in range(8, 16)]
    assert causes[-1] == "frontier" and causes[0] == "server"
    assert [v.cause for v in d.history] == ["server", "frontier"]
    # Idle workers with URLs queued are not the frontier's fault.
    d2 = Diagnosis()
    assert all(d2.feed(reading(t, idle=10, queued=5)).cause != "frontier" for t in range(8))


def test_two_causes_sharing_the_crawl_are_mixed_and_a_blocked_loop_is_said_at_once() -> None:
    d = Diagnosis()
    for t in range(6):
        verdict = d.feed(reading(t, network=5, gated=5))
    assert verdict.cause == "mixed"
    assert "server-bound" in verdict.line and "politeness-bound" in verdict.line
    blocked = d.feed(reading(6, network=5, gated=5, blocked="worker 1 held the loop 400 ms"))
    assert blocked.cause == "blocked" and "held the loop 400 ms" in blocked.line
    # On a saturated loop, long steps are the CPU's doing, not one page's.
    busy = Diagnosis()
    for t in range(6):
        verdict = busy.feed(reading(t, network=5, cpu=1.0, lag=0.05, blocked="a step"))
    assert verdict.cause == "cpu"


def test_idle_workers_with_urls_queued_wait_on_redis_only_while_it_is_awaited() -> None:
    d = Diagnosis()
    for t in range(6):
        verdict = d.feed(reading(t, idle=9, queued=400, store_busy=0.95, round_trip=0.08))
    assert verdict.cause == "store"
    assert "9 of 10 workers idle on q.get() with 400 URLs queued" in verdict.line
    assert "a round trip takes 80 ms, awaited 95% of the time" in verdict.line
    # The same idle workers, the pump at rest: the cluster's per-host limits hold the
    # queued URLs back, not Redis; and a queue in memory never has a store to wait on.
    for busy in (0.0, 0.05):
        rested = Diagnosis()
        causes = {rested.feed(reading(t, idle=9, queued=400, store_busy=busy)).cause
                  for t in range(6)}  # fmt: skip
        assert "store" not in causes, busy
