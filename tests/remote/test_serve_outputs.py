"""`crawlscope serve` keeps the crawl's records and report like `crawl` and `tui` do, and
refuses what it cannot do in one line."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

from helpers import CLI, demo_site_process, run_cli

NO_HANG = 60.0


def test_serve_writes_the_records_and_the_report_of_the_crawl_it_serves(tmp_path: Path) -> None:
    records, report = tmp_path / "f.jsonl", tmp_path / "report.txt"
    with demo_site_process("--pages", "20", "--latency", "0") as site:
        serve = subprocess.Popen(
            [*CLI, "serve", site, "--running", "--port", "0", "-o", str(records),
             "--report", str(report)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + NO_HANG
            # The records reach the file a line at a time, flushed as the crawl goes.
            while not (records.exists() and records.read_text(encoding="utf-8").count("\n") > 5):
                assert serve.poll() is None, serve.communicate()[1]
                assert time.monotonic() < deadline, "no records came"
                time.sleep(0.05)
            serve.send_signal(signal.SIGINT)
            serve.wait(timeout=NO_HANG)
        finally:
            if serve.poll() is None:
                serve.kill()
                serve.wait()
    lines = records.read_text(encoding="utf-8").splitlines()
    urls = [json.loads(line)["url"] for line in lines]  # the filtered ones are lines too
    assert site in urls and sum(url.startswith(site) for url in urls) > 5
    assert report.read_text(encoding="utf-8").startswith("*** Report ***")


def test_serve_refuses_records_on_stdout_and_outputs_of_a_replay(tmp_path: Path) -> None:
    done = run_cli("serve", "--port", "0", "-o", "-")
    err = done.stderr
    assert done.returncode == 2 and err.startswith("crawlscope: -o - would write over")
    assert err.count("\n") == 1
    recording = Path(__file__).parents[1] / "data" / "demo-crawl.jsonl"
    done = run_cli("serve", "--replay", str(recording), "-o", str(tmp_path / "f"))
    assert done.returncode == 2
    assert "--replay plays a recording: --output needs a crawl" in done.stderr
    assert done.stderr.count("\n") == 1


def test_serve_refuses_a_replays_workers_and_more_workers_than_a_lecture_has() -> None:
    recording = Path(__file__).parents[1] / "data" / "demo-crawl.jsonl"
    for options, said in (
        (["--replay", str(recording), "--max-tasks", "3"], "--replay plays a recording: "),
        (["--lecture", "--max-tasks", "21"], "--lecture gives the lecture: --max-tasks above 20"),
    ):
        done = run_cli("serve", "--port", "0", *options)
        assert done.returncode == 2 and done.stderr.startswith(f"crawlscope: {said}")
        assert done.stderr.count("\n") == 1
