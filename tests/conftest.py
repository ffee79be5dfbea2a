"""Shared fixtures: real servers on 127.0.0.1, crawled over real sockets.

The fast tier, for a contributor's inner loop: `python -m pytest -m "not slow"` runs every
test not marked `slow`, in under 2 minutes on 2 cores; `python -m pytest -q` (the README's
command, and CI's) runs them all. A test is slow by its folder when the whole folder drives
something heavy by nature (SLOW_FOLDERS below: the TUI through Pilot, Redis, Chromium,
the hostile sites' timeouts, the lecture's stages, the benchmarks), or by its own
`@pytest.mark.slow` (or its module's `pytestmark`) when it takes over about half a second
in a folder of fast tests. tests/test_fast_tier.py keeps the split honest.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator

import pytest
from aiohttp import web

from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import Handler, demo_site_process

# CI promises every part the suite needs (redis-server, chromium, playwright), so on CI a
# skip means a part went missing and the feature went untested: it fails the run instead,
# unless the test says why CI may skip it with @pytest.mark.ci_may_skip("why").


def on_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "ci_may_skip(why): CI may skip this test, for the reason given"
    )
    # pytest-xdist's workers (the README's `-n 2`) run with COLUMNS=80 and LINES=24: a
    # program a test starts in a pseudo-terminal would take them over the terminal's size
    # and draw 80 columns on a screen read as 160.
    os.environ.pop("COLUMNS", None)
    os.environ.pop("LINES", None)


# Folders whose every test is slow by nature (see the module's docstring), and why.
SLOW_FOLDERS = {
    "bench": "runs the benchmarks' quick modes, each in processes of its own",
    "cluster": "a real redis-server, and crawls over several processes",
    "hostile": "the hostile sites' slow, silent and huge cases run to their timeouts",
    "lecture": "the chapter's stages stepped through Pilot",
    "remote": "monitors, viewers and a class in Chromium, over sockets",
    "tui": "the TUI driven through Pilot, and its snapshots",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        folder = item.path.parent.name
        if folder in SLOW_FOLDERS and item.path.parent.parent.name == "tests":
            item.add_marker(pytest.mark.slow)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not (report.skipped and on_ci()) or hasattr(report, "wasxfail"):
        return
    if item.get_closest_marker("ci_may_skip") is not None:
        return
    longrepr = report.longrepr
    why = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    why = why.removeprefix("Skipped: ")
    report.outcome = "failed"
    report.longrepr = (
        f"skipped on CI ({why}): CI must run every test; "
        "mark it @pytest.mark.ci_may_skip('why') if CI may skip it"
    )


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, None]:
    # A skip while collecting (a module-level pytest.importorskip or pytest.skip) skips a
    # whole module before any test of it reports: on CI that fails the run too. A module
    # that did not load cannot carry @pytest.mark.ci_may_skip, so it has no way out.
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if not (report.skipped and on_ci()):
        return
    longrepr = report.longrepr
    why = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"skipped on CI while collecting ({why.removeprefix('Skipped: ')}): CI must run "
        "every test; skip inside the test instead, marked @pytest.mark.ci_may_skip('why')"
    )


@pytest.fixture(autouse=True)
def own_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache folder of the test's own: a crawl saves its flights under the user's cache
    (engine/trace/flight.py), and a test must not write into the home of whoever runs it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))


@pytest.fixture(scope="module")
def site(request: pytest.FixtureRequest) -> Iterator[str]:
    """`crawlscope demo-site` in its own process, one for a test module, started with the
    options the module gives in DEMO_SITE; the URL it serves."""
    with demo_site_process(*getattr(request.module, "DEMO_SITE", ())) as url:
        yield url


@pytest.fixture
async def demo() -> AsyncIterator[DemoServer]:
    async with DemoServer(DemoConfig()) as server:
        yield server


@pytest.fixture
async def slow_demo() -> AsyncIterator[DemoServer]:
    """Slow enough that a test can act while fetches are in flight."""
    async with DemoServer(DemoConfig(pages=40, latency=0.05, jitter=0.02)) as server:
        yield server


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[dict[str, Handler]], Awaitable[str]]]:
    """Serve a dict of path -> handler on 127.0.0.1; returns the root URL."""
    runners: list[web.AppRunner] = []

    async def start(routes: dict[str, Handler]) -> str:
        app = web.Application()
        for route, handler in routes.items():
            app.router.add_get(route, handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        return f"http://127.0.0.1:{runner.addresses[0][1]}/"

    yield start
    for runner in runners:
        await runner.cleanup()
