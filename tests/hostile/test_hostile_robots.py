"""The hostile site's robots.txt cases (issue 10, items 1 and 6): servers of their own,
started with `crawlscope demo-site --hostile`, crawled over real sockets by the command,
the engine and the TUI."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import aiohttp
from tui_support import config, crawler_of, frames, screen_text, until

from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from crawlscope.engine.sites.hostile import HOSTILE_CASES
from crawlscope.engine.sites.hostile_robots import CASES, INDEX, ROBOTS_ORIGINS
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from helpers import CLI, run_crawl


@contextmanager
def hostile_demo_site() -> Iterator[tuple[str, dict[str, str]]]:
    """`crawlscope demo-site --hostile` in its own process: its URL, and each robots.txt
    case's name -> URL, as it prints them on startup."""
    command = [*CLI, "demo-site", "--hostile", "--port", "0"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        url = next(word for word in first.split() if word.startswith("http://"))
        origins: dict[str, str] = {}
        for _case in CASES:
            name, on, origin, *about = proc.stdout.readline().split()
            assert on == "on" and about, "each line says what its server shows"
            origins[name] = origin
        yield url, origins
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def crawl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "crawl", *args],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def test_demo_site_hostile_serves_the_robots_cases_and_the_command_obeys_them() -> None:
    with hostile_demo_site() as (_url, origins):
        assert set(origins) == {"long-robots", "late-robots", "crawl-delay"}
        for name in ("long-robots", "late-robots"):
            done = crawl(origins[name])
            assert done.returncode == 0, done.stderr
            assert f"{origins[name]}open 200" in done.stdout
            fetched = [line.split()[0] for line in done.stdout.splitlines() if line[:1] != " "]
            assert f"{origins[name]}secret" not in fetched  # never fetched: only filtered
            assert f"    {origins[name]}secret" in done.stdout.splitlines()
            assert "1 filtered" in done.stdout

        done = crawl(origins["crawl-delay"], "--max-crawl-delay", "0.05", "--max-tasks", "2")
        assert done.returncode == 0, done.stderr
        origin = origins["crawl-delay"].rstrip("/")
        assert (
            f"Crawl-delay (robots.txt):\n  {origin} asked for Crawl-delay 86400 s;"
            " 0.05 s used (--max-crawl-delay)\n"
        ) in done.stdout
        assert "Done: 5\n" in done.stdout


async def test_the_hostile_index_leads_to_each_robots_origin() -> None:
    assert INDEX in HOSTILE_CASES
    async with DemoServer(DemoConfig(hostile=True)) as server:
        origins = dict(server.app[ROBOTS_ORIGINS])
        async with aiohttp.ClientSession() as session:
            async with session.get(server.url + "hostile/") as response:
                assert INDEX in await response.text()
            async with session.get(server.url.rstrip("/") + INDEX) as response:
                page = await response.text()
        # In strict scope the cases' servers are other origins: filtered, never crawled.
        crawler = await run_crawl(server.url.rstrip("/") + INDEX)
    assert set(origins) == {case.name for case in CASES}
    for url in origins.values():
        assert f'href="{url}"' in page
        assert crawler.ledger.filtered[url] == "out of scope"
    assert not server.app[ROBOTS_ORIGINS], "the cases' servers stop with the site"


async def test_the_tui_says_which_host_asked_for_what_crawl_delay() -> None:
    async with DemoServer(DemoConfig(hostile=True)) as server:
        root = server.app[ROBOTS_ORIGINS]["crawl-delay"]
        origin = root.rstrip("/")
        app = CrawlScopeApp(LiveCrawl((root,), make_config=config(2, max_crawl_delay=0.05)))
        async with app.run_test(size=(160, 30)) as pilot:
            crawler = await crawler_of(pilot)
            await until(pilot, lambda: bool(crawler.robots.crawl_delays), "robots.txt read")
            await frames(pilot, 2)
            assert f"Crawl-delay: {origin} asked 86400 s, 0.05 s used" in screen_text(app)
