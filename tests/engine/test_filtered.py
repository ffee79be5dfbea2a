"""Filtered URLs are in the report with their reason, and in the JSON Lines (issue 10,
item 12): real servers, real sockets, the command as a user runs it."""

from __future__ import annotations

import io
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.records import FIELDS, FetchRecord
from crawlscope.engine.report import FILTERED_SHOWN, filtered_lines, write_report
from helpers import Handler, demo_site_process, html, run_cli

Serve = Callable[[dict[str, Handler]], Awaitable[str]]
ROBOTS_REASON = "disallowed by robots.txt (Disallow: /private/)"  # the rule named


@pytest.fixture(scope="module")
def demo_site() -> Iterator[str]:
    with demo_site_process() as url:
        yield url


@pytest.mark.parametrize("engine", ["asyncio", "callbacks"])
@pytest.mark.slow
def test_a_url_robots_txt_refuses_is_in_the_report_and_the_json_lines(
    demo_site: str, engine: str, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    result = run_cli("crawl", demo_site, "--engine", engine, "-o", str(out))
    assert result.returncode == 0, result.stderr
    secret = demo_site.rstrip("/") + "/private/secret"
    report = result.stdout.splitlines()
    section = report.index("Filtered (not fetched), by reason:")
    assert f"  {ROBOTS_REASON}: 1" in report[section:]
    assert f"    {secret}" in report[section:]
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert all(tuple(record) == FIELDS for record in records)
    assert FIELDS[-1] == "filtered"
    (refused,) = [record for record in records if record["url"] == secret]
    assert refused["filtered"] == ROBOTS_REASON
    assert refused["status"] is None and refused["exception"] is None
    assert refused["referrer"] == demo_site + "page/0"  # "/" redirects there; it links it
    assert refused["depth"] >= 1 and refused["tries"] == 0
    # Every URL seen has exactly one line: fetched, failed or filtered.
    filtered = [record for record in records if record["filtered"] is not None]
    accounting = next(line for line in report if line.startswith("Accounting: "))
    assert f"+ {len(filtered)} filtered +" in accounting
    assert len({record["url"] for record in records}) == len(records)


async def test_every_filtered_url_is_told_with_its_reason_depth_and_referrer(
    serve: Serve,
) -> None:
    page = (
        '<a href="http://elsewhere.invalid/">away</a> <a href="/skip/1">x</a>'
        ' <a href="/skip/2">y</a> <a href="/keep">k</a>'
    )
    root = await serve({"/": html(page), "/keep": html("kept")})
    config = CrawlConfig(roots=(root,), exclude=("/skip/",), obey_robots=False)
    crawler = Crawler(config)
    told: list[FetchRecord] = []
    crawler.ledger.filtered_listeners.append(told.append)
    fetched: list[FetchRecord] = []
    crawler.ledger.record_listeners.append(fetched.append)
    await crawler.crawl()
    assert {r.url: r.filtered for r in told} == crawler.ledger.filtered
    assert set(crawler.ledger.filtered) == {
        "http://elsewhere.invalid/",
        root + "skip/1",
        root + "skip/2",
    }
    for record in told:
        assert record.referrer == root and record.depth == 1 and record.worker is None
        assert record.status is None and record.exception is None and not record.failed
    # The fetch listeners hear of fetches only.
    assert {r.url for r in fetched} == {root, root + "keep"}
    out = io.StringIO()
    write_report(crawler, out)
    report = out.getvalue()
    assert "  excluded by '/skip/': 2\n" in report
    assert "  out of scope: 1\n    http://elsewhere.invalid/\n" in report


def test_the_filtered_section_lists_each_reasons_first_urls_and_counts_the_rest() -> None:
    filtered = {f"http://h/a/{n:03d}": "out of scope" for n in range(FILTERED_SHOWN + 5)}
    filtered["http://h/b"] = "URL longer than 10"
    filtered["http://h/\x1b[31m"] = "excluded by '\x1b'"
    lines = filtered_lines(filtered)
    assert lines[0] == "Filtered (not fetched), by reason:"
    assert lines[1] == f"  out of scope: {FILTERED_SHOWN + 5}"
    assert lines[2 : 2 + FILTERED_SHOWN] == [
        f"    http://h/a/{n:03d}" for n in range(FILTERED_SHOWN)
    ]
    assert lines[2 + FILTERED_SHOWN] == "    ... and 5 more"
    rest = lines[3 + FILTERED_SHOWN :]
    assert rest == [
        "  URL longer than 10: 1",
        "    http://h/b",
        "  excluded by '\\x1b': 1",
        "    http://h/\\x1b[31m",
    ]
    assert filtered_lines({}) == []
