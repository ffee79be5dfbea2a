"""Outputs that fail (a full disk, a closed pipe) and listeners that raise: the crawl ends,
says why, and loses nothing; it never hangs and never shows a traceback."""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler, WorkerDied
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.observe.workers import Worker
from crawlscope.engine.records import FetchRecord, JsonlWriter, LineFile, OutputError
from crawlscope.engine.sites.demo import DemoServer
from helpers import CLI, assert_accounted, demo_site_process, run_cli, until

# Generous: a guard against a hang on a loaded machine, never a speed target.
NO_HANG = 60.0


@pytest.fixture(scope="module")
def demo_site() -> Iterator[str]:
    # A little latency: outputs fail while the crawl runs, not only once it has ended.
    with demo_site_process("--latency", "0.02") as url:
        yield url


# ---- the engine: a listener's trouble is never a worker's ------------------------------


async def test_a_record_listener_that_raises_stops_the_crawl_and_loses_nothing(
    demo: DemoServer,
) -> None:
    crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=3))
    heard: list[str] = []

    def flaky(record: FetchRecord) -> None:
        heard.append(record.url)
        if len(heard) == 3:
            raise RuntimeError("listener bug")

    crawler.ledger.record_listeners.append(flaky)
    await asyncio.wait_for(crawler.crawl(), NO_HANG)
    assert crawler.phase is Phase.STOPPED
    assert [str(f) for f in crawler.ledger.faults] == ["listener bug"]
    assert flaky not in crawler.ledger.record_listeners  # detached: told once, never again
    assert len(heard) == 3
    assert heard[2] in crawler.ledger.done  # the record it failed on was kept first
    assert not crawler.ledger.failed  # and no URL was blamed for the listener's bug
    assert_accounted(crawler)


async def test_a_state_listener_that_raises_stops_the_crawl_and_loses_nothing(
    demo: DemoServer,
) -> None:
    crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=3))

    def flaky(w: Worker | None) -> None:
        if crawler.ledger.done:
            raise OSError("viewer gone")

    crawler.state_listeners.append(flaky)
    await asyncio.wait_for(crawler.crawl(), NO_HANG)
    assert crawler.phase is Phase.STOPPED
    assert [str(f) for f in crawler.ledger.faults] == ["viewer gone"]
    assert not crawler.ledger.failed
    assert_accounted(crawler)


async def test_a_tap_that_raises_is_let_go_and_stops_the_crawl(demo: DemoServer) -> None:
    # The flight recorder's hook (Crawler.tap) is called straight, not through Listeners:
    # its failure must still be one fault, told once, and a graceful stop.
    crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=3))
    calls: list[int] = []

    def flaky(w: Worker | None) -> None:
        if crawler.ledger.done:
            calls.append(1)
            raise OSError("disk gone")

    crawler.tap = flaky
    await asyncio.wait_for(crawler.crawl(), NO_HANG)
    assert crawler.phase is Phase.STOPPED
    assert [str(f) for f in crawler.ledger.faults] == ["disk gone"]
    assert calls == [1] and crawler.tap is None
    assert not crawler.ledger.failed
    assert_accounted(crawler)


async def test_when_every_worker_dies_the_crawl_ends_and_says_so(demo: DemoServer) -> None:
    crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=3))

    # The original bug's shape: the handler of a surprise raises in its turn (it called
    # ledger.failure() for a URL already kept), so the exception leaves the worker.
    def answered(*_args: object) -> FetchRecord:
        raise RuntimeError("surprise")

    def failure(*_args: object) -> FetchRecord:
        raise KeyError("no such URL in hand")

    crawler.ledger.answered = answered  # type: ignore[method-assign]
    crawler.ledger.failure = failure  # type: ignore[method-assign]
    await asyncio.wait_for(crawler.crawl(), NO_HANG)
    assert crawler.phase is Phase.STOPPED
    assert crawler.ledger.faults and all(isinstance(f, WorkerDied) for f in crawler.ledger.faults)
    assert "KeyError" in str(crawler.ledger.faults[0])
    assert not any(w.alive for w in crawler.workers.values())
    assert crawler.accounting().queued >= 1  # the URL the dead worker held went back
    assert_accounted(crawler)


async def test_workers_that_die_before_taking_a_url_end_the_crawl(demo: DemoServer) -> None:
    crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=4))

    async def broken(_w: Worker) -> None:
        raise RuntimeError("cannot wait")

    crawler._hold_if_paused = broken  # type: ignore[method-assign]
    await asyncio.wait_for(crawler.crawl(), NO_HANG)
    assert crawler.phase is Phase.STOPPED
    assert {str(f) for f in crawler.ledger.faults} <= {
        f"worker {i} died: RuntimeError: cannot wait" for i in range(4)
    }
    assert crawler.accounting().queued == 1  # the root, never taken: left, not lost
    assert_accounted(crawler)


# ---- the writers: whole lines, soon, and one clear failure ----------------------------


async def test_a_record_reaches_the_file_while_the_writer_is_open(tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    writer = JsonlWriter(out)
    record = FetchRecord("http://a/", 200, None, None, 1, "text/html", "utf-8", 0, 0, 1, 0,
                         None, 0, 1.0, 2.0)  # fmt: skip
    try:
        writer(record)
        await until(lambda: out.read_bytes().endswith(b"\n"))
        assert json.loads(out.read_text()) == record.to_dict()
    finally:
        writer.close()


async def test_a_full_disk_is_one_error_naming_the_file() -> None:
    sink = LineFile("/dev/full")
    with pytest.raises(OutputError, match=r"^cannot write /dev/full: No space left on device$"):
        sink.write_line("a")
        sink.flush()
    sink.write_line("b")  # broken now: dropped without a second error
    sink.close()
    assert sink.closed


def test_a_failure_found_by_the_timed_flush_is_told_by_close() -> None:
    async def write_and_wait() -> LineFile:
        sink = LineFile("/dev/full")
        sink.write_line("a")
        await until(lambda: sink._timer is None)  # the timed flush ran, and failed
        return sink

    sink = asyncio.run(write_and_wait())
    with pytest.raises(OutputError, match="No space left"):
        sink.close()
    assert sink.closed


# ---- the command: a full disk, a closed pipe -------------------------------------------


@pytest.mark.parametrize("option", ["--output", "--record"])
@pytest.mark.slow
def test_a_full_disk_stops_the_crawl_with_one_line_and_the_report(
    demo_site: str, option: str
) -> None:
    result = run_cli("crawl", demo_site, option, "/dev/full", timeout=NO_HANG)
    assert result.returncode == 1
    assert result.stderr == "crawlscope: cannot write /dev/full: No space left on device\n"
    report = result.stdout.splitlines()
    assert report[0] == "*** Report ***"
    assert report[-2].endswith("(all accounted for)")


def crawl_with_a_closed(stream: str, *args: str) -> tuple[int, bytes]:
    """The command with `stream` (stdout or stderr) a pipe whose reader has gone, as under
    `| true`: its exit status, and what it wrote on the other stream."""
    proc = subprocess.Popen(
        [*CLI, "crawl", *args], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    closed, kept = (proc.stdout, proc.stderr) if stream == "stdout" else (proc.stderr, proc.stdout)
    assert closed is not None and kept is not None
    closed.close()
    written = kept.read()
    return proc.wait(NO_HANG), written


@pytest.mark.slow
def test_a_closed_stdout_ends_quietly_with_sigpipes_status(demo_site: str) -> None:
    assert crawl_with_a_closed("stdout", demo_site) == (141, b"")  # b"": nothing on stderr


def test_a_closed_stderr_under_verbose_ends_quietly(demo_site: str) -> None:
    assert crawl_with_a_closed("stderr", "-v", demo_site) == (141, b"")  # and no report


def test_output_to_a_closed_stdout_ends_quietly(demo_site: str) -> None:
    assert crawl_with_a_closed("stdout", demo_site, "-o", "/dev/stdout") == (141, b"")


def test_verbose_into_head_ends_when_head_does(demo_site: str) -> None:
    # `crawlscope crawl -v ROOT 2>&1 | head -2`
    proc = subprocess.Popen(
        [*CLI, "crawl", "-v", demo_site], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    assert proc.stdout is not None
    lines = [proc.stdout.readline(), proc.stdout.readline()]
    proc.stdout.close()
    assert proc.wait(NO_HANG) == 141
    assert all(line.startswith(demo_site.encode()) for line in lines)
