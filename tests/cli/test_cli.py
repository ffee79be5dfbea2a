"""The `crawlscope` command as a user runs it: real processes, real sockets."""

from __future__ import annotations

import gc
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlscope.cli.headless import run_headless
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.plan import CrawlPlan
from crawlscope.engine.records import FIELDS
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.tui.heap import YOUNG_COLLECTION
from helpers import demo_site_process, expected, run_cli


@pytest.fixture(scope="module")
def demo_site() -> Iterator[str]:
    with demo_site_process() as url:
        yield url


@pytest.mark.slow
def test_headless_crawl_of_the_standalone_demo_site(demo_site: str, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    result = run_cli("crawl", demo_site, "--output", str(out), "--max-tasks", "20")
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # not a terminal: no progress line
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(tuple(record) == FIELDS for record in records)
    fetched = [record for record in records if record["filtered"] is None]
    paths = {record["url"].removeprefix(demo_site.rstrip("/")) for record in fetched}
    assert paths == set(expected(DemoConfig()))
    report = result.stdout.splitlines()
    assert report[0] == "*** Report ***"
    assert any(line.startswith("Finished ") and "(max_tasks=20)" in line for line in report)
    assert report[-2].endswith("(all accounted for)")


def test_the_chapters_option_spellings_are_accepted(demo_site: str) -> None:
    result = run_cli(
        "crawl", demo_site, "--max_tasks", "3", "--max_redirect", "12", "--max_tries", "5"
    )
    assert result.returncode == 0, result.stderr
    assert "(max_tasks=3)" in result.stdout
    assert f"{demo_site}chain/11 302 redirect" in result.stdout


def test_quiet_prints_no_report(demo_site: str) -> None:
    result = run_cli("crawl", "-q", demo_site)
    assert result.returncode == 0
    assert result.stdout == ""


def test_verbose_prints_each_fetch_on_stderr(demo_site: str) -> None:
    result = run_cli("crawl", "-v", demo_site, "--max-pages", "5")
    assert result.returncode == 0
    assert len([line for line in result.stderr.splitlines() if line.startswith("http")]) == 5


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["crawl", "--max-tasks", "-3", "http://127.0.0.1/"], "must be at least 1, not -3"),
        (["crawl", "--timeout", "soon", "http://127.0.0.1/"], "not a number of seconds"),
        (["crawl", "ftp://example.com/"], "not an http(s) URL"),
        (["crawl", "--exclude", "(", "http://127.0.0.1/"], "bad --exclude pattern"),
        (["crawl", "-o", "/no/such/dir/out.jsonl", "http://127.0.0.1/"], "cannot write output"),
        (["crawl"], "the following arguments are required: ROOT"),
    ],
)
def test_bad_arguments_give_one_line_and_no_traceback(args: list[str], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("crawlscope")


def test_an_unreachable_root_is_an_error(unused_tcp_port: int) -> None:
    result = run_cli("crawl", f"http://127.0.0.1:{unused_tcp_port}/", "--max-tries", "1")
    assert result.returncode == 1
    assert f"cannot reach http://127.0.0.1:{unused_tcp_port}/" in result.stderr
    assert "Traceback" not in result.stderr


def test_demo_site_refuses_a_port_in_use(demo_site: str) -> None:
    port = demo_site.rstrip("/").rsplit(":", 1)[1]
    result = run_cli("demo-site", "--port", port)
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


@pytest.mark.slow
async def test_a_headless_crawl_settles_the_collector_and_gives_it_back(
    demo: DemoServer,
) -> None:
    """What existed before the crawl is frozen while it runs (the collector's full passes
    skip it) and young collections are spaced out; both are handed back after, so that a
    process running crawls one after another does not pile up a heap the collector never
    sees, nor keep a setting it did not ask for."""
    during: list[tuple[int, int]] = []
    before, thresholds = gc.get_freeze_count(), gc.get_threshold()
    async with CrawlPlan(CrawlConfig(roots=(demo.url,), max_tasks=4)).open() as crawl:
        crawl.crawler.ledger.record_listeners.append(
            lambda _r: during.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        )
        status = await run_headless(crawl, quiet=True, out=io.StringIO(), err=io.StringIO())
    assert status == 0
    assert during and min(frozen for frozen, _young in during) > before
    assert {young for _frozen, young in during} == {YOUNG_COLLECTION}
    assert gc.get_freeze_count() == before
    assert gc.get_threshold() == thresholds
