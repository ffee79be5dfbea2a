"""The command line of watching from elsewhere: `--monitor` on crawl and tui, and the
`attach` command. (`serve` is in serve.py.)"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TextIO

from crawlscope.engine.crawler import Crawler
from crawlscope.engine.remote.monitor import (
    DEFAULT_LIMITS,
    Monitor,
    ViewerLimits,
    listen,
    parse_address,
    socket_url,
)

from .app import CrawlScopeApp
from .attach import Attached
from .cluster_view import ClusterAttached


def add_monitor_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--monitor",
        metavar="[HOST:]PORT",
        help="serve the crawl to `crawlscope attach` over a WebSocket on HOST (default "
        "127.0.0.1) and PORT (0: any free one); the `monitor:` line on stderr gives the "
        "URL that can steer, and the same URL without ?token= watches only",
    )


def add_attach_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    attach = sub.add_parser(
        "attach",
        help="watch a crawl running elsewhere, through the URL its --monitor printed, "
        "or a cluster's Redis",
        description="Open the TUI on a crawl that runs in another process (started with "
        "--monitor, or by `crawlscope serve`). With the URL's ?token= the keys steer it; "
        "without, the view is read-only. With a Redis URL and --crawl-id, on every "
        "process of that cluster crawl; whoever reaches Redis can steer it. q closes "
        "this view only: the crawl goes on.",
    )
    attach.add_argument(
        "url", metavar="URL", help="ws://HOST:PORT/crawl[?token=...] or redis://HOST:PORT/DB"
    )
    attach.add_argument("--crawl-id", metavar="NAME", help="with a Redis URL: which crawl")
    attach.add_argument(
        "--read-only", action="store_true",
        help="with a Redis URL: watch only (the keys that steer are off)",
    )  # fmt: skip


@dataclass
class MonitorPlace:
    """Where a monitor will listen, bound before anything starts, and its token."""

    sock: socket.socket
    token: str

    @property
    def url(self) -> str:
        return socket_url(self.sock, self.token)


def bind_monitor(address: str | None) -> MonitorPlace | None:
    """The socket `--monitor` asks for, or None without it; ValueError or OSError with a
    message for the user when it cannot be had."""
    if address is None:
        return None
    host, port = parse_address(address)
    try:
        sock = listen(host, port)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return MonitorPlace(sock, secrets.token_urlsafe(18))


def announce(place: MonitorPlace, err: TextIO = sys.stderr) -> None:
    print(f"monitor: {place.url}", file=err, flush=True)


@contextlib.asynccontextmanager
async def monitoring(
    crawler: Crawler, place: MonitorPlace | None, limits: ViewerLimits = DEFAULT_LIMITS
) -> AsyncIterator[None]:
    """Serve `crawler` for as long as the block runs (nothing when `place` is None)."""
    if place is None:
        yield
        return
    async with Monitor(crawler, crawler, place.sock, token=place.token, limits=limits):
        announce(place)
        yield


def run_attach(args: argparse.Namespace) -> int:
    url = args.url
    try:
        source = attach_source(url, args.crawl_id, args.read_only)
    except ValueError as exc:
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 2
    # textual-serve runs this with pipes and a driver of its own that draws in a browser.
    web = "TEXTUAL_DRIVER" in os.environ
    if not web and not (sys.stdin.isatty() and sys.stdout.isatty()):
        print("crawlscope: attach needs a terminal", file=sys.stderr)
        return 2
    app = CrawlScopeApp(source)
    app.run()
    return app.return_code or 0


REDIS_SCHEMES = ("redis://", "rediss://", "unix://")


def attach_source(url: str, crawl_id: str | None, read_only: bool) -> Attached | ClusterAttached:
    """What `attach URL` opens; ValueError with the user's one-line message."""
    if url.startswith(REDIS_SCHEMES):
        if not crawl_id:
            raise ValueError("a Redis URL needs --crawl-id NAME: which crawl to watch")
        return ClusterAttached(url, crawl_id, read_only)
    if not url.startswith(("ws://", "wss://")):
        raise ValueError(f"not a monitor URL (ws://...) nor a Redis URL (redis://...): {url!r}")
    if crawl_id is not None or read_only:
        raise ValueError(
            "--crawl-id and --read-only go with a Redis URL; a monitor URL without "
            "?token= is read-only already"
        )
    return Attached(url)
