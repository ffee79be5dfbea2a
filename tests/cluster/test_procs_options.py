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
from aiohttp import web
from redis_support import records
from site_thread import SiteThread
from test_procs import procs_crawl

from crawlscope.cli.procs import _finish
from crawlscope.engine.cluster.local import LocalCluster
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.records import RECORD_TEXT_LIMIT
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


class LongHrefSite(SiteThread):
    """A root linking a 5 MiB href (filtered as too long) and two pages, one of which
    redirects to a 5 MiB Location."""

    LONG = "/" + "a" * (5 << 20)

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/", self.root)
        app.router.add_get("/b", self.root)
        app.router.add_get("/c", self.redirect)

    async def root(self, request: web.Request) -> web.Response:
        body = f'<a href="{self.LONG}">x</a><a href="/b">b</a><a href="/c">c</a>'
        return web.Response(text=body, content_type="text/html")

    async def redirect(self, request: web.Request) -> web.Response:
        return web.Response(status=302, headers={"Location": self.LONG + "b"})


def test_a_5_mib_href_is_one_record_cut_and_marked_in_one_process_or_many(
    tmp_path: Path,
) -> None:
    site = LongHrefSite()
    site.start()
    assert site.ready.wait(10)
    try:
        lines: dict[str, list[dict[str, object]]] = {}
        for name, options in (("one", []), ("procs", ["--procs", "1"])):
            out = tmp_path / f"{name}.jsonl"
            proc = procs_crawl(site.url, "--ignore-robots", "-o", str(out), *options)
            _report, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            assert "were not records" not in err
            lines[name] = records(out)
    finally:
        site.stop()
    assert len(lines["procs"]) == len(lines["one"]) >= 4
    for found in lines.values():
        texts = [str(v) for record in found for v in record.values() if isinstance(v, str)]
        assert max(map(len, texts)) <= RECORD_TEXT_LIMIT
        cut = [t for t in texts if "…[cut from " in t]
        assert any(t.endswith("characters, sha256 " + t[-17:]) for t in cut)
        # The 5 MiB href's own record: its URL cut, marked, kept (it was dropped).
        assert any(str(r["url"]).startswith(site.url + "aaa") for r in found)
    assert {str(r["url"]) for r in lines["one"]} == {str(r["url"]) for r in lines["procs"]}
