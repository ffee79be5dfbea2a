"""`crawlscope serve`: one crawl, watched in any number of browsers (a lecture's projector
and every student's laptop).

The crawl runs here, once, with a monitor on a free local port. textual-serve answers
each browser tab by starting `crawlscope attach <monitor URL>` and relaying its screen:
every tab is a viewer of this one crawl, never a crawl of its own. Two pages are served:
the viewers' (read-only) at `/`, and the lecturer's, which can steer, under a secret path.
With `--redis URL --crawl-id NAME` nothing is crawled here: each tab runs `crawlscope
attach` on that cluster crawl (`--read-only` on the viewers' page).

The rule for every child started here: no secret on its command line, which every user
of the machine can read (/proc/PID/cmdline). The monitor's token and the Redis password
go in a file only this user can read (`secret_file`), named by `attach --secret-file`.
"""

from __future__ import annotations

import argparse
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
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import quote, unquote, urlsplit, urlunsplit

from aiohttp import web
from textual_serve.server import Server

from crawlscope.cli.options import crawl_config
from crawlscope.engine.config import ConfigError
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.feeds import FeedWriter, check_formats, open_feed
from crawlscope.engine.observe import CrawlControls, ObservedCrawl
from crawlscope.engine.records import STDOUT
from crawlscope.engine.remote.monitor import Monitor, listen
from crawlscope.engine.remote.protocol import VIEWER_PARAM
from crawlscope.engine.report import write_report
from crawlscope.engine.sites.demo import DemoServer
from crawlscope.engine.sites.demo_config import DEMO_FOR_THE_EYE
from crawlscope.engine.trace.replay import ReplayedCrawl, ReplayError

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
    return shlex.join([sys.executable, "-m", "crawlscope.tui", "attach", url, *options])


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


def run_serve(args: argparse.Namespace) -> int:
    if args.redis is not None or args.crawl_id is not None:
        return _run_serve_cluster(args)
    try:
        replay = ReplayedCrawl.load(args.replay) if args.replay else None
        if replay is None:
            crawl_config(args, args.roots or ["http://127.0.0.1/"])  # a bad option: now
        if replay is not None and args.roots:
            raise ConfigError("--replay plays a recording: give no ROOT with it")
        if replay is not None and (args.output or args.report):
            raise ConfigError("--replay plays a recording: --output and --report need a crawl")
        feeds = _open_feeds(args)
        sock = listen(args.host, args.port)
    except (ConfigError, ReplayError, ValueError) as exc:
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"crawlscope: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)  # fmt: skip
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(args, sock, replay, feeds))
    return 0


def _open_feeds(args: argparse.Namespace) -> list[FeedWriter]:
    """The --output files, opened before anything is served, so a bad path is a one-line
    error; ValueError for the user."""
    if STDOUT in args.output:
        raise ValueError("-o - would mix records with the serving lines: give a file name")
    check_formats(args.output, args.feed_format)
    if args.report:
        open(args.report, "a", encoding="utf-8").close()
    try:
        return [open_feed(path, args.feed_format) for path in args.output]
    except OSError as exc:
        raise ValueError(f"cannot write output: {exc}") from exc


def _run_serve_cluster(args: argparse.Namespace) -> int:
    try:
        if args.redis is None or args.crawl_id is None:
            raise ValueError("--redis and --crawl-id go together")
        if args.roots or args.replay:
            raise ValueError(
                "with --redis nothing is crawled here: give no ROOT nor --replay "
                "(start the crawl with `crawlscope crawl ROOT --redis ...`)"
            )
        ClusterAttached(args.redis, args.crawl_id)  # a bad URL: now, not in each tab
        sock = listen(args.host, args.port)
    except ValueError as exc:
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"crawlscope: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)  # fmt: skip
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve_cluster(args, sock))
    return 0


async def _serve_cluster(args: argparse.Namespace, sock: Any) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    host, port = sock.getsockname()[:2]
    host = reachable(host)
    key = secrets.token_urlsafe(12)
    redis_url, password = without_password(args.redis)
    with contextlib.ExitStack() as files:
        password_file = None if password is None else files.enter_context(secret_file(password))
        pages = await cluster_web_app(host, port, redis_url, args.crawl_id, key, password_file)
        await _pages_until(stop, pages, sock, f"http://{host}:{port}", key)


async def _serve(
    args: argparse.Namespace, sock: Any, replay: ReplayedCrawl | None, feeds: list[FeedWriter]
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with (
        contextlib.AsyncExitStack() as stack,
        _one_crawl(args, replay, feeds) as (observed, controls),
        Monitor(observed, controls, listen("127.0.0.1", 0)) as monitor,
    ):
        host, port = sock.getsockname()[:2]
        host = reachable(host)
        key = secrets.token_urlsafe(12)
        token_file = stack.enter_context(secret_file(monitor.token))
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


@contextlib.asynccontextmanager
async def _one_crawl(
    args: argparse.Namespace, replay: ReplayedCrawl | None, feeds: list[FeedWriter]
) -> AsyncIterator[tuple[ObservedCrawl, CrawlControls | None]]:
    """The crawl every browser watches, running until the block ends."""
    if replay is not None:
        clock = asyncio.create_task(_play(replay))
        try:
            yield replay, None  # a recording is watched, not steered
        finally:
            clock.cancel()
        return
    async with contextlib.AsyncExitStack() as stack:
        roots = list(args.roots)
        if not roots:
            demo = await stack.enter_async_context(DemoServer(DEMO_FOR_THE_EYE))
            roots = [demo.url]
        crawler = Crawler(crawl_config(args, roots))
        for feed in feeds:
            crawler.ledger.record_listeners.append(feed)
            crawler.ledger.filtered_listeners.append(feed)
            stack.callback(feed.close)
        if args.paused:
            crawler.pause_all()
        crawl = asyncio.create_task(crawler.crawl())
        try:
            yield crawler, crawler
        finally:
            crawler.stop()
            with contextlib.suppress(Exception):
                await crawl
            if args.report:
                with open(args.report, "w", encoding="utf-8") as out:
                    write_report(crawler, out)


async def _play(replay: ReplayedCrawl) -> None:
    """Play the recording once at its own speed, then hold its last state."""
    replay.goto(0)
    started = asyncio.get_running_loop().time()
    while replay.position < replay.duration:
        await asyncio.sleep(REPLAY_STEP)
        replay.seek(asyncio.get_running_loop().time() - started)
