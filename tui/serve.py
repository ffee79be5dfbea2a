"""`crawlscope serve`: one screen, rendered once, watched in any number of browsers (a
lecture's projector and every student's laptop).

Each mode runs one screen process, in a pseudo-terminal of the lecturer's size
(tui/classroom/): `crawlscope attach` on this process's crawl (opened from its plan,
engine/plan.py, with a monitor on a free local port) or on a cluster crawl in Redis,
`crawlscope replay FILE`, or `crawlscope lecture`. Its output is mirrored to every
browser; a browser costs a socket and a bounded queue, never a process. The class's page
at `/` is read-only; the lecturer's, under a secret path, sends its keys to the screen.

The rule for the screen process: no secret on its command line, which every user of the
machine can read (/proc/PID/cmdline). The monitor's token and the Redis password go in a
file only this user can read (`secret_file`), named by `attach --secret-file`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit, urlunsplit

from crawlscope.engine.cluster.embedded import _hold_lock, sweep_stale
from crawlscope.engine.observe.text import printable
from crawlscope.engine.plan import CrawlEnded, CrawlPlan, OpenCrawl, PlanError
from crawlscope.engine.records import describe_fault
from crawlscope.engine.remote.monitor import RELAY
from crawlscope.engine.remote.protocol import VIEWER_PARAM
from crawlscope.engine.report import write_report

from .classroom.relay import Relay
from .classroom.session import ClassSettings, run_class
from .cluster_view import ClusterAttached

SECRET_PREFIX = "crawlscope-serve-"


@contextlib.contextmanager
def secret_file(secret: str) -> Iterator[str]:
    """The path of a file holding `secret`, in a folder only this user can enter (mkdtemp
    makes it 0700), for the screen to read while the block runs; removed after. The folder
    is locked (flock) while this process lives, so a serve killed with -9 leaves one that
    the next serve provably may remove: its own prefix and user, and a lock nobody holds."""
    sweep_stale(Path(tempfile.gettempdir()), SECRET_PREFIX)
    folder = tempfile.mkdtemp(prefix=SECRET_PREFIX)
    lock = -1
    try:
        lock = _hold_lock(Path(folder))
        path = os.path.join(folder, "secret")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(secret + "\n")
        yield path
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if lock >= 0:
            os.close(lock)


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
    """The address to give the class for `host`: listening everywhere, the one this
    machine reaches others from (connecting a UDP socket sends nothing)."""
    if host not in ("0.0.0.0", "::"):
        return f"[{host}]" if ":" in host else host
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # TEST-NET-1: never routed anywhere real
        return str(probe.getsockname()[0])
    return socket.gethostname()


def screen_command(*args: str) -> list[str]:
    """The command line of the class's screen: this Python's crawlscope. Never a secret
    in it (see the module's docstring)."""
    return [sys.executable, "-m", "crawlscope", *args]


def _fps(settings: ClassSettings) -> list[str]:
    return [] if settings.fps is None else ["--fps", f"{settings.fps:g}"]


def _where(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{reachable(host)}:{port}"


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    return stop


def _run(main: Awaitable[int]) -> int:
    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(main)  # type: ignore[arg-type]
    return 0


def serve_crawl(
    sock: socket.socket, plan: CrawlPlan, report: str | None, settings: ClassSettings
) -> int:
    """Crawl as `plan` says and serve its screen (`attach` on its monitor, steering)
    on `sock` until Ctrl-C; then the report to `report`, if given."""
    return _run(_serve_crawl(sock, plan, report, settings))


def serve_command(sock: socket.socket, args: list[str], settings: ClassSettings) -> int:
    """Serve the screen of `crawlscope ARGS...` (a replay, the lecture) until Ctrl-C."""

    async def serving() -> int:
        return await run_class(sock, screen_command(*args), settings, _stop_on_signals(),
                               _where(sock))  # fmt: skip

    return _run(serving())


def serve_cluster(
    sock: socket.socket,
    redis: str,
    crawl_id: str,
    settings: ClassSettings,
    plan: CrawlPlan | None = None,
    report: str | None = None,
) -> int:
    """Serve the whole cluster crawl `crawl_id`; with `plan`, this process crawls in it."""
    try:
        ClusterAttached(redis, crawl_id)  # a bad URL: now, in one line
    except ValueError as exc:
        sock.close()
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 2
    return _run(_serve_cluster(sock, redis, crawl_id, settings, plan, report))


async def _serve_cluster(
    sock: socket.socket,
    redis: str,
    crawl_id: str,
    settings: ClassSettings,
    plan: CrawlPlan | None,
    report: str | None,
) -> int:
    stop = _stop_on_signals()
    redis_url, password = without_password(redis)

    async def pages(crawl: OpenCrawl | None) -> int:
        if crawl is not None and crawl.monitor is not None:
            print(f"monitor: {crawl.monitor.url}", file=sys.stderr, flush=True)
        with contextlib.ExitStack() as files:
            options = ["--crawl-id", crawl_id]
            if password is not None:
                options += ["--secret-file", files.enter_context(secret_file(password))]
            argv = screen_command("attach", redis_url, *options, *_fps(settings))
            return await run_class(sock, argv, settings, stop, _where(sock))

    if plan is None:  # only watched from here
        return await pages(None)
    return await _serving(plan, report, pages)


async def _serve_crawl(
    sock: socket.socket, plan: CrawlPlan, report: str | None, settings: ClassSettings
) -> int:
    stop = _stop_on_signals()

    async def pages(crawl: OpenCrawl) -> int:
        monitor = crawl.monitor
        assert monitor is not None  # serve's plans always have one
        print(f"monitor: {monitor.url}", file=sys.stderr, flush=True)
        with secret_file(monitor.token) as token_file:
            # The screen's bar counts what the class's bar does: the browsers watching.
            screen_url = f"{monitor.view_url}?{VIEWER_PARAM}={RELAY}"
            argv = screen_command(
                "attach", screen_url, "--secret-file", token_file, *_fps(settings)
            )

            def shown(relay: Relay) -> None:
                monitor.relayed = relay.addresses

            return await run_class(sock, argv, settings, stop, _where(sock), shown)

    return await _serving(plan, report, pages)


async def _serving(
    plan: CrawlPlan, report: str | None, pages: Callable[[OpenCrawl], Awaitable[int]]
) -> int:
    """Open `plan` and crawl while `pages` serve it; then its report. The exit status: 2
    if the plan could not be opened, 1 if a fault stopped the crawl (say --record's disk
    filled) or the screen could not start, else 0; each reason said in a line."""
    served = 0
    try:
        async with plan.open() as crawl:
            crawl.start()
            try:
                served = await pages(crawl)
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
    return 1 if faults or served else 0
