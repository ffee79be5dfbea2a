"""`--monitor`: its option, and the line that says where it listens (the socket itself is
bound with the rest of the crawl's plan, crawl_plan.py)."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO


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
