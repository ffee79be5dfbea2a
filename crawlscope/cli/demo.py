"""`crawlscope demo-site`: the built-in demo site, served until interrupted."""

from __future__ import annotations

import argparse
import asyncio

from crawlscope.engine.sites.demo_config import DEMO_FOR_THE_EYE, DemoConfig

from .common import fail
from .options import add_demo_options, demo_config


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    demo = sub.add_parser(
        "demo-site",
        help="serve the built-in demo site until interrupted",
        description="Serve the demo site until Ctrl-C, printing its URL first. Its defaults "
        f"are {DemoConfig().pages} pages and no latency; the TUI's own demo site is "
        f"{DEMO_FOR_THE_EYE.pages} pages, slower, for the eye.",
    )
    demo.add_argument("--host", default="127.0.0.1", help="address to listen on")
    demo.add_argument("--port", type=int, default=8353, help="port (0: any free port)")
    add_demo_options(demo)


def main(args: argparse.Namespace) -> int:
    from crawlscope.engine.sites.demo import serve_forever

    try:
        config = demo_config(args)
    except ValueError as exc:
        return fail(str(exc))

    def announce(url: str) -> None:
        print(f"crawlscope demo site on {url}  (Ctrl-C stops it)", flush=True)

    try:
        asyncio.run(serve_forever(config, args.host, args.port, announce))
    except OSError as exc:
        return fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        pass
    return 0
