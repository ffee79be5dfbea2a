"""Shared fixtures: real servers on 127.0.0.1, crawled over real sockets."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from crawlscope.engine.sites.demo import DemoConfig, DemoServer
from helpers import Handler


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
