"""What a --procs parent sends its processes is checked once, in the parent, by the
rules each process takes it with; a crawl whose processes all fail as they start is a
failure, said in one line, not a success with nothing done."""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
from pathlib import Path

import pytest
from test_procs import procs_crawl

from crawlscope.cli.procs import _finish
from crawlscope.engine.cluster.local import LocalCluster
from crawlscope.engine.config import CrawlConfig
from helpers import demo_site_process

# The root is never asked for: the refusal comes before any process starts.
ROOT = "http://127.0.0.1:9/"


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--redis-patience", "inf", "--redis-patience inf is not a finite number"),
        ("--redis-patience", "1e999", "--redis-patience inf is not a finite number"),
        ("--redis-patience", "1e308", "--redis-patience 1e+308 is out of range"),
        ("--delay", "1e308", "--delay 1e+308 is out of range"),
        ("--timeout", "inf", "--timeout inf is not a finite number"),
        ("--max-tasks", str(10**30), f"--max-tasks {10**30} is out of range"),
        ("--max-size", f"{10**30}G", "--max-size"),
    ],
)
def test_an_option_a_process_would_refuse_is_refused_by_the_parent(
    option: str, value: str, says: str, tmp_path: Path
) -> None:
    out = tmp_path / "all.jsonl"
    proc = procs_crawl(ROOT, "--procs", "1", option, value, "-o", str(out))
    report, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    (line,) = err.splitlines()  # one line, no process's own refusal after it
    assert line.startswith(f"crawlscope: {says}") and line.endswith("for a process of --procs")
    assert report == "" and out.stat().st_size == 0  # refused before anything was written


@pytest.mark.parametrize(("option", "value"), [("--redis-patience", "nan"), ("--lease", "-1")])
def test_what_the_command_line_refuses_it_still_refuses(option: str, value: str) -> None:
    proc = procs_crawl(ROOT, "--procs", "1", option, value)
    _report, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and f"argument {option}:" in err


async def test_processes_that_all_fail_as_they_start_fail_the_crawl() -> None:
    # Past the parent's check (as a process that cannot start for any other reason):
    # each real child refuses its spec and ends with status 2, nothing fetched.
    cluster = LocalCluster(CrawlConfig(roots=(ROOT,)), 2, patience=math.inf)
    try:
        await cluster.start()
        await cluster.wait()
    finally:
        await cluster.close()
    args = argparse.Namespace(report=None, quiet=True)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = _finish(cluster, args, io.StringIO(), None)
    assert status == 1
    said = err.getvalue()
    assert "crawlscope: no page was fetched: all 2 processes failed as they started" in said
    assert "nothing is lost" not in said


def test_procs_0_is_this_process_alone_as_the_readme_says(tmp_path: Path) -> None:
    with demo_site_process("--pages", "20") as site:
        proc = procs_crawl(site, "--procs", "0", "--state", str(tmp_path / "s.db"))
        report, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "Accounting: " in report and "(all accounted for)" in report
    assert "processes" not in err  # no cluster: one process's crawl, with its --state
    assert (tmp_path / "s.db").exists()


def test_quiet_is_quiet_under_procs_too() -> None:
    with demo_site_process("--pages", "20") as site:
        proc = procs_crawl(site, "--procs", "2", "-q")
        report, err = proc.communicate(timeout=120)
        loud = procs_crawl(site, "--procs", "2", "--report", os.devnull)
        _, said = loud.communicate(timeout=120)
    assert proc.returncode == 0 and loud.returncode == 0, err + said
    assert report == "" and err == ""
    # Without -q the figures name what they count: pages, and URLs filtered apart.
    (each,) = [line for line in said.splitlines() if "each" in line]
    assert "2 processes, pages fetched each: #1 " in each and "(URLs filtered each: #1 " in each
