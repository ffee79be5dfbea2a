"""SIGINT and SIGTERM stop a headless crawl gracefully: every finished record is in the
file, whole, the report is printed, the status says which signal; a second one quits at
once. Records reach the file as the crawl goes, so even SIGKILL loses little."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from aiohttp import web

from crawlscope.cli.common import summarise
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoServer
from helpers import CLI, Handler, demo_site_process, html

NO_HANG = 60.0  # a guard against a hang on a loaded machine, never a speed target


@pytest.fixture(scope="module")
def slow_site() -> Iterator[str]:
    """Slow enough that a crawl of it is still running when the test acts."""
    with demo_site_process("--pages", "400", "--latency", "0.2") as url:
        yield url


def wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + NO_HANG
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.01)


def whole_lines(path: Path) -> int:
    """How many whole lines the file holds (it may not exist yet)."""
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def start_crawl(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*CLI, "crawl", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("signum", "status", "word"),
    [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
)
@pytest.mark.slow
def test_a_signal_stops_the_crawl_with_its_records_and_its_report(
    slow_site: str, tmp_path: Path, signum: int, status: int, word: str
) -> None:
    out = tmp_path / "out.jsonl"
    crawl = start_crawl(slow_site, "-o", str(out))
    # A record on disk while the crawl runs: the writer flushes as it goes.
    wait_for(lambda: whole_lines(out) >= 2, "records in the output file")
    crawl.send_signal(signum)
    stdout, stderr = crawl.communicate(timeout=NO_HANG)
    assert crawl.returncode == status
    assert stderr == f"crawlscope: {word}\n"
    text = out.read_text(encoding="utf-8")
    assert text.endswith("\n")
    records = [json.loads(line) for line in text.splitlines()]  # every line whole
    fetches = [r for r in records if not r.get("filtered")]  # filtered URLs have lines too
    report = stdout.splitlines()
    assert report[0] == "*** Report ***"
    assert f"Done: {len(fetches)}" in report  # every fetch the report counts is in the file
    assert report[-2].endswith("(all accounted for)")
    assert any(line.startswith("Todo: ") and line != "Todo: 0" for line in report)
    # The totals say how it ended: not "Finished" for a crawl a signal cut short.
    (ended,) = [line for line in report if " urls in " in line and "secs" in line]
    assert ended.startswith(f"{word.capitalize()} {len(fetches)} urls in "), ended


async def test_records_reach_the_file_as_the_crawl_goes_and_sigkill_keeps_them(
    serve: Callable[[dict[str, Handler]], Awaitable[str]], tmp_path: Path
) -> None:
    # Two pages answer, a third never does: the crawl cannot end, so its records (less
    # than one 8 KB buffer) reach the file only if the writer flushes as it goes.
    never = asyncio.Event()

    async def hang(_request: web.Request) -> web.Response:
        await never.wait()  # set at the test's end, so the server can close
        return web.Response(text="too late")

    root = await serve({
        "/": html('<a href="/a">a</a> <a href="/hang">hang</a>'),
        "/a": html("<p>a leaf</p>"),
        "/hang": hang,
    })  # fmt: skip
    out = tmp_path / "out.jsonl"
    crawl = await asyncio.create_subprocess_exec(
        *CLI, "crawl", root, "-o", str(out), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        async with asyncio.timeout(NO_HANG):
            while whole_lines(out) < 2:
                await asyncio.sleep(0.01)
    finally:
        crawl.kill()
        await crawl.wait()
        never.set()
    text = out.read_text(encoding="utf-8")
    assert text.endswith("\n")
    urls = {json.loads(line)["url"] for line in text.splitlines()}
    assert {root, root + "a"} <= urls


@pytest.mark.slow
def test_a_second_ctrl_c_quits_at_once_when_the_stop_is_stuck(
    slow_site: str, tmp_path: Path
) -> None:
    # The recording goes to a pipe that is never read: once the pipe is full, the crawl
    # is stuck in a write, and no graceful stop can finish. A second Ctrl-C still ends it.
    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    crawl = start_crawl(slow_site, "--record", str(fifo))
    try:
        wchan = Path(f"/proc/{crawl.pid}/wchan")  # where in the kernel the process sleeps
        if not wchan.exists():
            pytest.skip("needs Linux's /proc/PID/wchan to see the process blocked")
        wait_for(lambda: "pipe_write" in wchan.read_text(), "the crawl to block on the pipe")
        crawl.send_signal(signal.SIGINT)  # asks for a graceful stop, which cannot come

        def ctrl_c_again() -> bool:
            # Again and again: two signals sent at once may arrive as one.
            if crawl.poll() is None:
                crawl.send_signal(signal.SIGINT)
                time.sleep(0.05)
            return crawl.poll() is not None

        wait_for(ctrl_c_again, "the crawl to quit")
        _stdout, stderr = crawl.communicate(timeout=NO_HANG)
        assert crawl.returncode == 130
        assert stderr == "\ncrawlscope: quitting at once\n"
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
        os.close(reader)


@pytest.mark.slow
async def test_a_crawl_quit_before_its_end_is_summed_up_as_stopped(slow_demo: DemoServer) -> None:
    """What the TUI and the lecture print as their screen closes (summarise): "Stopped"
    for a crawl quit with URLs left, "Finished" for one that ran to its end."""
    config = CrawlConfig(roots=(slow_demo.url,), max_tasks=2)
    quit_early, whole = Crawler(config), Crawler(config)
    quit_early.ledger.record_listeners.append(
        lambda _r: len(quit_early.ledger.done) >= 3 and quit_early.stop()
    )
    await quit_early.crawl()
    await whole.crawl()
    said = {}
    for name, crawler in (("early", quit_early), ("whole", whole)):
        out = io.StringIO()
        summarise(crawler, None, out)
        said[name] = out.getvalue().splitlines()[0]
    assert said["early"].startswith("Stopped "), said
    assert said["whole"].startswith(f"Finished {len(whole.ledger.done)} urls in "), said
