"""`crawlscope attach`: the TUI on a crawl running in another process, started with
`crawlscope crawl ... --monitor 127.0.0.1:0`, driven with Textual's pilot."""

from __future__ import annotations

import asyncio
import contextlib
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import IO

import pytest
from tui_support import TIMEOUT, assert_cursors_match, drawn, frames, screen_text, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.plan import STAND_IN_ROOT, CrawlPlan
from crawlscope.engine.remote.client import Link, RemoteCrawl
from crawlscope.engine.remote.monitor import listen
from crawlscope.engine.remote.spot import MonitorSpot
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.attach import Attached, viewers_words
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.waiting import wait_until


@dataclass
class CrawlProcess:
    process: subprocess.Popen[str]
    url: str  # with the token
    stderr: list[str] = field(default_factory=list)

    @property
    def view_url(self) -> str:
        return self.url.split("?")[0]


def _collect(stream: IO[str], into: queue.Queue[str]) -> None:
    # The process is finished with communicate(), which reads and closes this stream too:
    # then there is nothing left to collect.
    with contextlib.suppress(ValueError, OSError):
        for line in stream:
            into.put(line)


@contextlib.asynccontextmanager
async def crawl_process(demo: DemoConfig, *options: str) -> AsyncIterator[CrawlProcess]:
    """The demo site here; `crawlscope crawl` of it, with a monitor, in another process."""
    async with DemoServer(demo) as server:
        command = [sys.executable, "-m", "crawlscope", "crawl", server.url,
                   "--monitor", "127.0.0.1:0", "--max-tasks", "3", *options]  # fmt: skip
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        lines: queue.Queue[str] = queue.Queue()
        assert process.stderr is not None
        threading.Thread(target=_collect, args=(process.stderr, lines), daemon=True).start()
        try:
            url = ""
            while not url:
                await wait_until(lambda: not lines.empty(), "the monitor: line", timeout=TIMEOUT)
                line = lines.get()
                if line.startswith("monitor: "):
                    url = line.removeprefix("monitor: ").strip()
            yield CrawlProcess(process, url)
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.communicate(timeout=TIMEOUT)
            if process.poll() is None:
                process.kill()
                process.wait()


def remote_of(app: CrawlScopeApp) -> RemoteCrawl:
    assert isinstance(app.source, Attached)
    return app.source.remote


SLOW = DemoConfig(pages=1000, latency=0.2)


async def test_the_attached_screen_ends_on_the_crawls_own_figures() -> None:
    async with crawl_process(DemoConfig(pages=60, latency=0.01)) as crawl:
        app = CrawlScopeApp(Attached(crawl.view_url))
        async with app.run_test(size=(120, 40)) as pilot:
            remote = remote_of(app)
            await until(pilot, lambda: remote.link is Link.ENDED, "the crawl ends")
            report, _ = crawl.process.communicate(timeout=TIMEOUT)
            await frames(pilot, 2)
            snap = remote.snapshot()
            # What the crawl's own report says, the viewer shows: its last frame is the end.
            assert snap.phase is Phase.FINISHED
            assert snap.accounting.line() in report.splitlines()
            text = screen_text(app)
            assert "FINISHED" in text and "the crawl ended" in text


async def test_pause_from_the_lecturers_screen_pauses_the_crawl() -> None:
    async with crawl_process(SLOW) as crawl:
        app = CrawlScopeApp(Attached(crawl.url))
        async with app.run_test(size=(120, 40)) as pilot:
            remote = remote_of(app)
            await until(pilot, remote.ready.is_set, "the first frame")
            await until(pilot, lambda: app.panels.action_applies("pause_all"), "p applies")
            await pilot.press("p")
            await until(pilot, lambda: remote.snapshot().phase is Phase.PAUSED, "paused")
            # Seen by another viewer too: the crawl itself paused, not this screen.
            other = RemoteCrawl(crawl.view_url)
            watching = asyncio.create_task(other.run())
            await until(pilot, other.ready.is_set, "the other viewer's frame")
            assert other.snapshot().paused_all
            await until(pilot, lambda: "PAUSED" in screen_text(app), "PAUSED drawn")
            await pilot.press("p")
            await until(pilot, lambda: not other.snapshot().paused_all, "resumed")
            watching.cancel()
            await pilot.press("q")
        # Closing a viewer leaves the crawl running.
        assert crawl.process.poll() is None


async def test_a_read_only_screen_cannot_steer() -> None:
    async with crawl_process(SLOW) as crawl:
        app = CrawlScopeApp(Attached(crawl.view_url))
        async with app.run_test(size=(120, 40)) as pilot:
            remote = remote_of(app)
            await until(pilot, remote.ready.is_set, "the first frame")
            await frames(pilot, 3)
            for action in ("pause_all", "pause_worker", "cancel_worker", "add_worker", "slowmo"):
                assert not app.panels.action_applies(action), action
            await pilot.press("p", "a", "c", "space", "s")
            await frames(pilot, 5)
            assert remote.answers == 0  # nothing was even sent
            assert remote.snapshot().phase is Phase.RUNNING
            assert "read-only" in screen_text(app)


async def test_the_lecturer_sees_who_watches() -> None:
    async with crawl_process(SLOW) as crawl:
        app = CrawlScopeApp(Attached(crawl.url))
        async with app.run_test(size=(120, 40)) as pilot:
            remote = remote_of(app)
            other = RemoteCrawl(crawl.view_url)
            watching = asyncio.create_task(other.run())
            await until(pilot, lambda: len(remote.viewers) == 2, "two viewers")
            await frames(pilot, 2)
            assert viewers_words(remote.viewers) == "2 viewers: 127.0.0.1 x2"
            assert "2 viewers: 127.0.0.1 x2" in screen_text(app)
            watching.cancel()


async def test_a_lost_crawl_is_said_and_its_last_state_kept() -> None:
    async with crawl_process(SLOW) as crawl:
        app = CrawlScopeApp(Attached(crawl.view_url))
        async with app.run_test(size=(120, 40)) as pilot:
            remote = remote_of(app)
            await until(pilot, lambda: remote.frames > 2, "frames")
            crawl.process.kill()
            await until(pilot, lambda: remote.link is Link.DROPPED, "dropped")
            await frames(pilot, 2)
            text = screen_text(app)
            assert "dropped" in text and "RUNNING" in text  # the last state, kept


@pytest.mark.parametrize(
    ("args", "error"),
    [(["crawl", "http://127.0.0.1:9/", "--monitor", "1:2:3"], "crawlscope: --monitor: put an IPv6"),
     (["crawl", "http://127.0.0.1:9/", "--monitor", "x"], "crawlscope: --monitor: not a port"),
     (["attach", "http://example.com/"], "crawlscope: not a monitor URL (ws://...)")],
)  # fmt: skip
def test_bad_command_lines_are_one_line_errors(args: list[str], error: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "crawlscope", *args],
        capture_output=True, text=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL,
        env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.startswith(error) and result.stderr.count("\n") == 1, result.stderr


async def test_the_crawls_own_screen_shows_its_viewers() -> None:
    """`crawlscope tui --monitor`: the lecturer's own TUI lists who attached."""
    spot = MonitorSpot(listen("127.0.0.1", 0), "token")
    plan = CrawlPlan(CrawlConfig(roots=(STAND_IN_ROOT,)), crawl_demo=True, monitor=spot,
                     demo=DemoConfig(pages=200, latency=0.1))  # fmt: skip
    live = LiveCrawl(plan=plan)
    app = CrawlScopeApp(live)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: live.monitor is not None, "the monitor")
        assert live.monitor is not None
        viewer = RemoteCrawl(live.monitor.view_url)
        watching = asyncio.create_task(viewer.run())
        await until(pilot, lambda: "1 viewer: 127.0.0.1" in screen_text(app), "the viewer listed")
        assert live.monitor.view_url in screen_text(app)
        watching.cancel()
        await until(pilot, lambda: "0 viewers" in screen_text(app), "the viewer gone")


async def test_the_viewer_draws_the_crawls_positions_on_its_own_source() -> None:
    # Each worker's own position crosses the wire with its row; the source beside it is
    # the viewer's own copy of the engine (nothing is read on the crawl's machine).
    from crawlscope.tui.widgets.code_pane import CodePane

    async with crawl_process(SLOW) as crawl:
        app = CrawlScopeApp(Attached(crawl.view_url))
        async with app.run_test(size=(180, 40)) as pilot:
            remote = remote_of(app)
            await until(pilot, remote.ready.is_set, "the first frame")
            await pilot.press("v")
            pane = app.panels.query_one(CodePane)
            await until(pilot, lambda: pane.display and any(v.own_at for v in pane.drawn_from)
                        and drawn(pane), "the pane, with the crawl's positions")  # fmt: skip
            assert assert_cursors_match(pane, pane.drawn_from) >= 1
