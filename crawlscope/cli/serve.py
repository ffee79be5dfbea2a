"""`crawlscope serve`'s command line; the serving itself (textual-serve) is tui/serve.py,
imported only when the command runs."""

from __future__ import annotations

import argparse

from .options import add_crawl_options


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser(
        "serve",
        help="one crawl, watched in any number of browsers (for a lecture)",
        description="Crawl ROOT... (no ROOT: the built-in demo site), or play a recording "
        "with --replay, and serve the TUI to browsers at http://HOST:PORT/: every browser "
        "watches this one crawl. The `serving:` URL is read-only, for the class; the "
        "`lecturer:` URL steers; the `monitor:` URL is for `crawlscope attach`. "
        "Ctrl-C stops it.",
    )
    serve.add_argument("roots", nargs="*", metavar="ROOT", help="URL to start from")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to serve on (default 127.0.0.1: this machine only; "
                       "0.0.0.0 lets the class's laptops in)")  # fmt: skip
    serve.add_argument("--port", type=_port, default=8000, help="port (default 8000; 0: any)")
    serve.add_argument("--replay", metavar="FILE", help="play this recording instead of crawling")
    serve.add_argument("--paused", action="store_true", help="start with the crawl paused")
    serve.add_argument(
        "--redis", metavar="URL",
        help="crawl nothing here: show the cluster crawl --crawl-id in this Redis "
        "(redis://HOST:PORT/DB), run by `crawlscope crawl --redis`; its password is "
        "best kept in $CRAWLSCOPE_REDIS_PASSWORD (a command line is readable by every "
        "user of the machine), and never reaches a tab's command line",
    )  # fmt: skip
    serve.add_argument("--crawl-id", metavar="NAME", help="with --redis: which crawl")
    add_crawl_options(serve)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"must be from 0 to 65535, not {port}")
    return port


def main(args: argparse.Namespace) -> int:
    from crawlscope.tui.serve import run_serve

    return run_serve(args)
