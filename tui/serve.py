"""`crawlscope serve`: one crawl, watched in any number of browsers (a lecture's projector
and every student's laptop).

The crawl runs here, once, opened from its plan (engine/plan.py) with a monitor on a
free local port (or where --monitor says). textual-serve answers
each browser tab by starting `crawlscope attach <monitor URL>` and relaying its screen:
every tab is a viewer of this one crawl, never a crawl of its own. Two pages are served:
the viewers' (read-only) at `/`, and the lecturer's, which can steer, under a secret path.
With `--redis URL --crawl-id NAME` each tab runs `crawlscope attach` on that whole
cluster crawl (`--read-only` on the viewers' page); given ROOT..., this process is one of
the cluster's, else nothing is crawled here.

The rule for every child started here: no secret on its command line, which every user
of the machine can read (/proc/PID/cmdline). The monitor's token and the Redis password
go in a file only this user can read (`secret_file`), named by `attach --secret-file`.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import secrets
import shlex
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from aiohttp import web
from textual_serve.server import Server

from crawlscope.engine.plan import CrawlEnded, CrawlPlan, OpenCrawl, PlanError
from crawlscope.engine.records import describe_fault
from crawlscope.engine.remote.monitor import Monitor
from crawlscope.engine.remote.protocol import VIEWER_PARAM
from crawlscope.engine.remote.spot import MonitorSpot
from crawlscope.engine.report import write_report
from crawlscope.engine.text import printable
from crawlscope.engine.trace.replay import ReplayedCrawl

from .cluster_view import ClusterAttached

REPLAY_STEP = 1 / 15  # seconds between moves of a served replay's clock


# The browser a page's WebSocket is being answered for; each request is a task of its own.
_BROWSER: contextvars.ContextVar[str] = contextvars.ContextVar("browser", default="")


class _Pages(Server):
    """textual-serve's pages attached to one monitor URL, quiet (serve prints its own
    lines). Each browser's `attach` names that browser to the monitor, so the lecturer's
    line lists the class's addresses, not this machine's once per tab. `url` carries no
    token: the lecturer's tabs read it from `token_file`; the others get `--read-only`."""

    def __init__(
        self, url: str, host: str, port: int, title: str, token_file: str | None = None
    ) -> None:
        self.url = url
        self.options = ("--secret-file", token_file) if token_file else ("--read-only",)
        super().__init__(attach_command(url, *self.options), host, port, title=title)

    @property
    def command(self) -> str:
        browser = _BROWSER.get()
        if not browser:
            return attach_command(self.url, *self.options)
        joiner = "&" if "?" in self.url else "?"
        url = f"{self.url}{joiner}{VIEWER_PARAM}={quote(browser)}"
        return attach_command(url, *self.options)

    @command.setter
    def command(self, _value: str) -> None:
        pass  # textual-serve sets one command; ours is made per browser, above

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        _BROWSER.set(request.remote or "")
        return await super().handle_websocket(request)

    async def on_startup(self, app: web.Application) -> None:
        pass


@contextlib.contextmanager
def secret_file(secret: str) -> Iterator[str]:
    """The path of a file holding `secret`, in a folder only this user can enter (mkdtemp
    makes it 0700), for the children to read while the block runs; removed after."""
    folder = tempfile.mkdtemp(prefix="crawlscope-")
    try:
        path = os.path.join(folder, "secret")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(secret + "\n")
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def without_password(redis_url: str) -> tuple[str, str | None]:
    """(`redis_url` without its password, the password or None)."""
    parts = urlsplit(redis_url)
    if parts.password is None:
        return redis_url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user = userinfo.partition(":")[0]
    netloc = f"{user}@{host}" if user else host
    # urlsplit leaves the password %-escaped as written; the file holds it as Redis reads it.
    return urlunsplit(parts._replace(netloc=netloc)), unquote(parts.password)


def reachable(host: str) -> str:
    """The address to give the class for `host`. Listening everywhere, the pages must
    still name one real address (their WebSocket URL is absolute): the one this machine
    reaches others from. Connecting a UDP socket sends nothing."""
    if host not in ("0.0.0.0", "::"):
        return f"[{host}]" if ":" in host else host
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never routed anywhere real
        return str(probe.getsockname()[0])
    return socket.gethostname()


def attach_command(url: str, *options: str) -> str:
    """The shell command textual-serve runs for each browser tab. Never a secret in it:
    `url` has no token nor password (see the module's docstring)."""
    return shlex.join([sys.executable, "-m", "crawlscope", "attach", url, *options])


class _ClusterPages(Server):
    """textual-serve's pages, each tab attached to a cluster crawl in Redis; quiet.
    `redis_url` carries no password: the tabs read it from `password_file`."""

    def __init__(
        self,
        redis_url: str,
        crawl_id: str,
        read_only: bool,
        host: str,
        port: int,
        title: str,
        password_file: str | None = None,
    ) -> None:
        options = ["--crawl-id", crawl_id, *(["--read-only"] if read_only else [])]
        options += ["--secret-file", password_file] if password_file else []
        super().__init__(attach_command(redis_url, *options), host, port, title=title)

    async def on_startup(self, app: web.Application) -> None:
        pass


async def cluster_web_app(
    host: str, port: int, redis_url: str, crawl_id: str, key: str, password_file: str | None
) -> web.Application:
    """As web_app, for a cluster crawl: read-only at /, steering under /lecturer/KEY/."""
    pages = [
        _ClusterPages(redis_url, crawl_id, read_only, host, port, title, password_file)
        for read_only, title in ((True, "crawlscope cluster"),
                                 (False, "crawlscope cluster (lecturer)"))
    ]  # fmt: skip
    app = await pages[0]._make_app()
    app.add_subapp(f"/lecturer/{key}", await pages[1]._make_app())
    return app


async def web_app(
    host: str, port: int, monitor: Monitor, key: str, token_file: str
) -> web.Application:
    """The viewers' pages at /, the lecturer's under /lecturer/KEY/."""
    viewers = _Pages(monitor.view_url, host, port, title="crawlscope")
    lecturer = _Pages(monitor.view_url, host, port, "crawlscope (lecturer)", token_file)
    # textual-serve builds one app per command; the lecturer's is mounted inside the
    # viewers', so both share one port and its URLs get the prefix.
    app = await viewers._make_app()
    app.add_subapp(f"/lecturer/{key}", await lecturer._make_app())
    return app


def serve_crawl(sock: socket.socket, plan: CrawlPlan, report: str | None) -> int:
    """Crawl as `plan` says (its monitor is the one the tabs attach to) and serve it on
    `sock` until Ctrl-C; then the report to `report`, if given."""
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_serve_crawl(sock, plan, report))
    return 0


def serve_replay(sock: socket.socket, replay: ReplayedCrawl, spot: MonitorSpot) -> int:
    """Play `replay` once, watched (not steered) through a monitor on `spot`."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_replay(sock, replay, spot))
    return 0


def serve_cluster(
    sock: socket.socket,
    redis: str,
    crawl_id: str,
    plan: CrawlPlan | None = None,
    report: str | None = None,
) -> int:
    """Serve the whole cluster crawl `crawl_id`; with `plan`, this process crawls in it."""
    try:
        ClusterAttached(redis, crawl_id)  # a bad URL: now, not in each tab
    except ValueError as exc:
        sock.close()
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_serve_cluster(sock, redis, crawl_id, plan, report))
    return 0


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


async def _serve_cluster(
    sock: socket.socket, redis: str, crawl_id: str, plan: CrawlPlan | None, report: str | None
) -> int:
    stop = _stop_on_signals()
    host, port = sock.getsockname()[:2]
    host = reachable(host)
    key = secrets.token_urlsafe(12)
    redis_url, password = without_password(redis)

    async def pages(crawl: OpenCrawl | None) -> None:
        if crawl is not None and crawl.monitor is not None:
            print(f"monitor: {crawl.monitor.url}", file=sys.stderr, flush=True)
        with contextlib.ExitStack() as files:
            password_file = None if password is None else files.enter_context(secret_file(password))
            app = await cluster_web_app(host, port, redis_url, crawl_id, key, password_file)
            await _pages_until(stop, app, sock, f"http://{host}:{port}", key)

    if plan is None:  # only watched from here
        await pages(None)
        return 0
    return await _serving(plan, report, pages)


async def _serve_crawl(sock: socket.socket, plan: CrawlPlan, report: str | None) -> int:
    stop = _stop_on_signals()

    async def pages(crawl: OpenCrawl) -> None:
        assert crawl.monitor is not None  # serve's plans always have one
        await _serve_monitor(stop, sock, crawl.monitor)

    return await _serving(plan, report, pages)


async def _serving(
    plan: CrawlPlan, report: str | None, pages: Callable[[OpenCrawl], Awaitable[None]]
) -> int:
    """Open `plan` and crawl while `pages` serve it; then its report. The exit status: 2
    if the plan could not be opened, 1 if a fault stopped the crawl (say --record's disk
    filled), else 0; each reason said in a line."""
    try:
        async with plan.open() as crawl:
            crawl.start()
            try:
                await pages(crawl)
            finally:
                await crawl.stop_and_wait()
                if report:
                    with open(report, "w", encoding="utf-8") as out:
                        write_report(crawl.crawler, out)
    except PlanError as exc:
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 0 if isinstance(exc, CrawlEnded) else 2
    faults = list(dict.fromkeys(describe_fault(f) for f in crawl.crawler.ledger.faults))
    for line in faults:
        print(f"crawlscope: {printable(line)}", file=sys.stderr)
    return 1 if faults else 0


async def _serve_replay(sock: socket.socket, replay: ReplayedCrawl, spot: MonitorSpot) -> None:
    stop = _stop_on_signals()
    clock = asyncio.create_task(_play(replay))
    try:
        # A recording is watched, not steered.
        async with Monitor(replay, None, spot.sock, token=spot.token, limits=spot.limits) as m:
            await _serve_monitor(stop, sock, m)
    finally:
        clock.cancel()


async def _serve_monitor(stop: asyncio.Event, sock: socket.socket, monitor: Monitor) -> None:
    """The tabs' pages, each attached to `monitor`, until `stop`."""
    host, port = sock.getsockname()[:2]
    host = reachable(host)
    key = secrets.token_urlsafe(12)
    with secret_file(monitor.token) as token_file:
        app = await web_app(host, port, monitor, key, token_file)
        await _pages_until(stop, app, sock, f"http://{host}:{port}", key, monitor.url)


async def _pages_until(
    stop: asyncio.Event,
    pages: web.Application,
    sock: Any,
    where: str,
    key: str,
    monitor_url: str | None = None,
) -> None:
    """Serve `pages` on `sock`, say where (the class's URL and the lecturer's, on stdout;
    the monitor's, which carries its token, on stderr), until `stop` is set."""
    runner = web.AppRunner(pages, handle_signals=False)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    print(f"serving: {where}/", flush=True)
    print(f"lecturer: {where}/lecturer/{key}/", flush=True)
    if monitor_url is not None:
        print(f"monitor: {monitor_url}", file=sys.stderr, flush=True)
    try:
        await stop.wait()
    finally:
        await runner.cleanup()


async def _play(replay: ReplayedCrawl) -> None:
    """Play the recording once at its own speed, then hold its last state."""
    replay.goto(0)
    started = asyncio.get_running_loop().time()
    while replay.position < replay.duration:
        await asyncio.sleep(REPLAY_STEP)
        replay.seek(asyncio.get_running_loop().time() - started)
