"""`crawlscope crawl --engine ...` and `--record`, run as a user runs them."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.sites.hostile_http import HTTP_CASES, HTTP_INDEX
from crawlscope.engine.trace.replay import ReplayedCrawl
from helpers import CLI, demo_site_process, run_cli


@pytest.fixture(scope="module")
def demo_site() -> Iterator[str]:
    with demo_site_process() as url:
        yield url


def url_lines(report: str) -> list[str]:
    # The report's URL lines; the timing line and the date differ from run to run.
    return [line for line in report.splitlines() if line.startswith("http")]


def test_the_three_engines_report_the_same_urls(demo_site: str) -> None:
    reports = {}
    for engine in ("callbacks", "generators", "asyncio"):
        result = run_cli("crawl", demo_site, "--engine", engine, "--max-tasks", "1")
        assert result.returncode == 0, (engine, result.stderr)
        reports[engine] = url_lines(result.stdout)
    assert len(reports["asyncio"]) > 50
    assert reports["callbacks"] == reports["generators"] == reports["asyncio"]


def test_a_lecture_engine_writes_the_same_json_lines(demo_site: str, tmp_path: Path) -> None:
    lines = {}
    for engine in ("generators", "asyncio"):
        out = tmp_path / f"{engine}.jsonl"
        result = run_cli("crawl", demo_site, "--engine", engine, "--max-tasks", "1", "-o", str(out))
        assert result.returncode == 0, result.stderr
        lines[engine] = len(out.read_text().splitlines())
    assert lines["generators"] == lines["asyncio"] > 50


def test_record_writes_a_recording_that_replays(demo_site: str, tmp_path: Path) -> None:
    path = tmp_path / "crawl.jsonl"
    result = run_cli("crawl", demo_site, "--max-tasks", "4", "--record", str(path), "-q")
    assert result.returncode == 0, result.stderr
    replay = ReplayedCrawl.load(path)
    assert replay.duration > 0
    replay.seek(replay.duration)
    assert replay.phase is Phase.FINISHED
    assert replay.accounting().balanced
    assert len(replay.done) + len(replay.failed) > 50


def test_record_is_refused_for_a_lecture_engine(demo_site: str, tmp_path: Path) -> None:
    path = tmp_path / "crawl.jsonl"
    result = run_cli("crawl", demo_site, "--engine", "callbacks", "--record", str(path))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "crawlscope: --record needs the asyncio engine; "
        "for the lecture's stages: crawlscope lecture --record FILE"
    )
    assert not path.exists()


def test_an_unknown_engine_is_a_usage_error(demo_site: str) -> None:
    result = run_cli("crawl", demo_site, "--engine", "threads")
    assert result.returncode == 2
    assert "invalid choice: 'threads'" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tui", "--engine", "generators"], "the TUI needs a terminal"),
        (["tui", "--engine", "callbacks", "--record", "x.jsonl"], "--record needs the asyncio"),
        (["lecture"], "the lecture needs a terminal"),
        (["replay", "missing.jsonl"], "cannot read missing.jsonl"),
    ],
)
def test_the_screens_refuse_cleanly_with_no_terminal(args: list[str], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(f"crawlscope: {message}") and result.stderr.count("\n") == 1


@pytest.fixture(scope="module")
def hostile_site() -> Iterator[str]:
    """`crawlscope demo-site --hostile` in its own process; yields its URL."""
    args = [*CLI, "demo-site", "--port", "0", "--latency", "0", "--jitter", "0", "--hostile"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        yield next(word for word in line.split() if word.startswith("http://")).rstrip("/")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("engine", ["callbacks", "generators"])
def test_a_lecture_engine_records_hostile_framing_and_goes_on(
    hostile_site: str, engine: str, tmp_path: Path
) -> None:
    # Before: a chunk size of -6 looped for ever, eating memory; "²" killed the crawl.
    out = tmp_path / "out.jsonl"
    root = hostile_site + HTTP_INDEX
    result = run_cli("crawl", root, "--engine", engine, "-o", str(out), timeout=60)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    records = {json.loads(line)["url"]: json.loads(line) for line in out.read_text().splitlines()}
    assert set(records) == {hostile_site + path for path in HTTP_CASES}
    for path in HTTP_CASES:
        record = records[hostile_site + path]
        if path == HTTP_INDEX:
            assert record["status"] == 200
        else:
            assert record["status"] is None and record["tries"] == 1, record
            assert record["exception"].startswith("BadResponse: "), record
    assert "(all accounted for)" in result.stdout
