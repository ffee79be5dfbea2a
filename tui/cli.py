"""The `crawlscope` command: the TUI by default, a headless crawl, or the demo site."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Callable, Coroutine, Sequence

from crawlscope.engine.config import ConfigError
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.demo_site import DemoServer, serve_forever

from .headless import run_headless
from .options import add_crawl_options, add_demo_options, crawl_config, demo_config


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="crawlscope",
        description="An asyncio web crawler you can watch think. With no command, "
        "crawl the built-in demo site.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    crawl = sub.add_parser("crawl", help="crawl ROOT... headless; the report goes to stdout")
    crawl.add_argument("roots", nargs="+", metavar="ROOT", help="URL to start from")
    add_crawl_options(crawl)
    noise = crawl.add_mutually_exclusive_group()
    noise.add_argument("-v", "--verbose", action="store_true", help="print each fetch on stderr")
    noise.add_argument("-q", "--quiet", action="store_true", help="no progress and no report")

    demo = sub.add_parser("demo-site", help="serve the built-in demo site until interrupted")
    demo.add_argument("--host", default="127.0.0.1", help="address to listen on")
    demo.add_argument("--port", type=int, default=8353, help="port (0: any free port)")
    add_demo_options(demo)

    return parser


def _fail(message: str) -> int:
    print(f"crawlscope: {message}", file=sys.stderr)
    return 2


async def _crawl_demo(args: argparse.Namespace) -> int:
    async with DemoServer(demo_config(args)) as server:
        crawler = Crawler(crawl_config(args, [server.url]))
        return await run_headless(crawler, args.output)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        # No command: the demo, taking any crawl or demo-site options given.
        demo_parser = argparse.ArgumentParser(prog="crawlscope")
        add_crawl_options(demo_parser)
        add_demo_options(demo_parser)
        args = demo_parser.parse_args(argv)
        return _run(lambda: _crawl_demo(args))
    args = build_parser().parse_args(argv)
    if args.command == "demo-site":
        return _demo_site(args)
    return _run(
        lambda: run_headless(
            Crawler(crawl_config(args, args.roots)), args.output, args.verbose, args.quiet
        )
    )


def _run(make: Callable[[], Coroutine[None, None, int]]) -> int:
    """Run the coroutine `make()` builds, turning the user's mistakes into one-line errors."""
    try:
        return asyncio.run(make())
    except (ConfigError, ValueError) as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot write output: {exc}")
    except KeyboardInterrupt:
        print("crawlscope: interrupted", file=sys.stderr)
        return 130


def _demo_site(args: argparse.Namespace) -> int:
    try:
        config = demo_config(args)
    except ValueError as exc:
        return _fail(str(exc))

    def announce(url: str) -> None:
        print(f"crawlscope demo site on {url}  (Ctrl-C stops it)", flush=True)

    try:
        asyncio.run(serve_forever(config, args.host, args.port, announce))
    except OSError as exc:
        return _fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    with contextlib.suppress(BrokenPipeError):
        sys.exit(main())
