"""One crawl over many processes on a real redis-server: nothing lost, politeness held."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from aiohttp import web
from redis_support import (
    RedisServer,
    balanced_books,
    crawl,
    fetched,
    finish,
    persistent_redis,
    records,
    redis_server,
    wait_until,
)

from crawlscope.engine.cluster.node import redis_crawler
from crawlscope.engine.cluster.observe import (
    ID_STRIDE,
    ClusterControls,
    ClusterCrawl,
    process_name,
)
from crawlscope.engine.cluster.redis_frontier import RedisFrontier
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.ledger import Ledger
from crawlscope.engine.records import FetchRecord
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import CLI, run_cli, until

__all__ = ["persistent_redis", "redis_server"]  # fixtures, used by name

PAGES = "300"
LATENCY = "0.03"  # slow enough to kill a process mid-crawl, quick enough to finish soon


# The options of this module's demo site (conftest.py's `site` fixture).
DEMO_SITE = ("--pages", PAGES, "--latency", LATENCY)


@pytest.fixture(scope="module")
def reference(site: str, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    """The URL set of a one-process crawl in memory."""
    out = tmp_path_factory.mktemp("reference") / "one.jsonl"
    finish(crawl(site, None, out, "--max-tasks", "20"))
    return {str(r["url"]) for r in records(out)}


def in_flight(server: RedisServer) -> int:
    client = server.client()
    try:
        return int(client.zcard("crawlscope:t:inflight"))
    finally:
        client.close()


def test_three_processes_one_killed(
    site: str, reference: set[str], redis_server: RedisServer, tmp_path: Path
) -> None:
    outs = [tmp_path / f"p{i}.jsonl" for i in range(3)]
    procs = [crawl(site, redis_server.url, out, "--max-tasks", "3", "--lease", "2") for out in outs]
    wait_until(lambda: len(fetched(outs[0])) >= 15, "15 pages from the first process",
               seen=lambda: len(fetched(outs[0])), procs=procs)  # fmt: skip
    procs[0].send_signal(signal.SIGKILL)
    procs[0].wait()
    samples = 0
    while any(p.poll() is None for p in procs[1:]):
        assert balanced_books(redis_server)
        samples += 1
    reports = [finish(p)[0] for p in procs[1:]]
    assert samples > 0
    union = {str(r["url"]) for out in outs for r in records(out)}
    assert union == reference
    for report in reports:  # each ends with the whole crawl's books, all done
        assert report.rstrip().splitlines()[-2].endswith("(all accounted for)")
        assert " 0 queued + 0 held " in report


def test_every_process_killed_then_run_again(
    site: str, reference: set[str], redis_server: RedisServer, tmp_path: Path
) -> None:
    first = [tmp_path / "a.jsonl", tmp_path / "b.jsonl"]
    procs = [
        crawl(site, redis_server.url, out, "--max-tasks", "3", "--lease", "1") for out in first
    ]
    wait_until(lambda: all(len(fetched(out)) >= 15 for out in first), "15 pages from each",
               seen=lambda: [len(fetched(out)) for out in first], procs=procs)  # fmt: skip
    for proc in procs:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    held_at_kill = in_flight(redis_server)
    again = tmp_path / "again.jsonl"
    finish(crawl(site, redis_server.url, again, "--max-tasks", "10", "--lease", "1"))
    outs = [*first, again]
    assert {str(r["url"]) for out in outs for r in records(out)} == reference
    twice = [url for url, n in Counter(u for out in outs for u in fetched(out)).items() if n > 1]
    assert len(twice) <= held_at_kill


def test_a_finished_crawl_run_again_says_so_and_fresh_starts_it_over(
    site: str, reference: set[str], redis_server: RedisServer, tmp_path: Path
) -> None:
    finish(crawl(site, redis_server.url, tmp_path / "1.jsonl", "--max-tasks", "20"))
    out, err = finish(crawl(site, redis_server.url, tmp_path / "2.jsonl"))
    assert records(tmp_path / "2.jsonl") == [] and out == ""
    (line,) = err.splitlines()
    assert line.startswith("crawlscope: crawl t finished at ")
    assert f"({len(reference)} urls)" in line and "--crawl-id" in line and "--fresh" in line
    again = tmp_path / "3.jsonl"
    out, _err = finish(crawl(site, redis_server.url, again, "--max-tasks", "20", "--fresh"))
    assert {str(r["url"]) for r in records(again)} == reference
    assert "(all accounted for)" in out


class CountingSite:
    """A site of linked pages that counts the requests it is answering at once."""

    def __init__(self, pages: int = 120, links: int = 5) -> None:
        self.pages, self.links = pages, links
        self.now = 0
        self.most = 0

    async def page(self, request: web.Request) -> web.Response:
        self.now += 1
        self.most = max(self.most, self.now)
        try:
            await asyncio.sleep(0.01)
        finally:
            self.now -= 1
        n = int(request.match_info["n"])
        hrefs = [f"/page/{(n * 7 + k) % self.pages}" for k in range(1, self.links + 1)]
        body = "".join(f'<a href="{h}">{h}</a>' for h in hrefs)
        return web.Response(text=f"<html><body>{body}</body></html>", content_type="text/html")


async def test_per_host_holds_across_processes(redis_server: RedisServer, tmp_path: Path) -> None:
    counting = CountingSite()
    app = web.Application()
    app.router.add_get("/page/{n}", counting.page)
    runner = web.AppRunner(app)
    await runner.setup()
    tcp = web.TCPSite(runner, "127.0.0.1", 0)
    await tcp.start()
    port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    root = f"http://127.0.0.1:{port}/page/0"
    try:
        procs = [
            await asyncio.create_subprocess_exec(
                *CLI,
                "crawl",
                root,
                "-q",
                "-o",
                str(tmp_path / f"{i}.jsonl"),
                "--redis",
                redis_server.url,
                "--crawl-id",
                "t",
                "--max-tasks",
                "10",
                "--per-host",
                "4",
                "--ignore-robots",
                stdin=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
            for i in range(3)
        ]
        for proc in procs:
            _out, err = await proc.communicate()
            assert proc.returncode == 0, err
    finally:
        await runner.cleanup()
    assert {u for i in range(3) for u in fetched(tmp_path / f"{i}.jsonl")} == {
        f"http://127.0.0.1:{port}/page/{n}" for n in range(counting.pages)
    }
    assert 1 < counting.most <= 4


def test_redis_stopped_for_five_seconds(
    site: str, reference: set[str], persistent_redis: RedisServer, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    proc = crawl(site, persistent_redis.url, out, "--max-tasks", "2")
    wait_until(lambda: len(fetched(out)) >= 10, "10 pages fetched",
               seen=lambda: len(fetched(out)), procs=[proc])  # fmt: skip
    persistent_redis.stop()
    time.sleep(5)  # the outage itself, not a wait for something to happen
    persistent_redis.start()
    report, err = finish(proc)
    assert "Redis unreachable" in err and "Redis was unreachable" in err
    assert {str(r["url"]) for r in records(out)} == reference
    assert " 0 queued + 0 held " in report


# ---- the frontier itself, two "processes" in one loop ----------------------------------

ROOT = "http://127.0.0.1:9/"


def frontier(server: RedisServer, lease: float = 30.0) -> RedisFrontier:
    import redis.asyncio as aioredis

    ledger = Ledger(CrawlConfig(roots=(ROOT,)))
    return RedisFrontier(aioredis.Redis(port=server.port), "t", ledger, lease=lease)


def record_done(q: RedisFrontier, url: str) -> None:
    """What the crawler does before task_done: the page's record kept."""
    q.ledger.keep(
        FetchRecord(url=url, status=200, next_url=None, exception=None, size=0,
                    content_type=None, encoding=None, num_urls=0, num_new_urls=0, tries=1,
                    depth=0, referrer=None, worker=0, t_start=0.0, t_end=0.0)
    )  # fmt: skip


async def test_an_expired_lease_goes_back_and_its_late_task_done_counts_nothing(
    redis_server: RedisServer,
) -> None:
    dead, alive = frontier(redis_server, lease=1.0), frontier(redis_server)
    for url in (ROOT, ROOT + "a"):
        assert dead.ledger.admit(url, 10, 0, None)
        dead.put_nowait((url, 10))
    held = await dead.get()
    assert dead._pump is not None
    dead._pump.cancel()  # the process "dies": no renewal, no task_done sent
    first = await alive.get()
    second = await asyncio.wait_for(alive.get(), 10)  # the dead one's, once it expired
    assert {first.url, second.url} == {ROOT, ROOT + "a"} and held.url in {first.url, second.url}
    for lease in (first, second):
        record_done(alive, lease.url)
        alive.task_done(lease)
    await asyncio.wait_for(alive.join(), 10)
    # The dead process comes back and ends the lease it held long ago: nothing moves.
    dead._pump = None
    record_done(dead, held.url)
    dead.task_done(held)
    dead.task_done(held)
    await asyncio.wait_for(dead.join(), 10)
    assert dead.figures.unfinished == 0 and dead.figures.done == 2
    assert dead.figures.accounting().balanced
    await dead.close()
    await alive.close()


async def test_a_lease_given_back_is_taken_again(redis_server: RedisServer) -> None:
    q = frontier(redis_server)
    assert q.ledger.admit(ROOT, 10, 0, None)
    q.put_nowait((ROOT, 10))
    lease = await q.get()
    q.put_back(lease)
    q.task_done(lease)  # after a put_back: counts nothing
    again = await asyncio.wait_for(q.get(), 10)
    assert again.pair == (ROOT, 10) and q.figures.unfinished == 1
    record_done(q, ROOT)
    q.task_done(again)
    await asyncio.wait_for(q.join(), 10)
    await q.close()


# ---- the cluster watched and steered ----------------------------------------------------


async def test_the_cluster_view_shows_and_steers_a_process(redis_server: RedisServer) -> None:
    import redis.asyncio as aioredis

    async with DemoServer(DemoConfig(pages=60, latency=0.05)) as site:
        config = CrawlConfig(roots=(site.url,), max_tasks=3)
        crawler = redis_crawler(config, redis_server.url, "t")
        crawling = asyncio.create_task(crawler.crawl())
        view = ClusterCrawl(aioredis.Redis(port=redis_server.port), "t")
        controls = ClusterControls(view)
        watching = asyncio.create_task(view.run())
        try:
            await until(lambda: view.ready.is_set() and view.snapshot().live_workers == 3)
            assert [p.name for p in view.processes] == [process_name()]
            assert view.config.roots == (site.url,)
            controls.pause_all()
            await until(lambda: crawler.paused_all)
            await until(lambda: view.snapshot().paused_all)
            # Slowed down until a worker is cancelled: at full speed the 60 pages could all
            # be fetched while the new worker's order waits its turn (up to CONTROL_WAIT)
            # and the view its next snapshot, and no worker would ever be seen holding one.
            crawler.set_slowmo(0.2)
            controls.resume_all()
            controls.add_worker()
            await until(lambda: len(crawler.workers) == 4)
            await until(lambda: any(w.url for w in view.snapshot().workers))
            busy = next(w for w in view.snapshot().workers if w.url)
            assert controls.cancel_worker(busy.id)
            await until(lambda: not crawler.workers[busy.id % ID_STRIDE].alive)
            crawler.set_slowmo(0)
            await asyncio.wait_for(crawling, 60)
            await until(lambda: view.figures.unfinished == 0 and view.figures.done > 0)
            assert view.accounting().balanced
            assert crawler.accounting() == view.accounting()
        finally:
            watching.cancel()
            crawling.cancel()
            await view.client.aclose()


async def test_per_host_readiness_is_shown(redis_server: RedisServer) -> None:
    import redis.asyncio as aioredis

    q = frontier(redis_server)
    for n in range(5):
        url = f"{ROOT}{n}"
        assert q.ledger.admit(url, 10, 0, None)
        q.put_nowait((url, 10))
    lease = await q.get()
    view = ClusterCrawl(aioredis.Redis(port=redis_server.port), "t")
    await view.refresh()
    assert [(h.host, h.queued, h.busy) for h in view.hosts] == [("http://127.0.0.1:9", 4, 1)]
    assert view.figures.in_flight == 1 and view.figures.queued == 4
    record_done(q, lease.url)
    q.task_done(lease)
    await q.close()
    await view.client.aclose()


def test_bad_cluster_options_are_one_line_errors() -> None:
    for args in (
        ["--redis", "redis://127.0.0.1:notaport/0", "--crawl-id", "a"],
        ["--redis", "http://127.0.0.1:6379/0", "--crawl-id", "a"],
        ["--redis", "redis://127.0.0.1:6379/0"],
    ):
        result = run_cli("crawl", "http://127.0.0.1:9/", *args)
        assert result.returncode in (1, 2), result.stderr
        assert "Traceback" not in result.stderr
        assert "redis" in result.stderr.splitlines()[-1].lower()
