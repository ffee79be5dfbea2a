"""Time in the cluster view (issue 40): two real `crawlscope crawl --redis` processes, a
real redis-server, the TUI attached under the pilot. The view's past holds each process's
own recorded events, renumbered and on one clock; its timeline has a lane per worker,
grouped by process; rewind opens on it."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest
from redis_support import RedisServer, crawl, finish, redis_server, wait_until
from tui_support import until

from crawlscope.engine.cluster.past import ID_STRIDE
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.cluster_view import ClusterAttached
from crawlscope.tui.screens.live import LiveScreen
from crawlscope.tui.screens.rewind import RewindScreen
from crawlscope.tui.widgets.timeline_screen import TimelineScreen

__all__ = ["redis_server"]  # a fixture, used by name

pytestmark = pytest.mark.slow

# 300 pages at 0.1 s over 6 workers: some 5 s of crawl to watch.
DEMO_SITE = ("--pages", "300", "--latency", "0.1")


def recorded(path: Path) -> list[dict[str, Any]]:
    lines = path.read_text().splitlines()
    return [json.loads(line) for line in lines[1:]]


def states(events: list[dict[str, Any]]) -> list[tuple[int, str, str | None]]:
    return [(e["worker"] % ID_STRIDE, e["state"], e.get("url")) for e in events
            if e["kind"] == "state"]  # fmt: skip


def contiguous_in(part: list[Any], whole: list[Any]) -> bool:
    """`part` is a run of `whole`: none of it left out, none added, the order kept."""
    return any(whole[i : i + len(part)] == part for i in range(len(whole) - len(part) + 1))


async def test_the_cluster_views_past_is_every_processs_own_on_one_clock(
    site: str, redis_server: RedisServer, tmp_path: Path
) -> None:
    tapes = [tmp_path / f"p{i}.events" for i in range(2)]
    procs = [
        crawl(site, redis_server.url, tmp_path / f"p{i}.jsonl", "--max-tasks", "3",
              "--record", str(tape))
        for i, tape in enumerate(tapes)
    ]  # fmt: skip
    client = redis_server.client()
    try:
        # Both crawling, and no view yet: no process sends its events.
        wait_until(lambda: client.zcard("crawlscope:t:procs") == 2, "both processes published",
                   procs=procs)  # fmt: skip
        assert client.xlen("crawlscope:t:events") == 0
        app = CrawlScopeApp(ClusterAttached(redis_server.url, "t"))
        async with app.run_test(size=(140, 44)) as pilot:
            source = app.source
            assert isinstance(source, ClusterAttached)
            cluster = source.cluster
            await until(pilot, lambda: len(cluster.processes) == 2, "both processes seen")

            def lanes_of_both() -> bool:
                ring = cluster.past
                workers = {e["worker"] for e in ring if e["kind"] == "state"} if ring else ()
                return {w // ID_STRIDE for w in workers} == {0, 1}

            await until(pilot, lanes_of_both, "events of both processes in the view's past")
            await pilot.press("t")
            await until(pilot, lambda: isinstance(app.screen, TimelineScreen), "the timeline")
            screen = app.screen
            assert isinstance(screen, TimelineScreen)
            view = screen.view

            def labels() -> list[str]:
                rows = getattr(view, "_rows", [])[5:]
                return [strip.text.split()[0] for strip in rows if strip.text.strip()]

            # A lane per worker, named by process and worker, the processes one after
            # the other (3 workers each).
            await until(pilot, lambda: len(labels()) >= 6, "six lanes")
            assert labels()[:6] == ["0·w0", "0·w1", "0·w2", "1·w0", "1·w1", "1·w2"]
            await pilot.press("escape")
            await until(pilot, lambda: isinstance(app.screen, LiveScreen), "back")
            await pilot.press("r")
            await until(pilot, lambda: isinstance(app.screen, RewindScreen), "the rewind")
            await pilot.press("r")
            await until(pilot, lambda: isinstance(app.screen, LiveScreen), "back to now")
            await until(pilot, lambda: all(p.poll() is not None for p in procs), "both end")
            for proc in procs:
                finish(proc)
            await until(pilot, lambda: not cluster.processes, "both processes' keys gone")
            past = cluster.past
            assert past is not None
            kept = list(past)
            numbers = {name: n for name, n in cluster._numbers.items()}
            await pilot.press("q")
    finally:
        client.close()
    host = socket.gethostname()
    ref = past.start["wall"]
    for proc, tape in zip(procs, tapes, strict=True):
        number = numbers[f"{host}:{proc.pid}"]
        own = recorded(tape)
        mine = [e for e in kept if _process_of(e) == number]
        # Every state change the process recorded from the moment the view began to
        # watch, none left out or added, in its order, the workers renumbered.
        seen = states(mine)
        assert len(seen) > 50 and contiguous_in(seen, states(own))
        fetched = [e["record"]["url"] for e in mine if e["kind"] == "fetch"]
        assert fetched and contiguous_in(fetched, [e["record"]["url"] for e in own
                                                   if e["kind"] == "fetch"])  # fmt: skip
        # On the view's clock: a fetch's event is where its record's wall-clock end is.
        for e in mine:
            if e["kind"] == "fetch":
                assert abs(ref + e["t"] - e["record"]["t_end"]) < 0.05, e
    times = [e["t"] for e in kept]
    assert times == sorted(times)


def _process_of(event: dict[str, Any]) -> int | None:
    if event["kind"] == "state":
        return int(event["worker"]) // ID_STRIDE
    if event["kind"] == "fetch" and event["record"]["worker"] is not None:
        return int(event["record"]["worker"]) // ID_STRIDE
    return None
