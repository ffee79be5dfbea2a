"""`--monitor`: its option, the socket it asks for, and the line that says where it
listens."""

from __future__ import annotations

import argparse
import secrets
import sys
from typing import TextIO

from crawlscope.engine.remote.limits import DEFAULT_LIMITS, ViewerLimits
from crawlscope.engine.remote.spot import MonitorSpot

MonitorPlace = MonitorSpot  # the lecture's name for it


def add_monitor_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--monitor",
        metavar="[HOST:]PORT",
        help="serve the crawl to `crawlscope attach` over a WebSocket on HOST (default "
        "127.0.0.1) and PORT (0: any free one); the `monitor:` line on stderr gives the "
        "URL that can steer, and the same URL without ?token= watches only",
    )


def announce(url: str, err: TextIO | None = None) -> None:
    print(f"monitor: {url}", file=err or sys.stderr, flush=True)


def bind_monitor(address: str | None, limits: ViewerLimits = DEFAULT_LIMITS) -> MonitorSpot | None:
    """The socket `--monitor` asks for, bound now, or None without it; ValueError or
    OSError with a message for the user when it cannot be had."""
    if address is None:
        return None
    from crawlscope.engine.remote.monitor import listen, parse_address

    host, port = parse_address(address)
    try:
        sock = listen(host, port)
    except OSError as exc:
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return MonitorSpot(sock, secrets.token_urlsafe(18), limits)
