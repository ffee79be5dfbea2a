"""The cluster view builds views for the rows its screen shows only, with every process's
workers counted (issue 32, item 3): real redis-server, real `crawlscope crawl` processes."""

from __future__ import annotations

import json
from collections.abc import Container
from pathlib import Path

from redis_support import RedisServer, crawl, redis_server
from tui_support import until

from crawlscope.engine.cluster.observe import FIRST_ROWS, ID_STRIDE
from crawlscope.engine.observe.snapshot import Snapshot
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.cluster_view import ClusterAttached
from crawlscope.tui.widgets.workers_table import WorkersTable

__all__ = ["redis_server"]  # a fixture, used by name

TASKS = 60  # a process: more rows than the screen shows


# The options of this module's demo site (conftest.py's `site` fixture): a crawl that
# outlasts each test (384 workers at 0.3 s a page: some 16 s), since a view's rows are
# published only by a process still crawling. At 300 pages, a CI run once saw both
# processes finish before the view scrolled to the last row and asked for it.
DEMO_SITE = ("--pages", "20000", "--latency", "0.3")


async def test_the_cluster_view_builds_only_the_rows_on_screen(
    site: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    procs = [
        crawl(site, redis_server.url, tmp_path / f"p{i}.jsonl", "--max-tasks", str(TASKS))
        for i in range(2)
    ]
    try:
        app = CrawlScopeApp(ClusterAttached(redis_server.url, "t"))
        async with app.run_test(size=(140, 44)) as pilot:
            table = app.query_one(WorkersTable)
            await until(pilot, lambda: table.row_count == 2 * TASKS, "both processes' rows")
            screen = app.panels
            source = screen.source
            assert source is not None
            # What the screen asks of the cluster, frame by frame, and what it got: the
            # rows a frame drew are those it asked for when it took it (the table's
            # height, and so the rows wanted, may change between frames as it lays out).
            asked: list[tuple[frozenset[int] | None, Snapshot]] = []
            take = source.snapshot

            def snapshot(where_for: Container[int] | None = None, rows: bool = True) -> Snapshot:
                snap = take(where_for, rows)
                if rows:
                    wanted = None if where_for is None else frozenset(table.wanted_ids())
                    asked.append((wanted, snap))
                return snap

            source.snapshot = snapshot  # type: ignore[method-assign]
            await until(pilot, lambda: sum(bool(s.workers) for _, s in asked) >= 3, "frames")
            for wanted, snap in asked:
                assert wanted is not None, "a frame asked for every worker"
                assert len(wanted) < 2 * TASKS
                assert {v.id for v in snap.workers} <= wanted
                ids = snap.row_ids()
                assert len(ids) == 2 * TASKS
                assert {i // ID_STRIDE for i in ids} == {0, 1}
                assert sum(n for _, n in snap.state_counts()) == snap.live_workers
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()


async def test_a_process_publishes_only_the_rows_views_ask_for(
    site: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    """At MANY workers a process publishes the views of its first FIRST_ROWS and of the
    rows a view shows, not of every worker; a view scrolled down gets its rows."""
    import redis

    many = 3 * FIRST_ROWS
    procs = [
        crawl(site, redis_server.url, tmp_path / f"p{i}.jsonl", "--max-tasks", str(many))
        for i in range(2)
    ]
    client = redis.Redis.from_url(redis_server.url)

    def published_views() -> list[int]:
        names = client.zrange("crawlscope:t:procs", 0, -1)
        blobs = [client.get(b"crawlscope:t:proc:" + name) for name in names]
        return [len(json.loads(b)["snapshot"]["workers"]) for b in blobs if b is not None]

    try:
        app = CrawlScopeApp(ClusterAttached(redis_server.url, "t"))
        async with app.run_test(size=(140, 44)) as pilot:
            table = app.query_one(WorkersTable)
            await until(pilot, lambda: table.row_count == 2 * many, "both processes' rows")
            views = published_views()
            assert len(views) == 2 and all(FIRST_ROWS <= n < many for n in views), views
            last = ID_STRIDE + many - 1  # the second process's last worker
            table.move_cursor(table.row_count - 1)
            await until(
                pilot,
                lambda: (v := table.selected_view()) is not None and v.id == last,
                "the last row's view, published at the view's asking",
            )
            assert all(n < many for n in published_views())
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()
        client.close()
