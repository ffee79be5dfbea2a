"""A --procs report ends each redirect chain as a crawl in one process does: a target left
by --max-pages is "unfetched", one --max-redirect never queued is "max_redirect reached"."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest
from aiohttp import web
from site_thread import SiteThread
from test_procs import only_the_package, procs_crawl

from helpers import CLI

HOPS = 5


class RedirectSite(SiteThread):
    """/start links to /r/0; /r/n redirects to /r/n+1 up to /r/HOPS, a page."""

    first_path = "/start"

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/start", self.start_page)
        app.router.add_get("/r/{n}", self.hop)

    async def start_page(self, _request: web.Request) -> web.Response:
        return web.Response(text='<a href="/r/0">go</a>', content_type="text/html")

    async def hop(self, request: web.Request) -> web.Response:
        n = int(request.match_info["n"])
        if n < HOPS:
            raise web.HTTPFound(f"/r/{n + 1}")
        return web.Response(text="<p>the end</p>", content_type="text/html")


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = RedirectSite()
    server.start()
    assert server.ready.wait(10)
    yield server.url
    server.stop()


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
