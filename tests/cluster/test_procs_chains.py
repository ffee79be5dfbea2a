"""A --procs report ends each redirect chain as a crawl in one process does: a target left
by --max-pages is "unfetched", one --max-redirect never queued is "max_redirect reached"."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator

import pytest
from test_procs import only_the_package, procs_crawl

from helpers import CLI

HOPS = 5


class RedirectSite(threading.Thread):
    """/start links to /r/0; /r/n redirects to /r/n+1 up to /r/HOPS, a page."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.url = ""
        self.ready = threading.Event()
        self._stop_it: object = None

    def run(self) -> None:
        import asyncio

        from aiohttp import web

        async def start(_request: web.Request) -> web.Response:
            return web.Response(text='<a href="/r/0">go</a>', content_type="text/html")

        async def hop(request: web.Request) -> web.Response:
            n = int(request.match_info["n"])
            if n < HOPS:
                raise web.HTTPFound(f"/r/{n + 1}")
            return web.Response(text="<p>the end</p>", content_type="text/html")

        async def serve() -> None:
            app = web.Application()
            app.router.add_get("/start", start)
            app.router.add_get("/r/{n}", hop)
            runner = web.AppRunner(app)
            await runner.setup()
            tcp = web.TCPSite(runner, "127.0.0.1", 0)
            await tcp.start()
            port = tcp._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.url = f"http://127.0.0.1:{port}/start"
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            self._stop_it = lambda: loop.call_soon_threadsafe(stop.set)
            self.ready.set()
            await stop.wait()
            await runner.cleanup()

        asyncio.run(serve())


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = RedirectSite()
    server.start()
    assert server.ready.wait(10)
    yield server.url
    if callable(server._stop_it):
        server._stop_it()
    server.join(timeout=10)


def chains(report: str) -> list[str]:
    lines = report.splitlines()
    found = []
    for line in lines[lines.index("Redirect chains:") + 1 :]:
        if not line.startswith("  "):
            break  # the next section
        found.append(line.strip())
    return found


@pytest.mark.parametrize(
    ("options", "end"),
    [(["--max-pages", "3"], "[unfetched]"), (["--max-redirect", "2"], "[max_redirect reached]")],
)
def test_a_chain_ends_as_in_one_process(site: str, options: list[str], end: str) -> None:
    one = subprocess.run(
        [*CLI, "crawl", site, "--ignore-robots", *options], capture_output=True, text=True,
        stdin=subprocess.DEVNULL, env=only_the_package(), timeout=120,
    )  # fmt: skip
    assert one.returncode == 0, one.stderr
    proc = procs_crawl(site, "--procs", "2", "--ignore-robots", *options)
    report, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    (chain,) = chains(one.stdout)
    assert chain.endswith(end), chain
    assert chains(report) == [chain]
