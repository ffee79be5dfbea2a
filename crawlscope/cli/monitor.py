"""`--monitor` on crawl and tui: where the monitor listens, said before the crawl starts."""

from __future__ import annotations

import argparse
import contextlib
import secrets
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

from crawlscope.engine.remote.limits import DEFAULT_LIMITS, ViewerLimits

if TYPE_CHECKING:
    from crawlscope.engine.crawler import Crawler


def add_monitor_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--monitor",
        metavar="[HOST:]PORT",
        help="serve the crawl to `crawlscope attach` over a WebSocket on HOST (default "
        "127.0.0.1) and PORT (0: any free one); the `monitor:` line on stderr gives the "
        "URL that can steer, and the same URL without ?token= watches only",
    )


@dataclass
class MonitorPlace:
    """Where a monitor will listen, bound before anything starts, and its token."""

    sock: socket.socket
    token: str

    @property
    def url(self) -> str:
        from crawlscope.engine.remote.monitor import socket_url

        return socket_url(self.sock, self.token)


def bind_monitor(address: str | None) -> MonitorPlace | None:
    """The socket `--monitor` asks for, or None without it; ValueError or OSError with a
    message for the user when it cannot be had."""
    if address is None:
        return None
    from crawlscope.engine.remote.monitor import listen, parse_address

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
    from crawlscope.engine.remote.monitor import Monitor

    async with Monitor(crawler, crawler, place.sock, token=place.token, limits=limits):
        announce(place)
        yield
