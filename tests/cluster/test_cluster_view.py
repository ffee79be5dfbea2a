"""`crawlscope attach redis://... --crawl-id`: the TUI on every process of a cluster crawl,
with a real redis-server and real `crawlscope crawl` processes, driven with the pilot."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from redis_support import RedisServer, crawl, finish, records, redis_server
from tui_support import until

from crawlscope.cli.attach import attach_source
from crawlscope.engine.cluster.observe import ID_STRIDE
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.cluster_view import ClusterAttached, cluster_lines

__all__ = ["redis_server"]  # a fixture, used by name

# About 200 pages at 0.15 s each over 6 workers: several seconds of crawl, time enough
# to see both processes and pause them, short enough to finish soon after.
PAGES, LATENCY = "200", "0.15"


# The options of this module's demo site (conftest.py's `site` fixture).
DEMO_SITE = ("--pages", PAGES, "--latency", LATENCY)


def published_paused(server: RedisServer) -> list[bool]:
    """What each process itself last published: whether all its workers are paused."""
    client = server.client()
    try:
        keys = sorted(client.scan_iter("crawlscope:t:proc:*"))
        return [json.loads(client.get(k) or "{}")["snapshot"]["paused_all"] for k in keys]
    finally:
        client.close()


def cluster_of(app: CrawlScopeApp) -> ClusterAttached:
    assert isinstance(app.source, ClusterAttached)
    return app.source


async def test_pause_from_the_cluster_view_pauses_every_process(
    site: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    outs = [tmp_path / f"p{i}.jsonl" for i in range(2)]
    procs = [crawl(site, redis_server.url, out, "--max-tasks", "3") for out in outs]
    try:
        app = CrawlScopeApp(ClusterAttached(redis_server.url, "t"))
        async with app.run_test(size=(140, 44)) as pilot:
            cluster = cluster_of(app).cluster
            await until(pilot, lambda: len(cluster.processes) == 2, "both processes seen")
            screen = app.panels

            def from_both() -> bool:
                snap = screen.snap
                numbers = {w.id // ID_STRIDE for w in snap.workers} if snap else set()
                return numbers == {0, 1}

            await until(pilot, from_both, "workers of both processes on the screen")
            panel = "\n".join(line.plain for line in cluster_lines(cluster_of(app)))
            for process in cluster.processes:  # each named, with its workers' ids
                assert f"#{process.number} {process.name}" in panel
            assert f"ids {ID_STRIDE}-{2 * ID_STRIDE - 1}" in panel

            await until(pilot, lambda: screen.action_applies("pause_all"), "p applies")
            await pilot.press("p")
            await until(
                pilot, lambda: published_paused(redis_server) == [True, True], "both paused"
            )
            await until(
                pilot,
                lambda: all(p.phase is Phase.PAUSED for p in cluster.processes),
                "the view sees both paused",
            )
            await until(pilot, lambda: screen.action_applies("resume_all"), "p resumes")
            await pilot.press("p")
            await until(pilot, lambda: all(p.poll() is not None for p in procs), "both end")
            for proc in procs:
                finish(proc)
            lines = [r for out in outs for r in records(out)]
            seen = {str(r["url"]) for r in lines}
            fetched = [r for r in lines if not r.get("filtered")]
            # The view's totals are the crawl's own, not counts read as 0 from keys that
            # are missing: every URL the two processes wrote of (both may write that they
            # left the same link alone), and nothing more.
            await until(
                pilot,
                lambda: cluster.figures.unfinished == 0 and cluster.figures.seen == len(seen),
                f"the view sees the end, {len(seen)} urls",
            )
            figures = cluster.figures
            assert figures.done + figures.failed == len(fetched) > 0
            assert figures.filtered == len(seen) - len(fetched)
            assert figures.queued == figures.in_flight == 0
            assert all(records(out) for out in outs)  # both processes took part
            await pilot.press("q")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_attach_takes_a_redis_url_only_with_a_crawl_id() -> None:
    with pytest.raises(ValueError, match="--crawl-id"):
        attach_source("redis://127.0.0.1:6379/0", None, False)
    with pytest.raises(ValueError, match="go with a Redis URL"):
        attach_source("ws://127.0.0.1:1/crawl", "t", False)
    source = attach_source("redis://127.0.0.1:6379/0", "t", True)
    assert isinstance(source, ClusterAttached) and source.read_only
