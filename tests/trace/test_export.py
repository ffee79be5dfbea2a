"""`crawlscope export FILE --trace OUT` (issue 40): a recorded crawl of the real demo site as
a Chrome trace, checked as Perfetto reads one, and hostile input refused in one line."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.trace.export import FETCHES
from crawlscope.engine.trace.recording import Recorder

CLI = [sys.executable, "-m", "crawlscope"]


async def record(path: Path) -> Crawler:
    async with DemoServer(DemoConfig(pages=80, latency=0.005)) as demo:
        crawler = Crawler(CrawlConfig(roots=(demo.url,), max_tasks=4))
        recorder = Recorder(crawler, path)
        await crawler.crawl()
        recorder.close()
    return crawler


def export(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "export", *args], capture_output=True, text=True, timeout=60, check=False
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_recording_exports_as_a_trace_perfetto_reads(tmp_path: Path) -> None:
    path, out = tmp_path / "crawl.jsonl", tmp_path / "trace.json"
    await record(path)
    # A warning in the recording, as the recorder writes one, at the end's time.
    events = lines(path)
    end = events[-1]
    lint = {"kind": "stuck", "t": end["t"], "text": "worker 1 stuck", "worker": 1}
    events.insert(len(events) - 1, {"t": end["t"], "kind": "lint", "lint": lint})
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    done = export(str(path), "--trace", str(out))
    assert done.returncode == 0, done.stderr
    assert f"wrote {out}" in done.stderr
    trace = json.loads(out.read_text())
    slices = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    # Every slice has what the format asks for.
    for s in slices:
        assert s["name"] and s["ts"] >= 0 and s["dur"] >= 0
        assert isinstance(s["pid"], int) and isinstance(s["tid"], int)
    # Slices of one track never overlap.
    by_track: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for s in slices:
        by_track.setdefault((s["pid"], s["tid"]), []).append(s)
    for track in by_track.values():
        track.sort(key=lambda s: s["ts"])
        for a, b in itertools.pairwise(track):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-3, (a, b)
    # One fetch slice per record a worker fetched, on that worker's fetch track.
    fetches = [e["record"] for e in events if e["kind"] == "fetch"]
    fetched = [r for r in fetches if r["worker"] is not None and r["filtered"] is None]
    fetch_slices = [s for s in slices if s["cat"] == "fetch"]
    assert len(fetch_slices) == len(fetched) > 0
    assert sorted(s["name"] for s in fetch_slices) == sorted(r["url"] for r in fetched)
    for s in fetch_slices:
        record_of = next(r for r in fetched if r["url"] == s["name"])
        assert s["tid"] == FETCHES + record_of["worker"]
    # Worker 0's state slices follow its state events, in order, URL and all.
    states = [(e["state"], e["url"]) for e in events if e["kind"] == "state" and e["worker"] == 0]
    track0 = sorted((s for s in slices if s["tid"] == 0), key=lambda s: s["ts"])
    assert [(s["name"], s["args"]["url"]) for s in track0] == states
    # Counters for the queue and the unfinished counter; the warning as an instant.
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "frontier"]
    assert counters and {"queued", "unfinished"} <= set(counters[0]["args"])
    assert counters[-1]["args"]["unfinished"] == 0
    warnings = [e for e in trace["traceEvents"] if e["ph"] == "i" and e["cat"] == "warning"]
    assert [w["name"] for w in warnings] == ["stuck"]
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["name"] == "thread_name"}
    assert {"worker 0", "worker 0 fetches"} <= names


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"not json at all\n", "not a JSON line"),
        (
            b'{"kind": "start", "version": 1, "wall": 1, "config": {"roots": ["http://a/"]}}\n'
            b'{"t": -1, "kind": "phase"}\n',
            ":2: 't' is not a time",
        ),
        (b"\xff\xfe\n", "not UTF-8"),
    ],
)
def test_a_bad_file_is_one_line(tmp_path: Path, content: bytes, words: str) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    done = export(str(bad), "--trace", str(tmp_path / "out.json"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr
    assert not (tmp_path / "out.json").exists()


def test_missing_files_folders_and_the_recording_itself_are_refused(tmp_path: Path) -> None:
    for args in (
        [str(tmp_path / "missing.jsonl"), "--trace", str(tmp_path / "o.json")],
        [str(tmp_path), "--trace", str(tmp_path / "o.json")],
    ):
        done = export(*args)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert done.stderr.count("\n") == 1, done.stderr


async def test_the_trace_is_not_written_over_the_recording_or_into_a_missing_folder(
    tmp_path: Path,
) -> None:
    path = tmp_path / "crawl.jsonl"
    await record(path)
    before = path.read_bytes()
    done = export(str(path), "--trace", str(path))
    assert done.returncode == 2 and "the recording itself" in done.stderr
    assert path.read_bytes() == before
    done = export(str(path), "--trace", str(tmp_path / "no" / "such" / "dir" / "t.json"))
    assert done.returncode == 2 and "cannot write" in done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1
