"""`--state FILE`: a crawl of one process that survives a kill, kept in SQLite."""

from __future__ import annotations

import signal
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from redis_support import crawl, fetched, finish, records, wait_until

from crawlscope.engine.cluster.sqlite_state import keep_state
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import run_cli

PAGES, LATENCY, WORKERS = "200", "0.03", 3


# The options of this module's demo site (conftest.py's `site` fixture).
DEMO_SITE = ("--pages", PAGES, "--latency", LATENCY)


@pytest.fixture(scope="module")
def reference(site: str, tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    out = tmp_path_factory.mktemp("reference") / "one.jsonl"
    finish(crawl(site, None, out, "--max-tasks", "20"))
    return {str(r["url"]) for r in records(out)}


def test_killed_and_run_again_fetches_only_what_was_in_flight(
    site: str, reference: set[str], tmp_path: Path
) -> None:
    state = str(tmp_path / "crawl.db")
    first, again = tmp_path / "first.jsonl", tmp_path / "again.jsonl"
    proc = crawl(site, None, first, "--max-tasks", str(WORKERS), "--state", state)
    wait_until(lambda: len(fetched(first)) >= 20)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    report, _err = finish(crawl(site, None, again, "--max-tasks", "10", "--state", state))
    assert {str(r["url"]) for out in (first, again) for r in records(out)} == reference
    twice = [u for u, n in Counter([*fetched(first), *fetched(again)]).items() if n > 1]
    assert len(twice) <= WORKERS  # the leases in flight when it was killed, at most
    # The report's books are the whole crawl's, both runs together.
    assert f"{len(reference)} seen" in report and "(all accounted for)" in report
    assert " 0 queued + 0 held " in report


def test_a_finished_crawl_run_again_fetches_nothing(site: str, tmp_path: Path) -> None:
    state = str(tmp_path / "crawl.db")
    finish(crawl(site, None, tmp_path / "1.jsonl", "--max-tasks", "20", "--state", state))
    report, err = finish(crawl(site, None, tmp_path / "2.jsonl", "--state", state))
    assert records(tmp_path / "2.jsonl") == []
    # As --redis says of a finished crawl: that it finished, when, and how to start over;
    # no report of "Finished 0 urls" as if it had just run.
    assert report == ""
    (line,) = err.splitlines()
    assert line.startswith(f"crawlscope: the crawl kept in {state} finished at ")
    assert line.endswith("urls); remove that file, or give another --state FILE, to crawl "
                         "again from the start")  # fmt: skip


def test_a_file_that_is_not_a_state_is_a_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "notes.txt"
    bad.write_text("not a database, just words\n" * 100)
    result = run_cli("crawl", "http://127.0.0.1:9/", "--state", str(bad))
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and "cannot use" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("begun", [True, False])
def test_a_state_file_another_program_locks_is_one_line(
    site: str, tmp_path: Path, begun: bool
) -> None:
    """Held by sqlite3 itself, as a DB browser or a backup would: a crawl begun there
    (in WAL mode, URLs queued: readable, not writable) or a database made by the other
    program (not even readable)."""
    state = tmp_path / "crawl.db"
    if begun:
        finish(crawl(site, None, tmp_path / "1.jsonl", "--max-pages", "3", "--state", str(state)))
    else:
        sqlite3.connect(state).close()
    holder = sqlite3.connect(state, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        result = run_cli("crawl", site, "--state", str(state), "-q")
    finally:
        holder.close()
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"crawlscope: {state} is locked by another program"), line
    assert "died" not in line and "Traceback" not in line


async def test_a_crawl_stopped_and_resumed_fetches_nothing_twice(tmp_path: Path) -> None:
    """A graceful stop gives every held URL back: the second run fetches the rest only.
    (The TUI's --state is this: LiveCrawl keeps the state the same way.)"""
    state = tmp_path / "crawl.db"
    async with DemoServer(DemoConfig(pages=80, latency=0.01)) as site:
        config = CrawlConfig(roots=(site.url,), max_tasks=4)
        whole = Crawler(config)
        await whole.crawl()
        first = keep_state(Crawler(config), state)
        first.ledger.record_listeners.append(
            lambda _r: len(first.ledger.done) >= 30 and first.stop()
        )
        await first.crawl()
        assert first.unfinished > 0
        second = keep_state(Crawler(config), state)
        await second.crawl()
    fetched_first, fetched_second = set(first.ledger.done), set(second.ledger.done)
    assert not fetched_first & fetched_second
    assert fetched_first | fetched_second == set(whole.ledger.done)
    assert second.accounting().balanced and second.accounting().queued == 0
    assert second.accounting().done == len(whole.ledger.done)


def test_a_finished_state_is_said_before_a_screen_opens(site: str, tmp_path: Path) -> None:
    state = str(tmp_path / "crawl.db")
    finish(crawl(site, None, tmp_path / "1.jsonl", "--max-tasks", "20", "--state", state))
    shot = tmp_path / "shot.svg"
    result = run_cli("tui", site, "--state", state, "--screenshot", str(shot))
    assert result.returncode == 0, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"crawlscope: the crawl kept in {state} finished at "), line
    assert not shot.exists()
