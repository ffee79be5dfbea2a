"""The cluster panel of `crawlscope attach redis://... --crawl-id`, with a real
redis-server and a real `crawlscope crawl` process: it counts "1 process", and when every
process has gone it keeps the crawl's last clock (issue 28, 16)."""

from __future__ import annotations

from pathlib import Path

from redis_support import RedisServer, crawl, finish, redis_server
from tui_support import until

from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.cluster_view import ClusterAttached, cluster_lines
from crawlscope.tui.format import clock
from crawlscope.tui.widgets.status_line import StatusLine

__all__ = ["redis_server"]  # a fixture, used by name


# A crawl of a second or two: long enough to be seen running, short to wait for.
DEMO_SITE = ("--pages", "40", "--latency", "0.05")


def panel(app: CrawlScopeApp) -> str:
    assert isinstance(app.source, ClusterAttached)
    return "\n".join(line.plain for line in cluster_lines(app.source))


def status(app: CrawlScopeApp) -> str:
    return app.screen.query_one(StatusLine).render().plain


async def test_one_process_is_one_process_and_its_clock_stays_after_it_has_gone(
    site: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    proc = crawl(site, redis_server.url, tmp_path / "out.jsonl", "--max-tasks", "2")
    try:
        attached = ClusterAttached(redis_server.url, "t")
        app = CrawlScopeApp(attached)
        async with app.run_test(size=(140, 40)) as pilot:
            cluster = attached.cluster
            await until(pilot, lambda: len(cluster.processes) == 1, "the process seen")
            assert " 1 process · queue" in panel(app), panel(app)
            assert "1 processes" not in panel(app)

            # The clock as the view last read it from the process, until its key expired.
            seen: list[float] = []

            def gone() -> bool:
                if cluster.processes:
                    seen.append(cluster.snapshot().elapsed)
                    return False
                return True

            await until(pilot, lambda: proc.poll() is not None, "the crawl's end")
            finish(proc)
            # Then every process has gone from Redis: the clock stays, and so does the end.
            await until(pilot, gone, "the process's key expired")
            last = seen[-1]
            assert last > 0  # the crawl's own clock
            await until(pilot, lambda: " 0 processes · queue" in panel(app), "the panel")
            assert cluster.snapshot().elapsed == last
            await until(
                pilot,
                lambda: clock(last) in status(app) and "FINISHED" in status(app),
                "the last clock kept on the status line",
            )
            assert "0:00.0" not in status(app)
            await pilot.press("q")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
