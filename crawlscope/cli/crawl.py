"""`crawlscope crawl`: a crawl with no screen, by the asyncio engine or a lecture engine;
and the headless crawl of the demo site that `crawlscope` runs without a terminal."""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter

from crawlscope.engine.cluster.defaults import DEFAULT_LEASE, DEFAULT_PATIENCE
from crawlscope.engine.cluster.scripts import MAX_LEASE_MS
from crawlscope.engine.config import ConfigError, CrawlConfig
from crawlscope.engine.lecture.names import ENGINES

from .attach import REDIS_PASSWORD_ENV, with_password
from .common import fail, run
from .monitor import add_monitor_option, bind_monitor, monitoring
from .options import (
    add_crawl_options,
    add_record_option,
    add_state_option,
    add_viewer_options,
    crawl_config,
    demo_config,
    seconds,
    viewer_limits,
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    crawl = sub.add_parser(
        "crawl",
        help="crawl ROOT... headless; the report goes to stdout",
        description="Crawl ROOT... with no screen: a progress line on stderr while it runs "
        "(in a terminal), the report on stdout at the end, a record per fetch in each "
        "--output. A ROOT without a scheme (example.com) is taken as https://example.com/. "
        "Ctrl-C stops it gracefully, with the report.",
    )
    crawl.add_argument("roots", nargs="+", metavar="ROOT", help="URL to start from")
    add_crawl_options(crawl)
    crawl.add_argument(
        "--engine",
        choices=ENGINES,
        default="asyncio",
        help="which of the chapter's stages crawls: callbacks (stage 1), generators "
        "(stage 2) or asyncio (stage 3, the default); the report is the same",
    )
    add_record_option(crawl)
    add_monitor_option(crawl)
    add_viewer_options(crawl)
    add_cluster_options(crawl)
    noise = crawl.add_mutually_exclusive_group()
    noise.add_argument("-v", "--verbose", action="store_true", help="print each fetch on stderr")
    noise.add_argument("-q", "--quiet", action="store_true", help="no progress and no report")


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    cluster = parser.add_argument_group("one crawl over many processes")
    cluster.add_argument(
        "--redis", metavar="URL", type=_redis_url,
        help="share the crawl's frontier in this Redis (redis://HOST:PORT/DB) with every "
        "process run with the same --crawl-id; each ends when the whole crawl is done; "
        f"its password is best kept in ${REDIS_PASSWORD_ENV}, not on a command line",
    )  # fmt: skip
    cluster.add_argument("--crawl-id", metavar="NAME", help="which crawl to start or join")
    cluster.add_argument(
        "--lease", type=_lease_seconds, default=DEFAULT_LEASE, metavar="S",
        help="seconds before a URL held by a process that died goes back on the queue "
        "(default %(default)s; renewed while the fetch runs)",
    )  # fmt: skip
    cluster.add_argument(
        "--redis-patience", type=seconds, default=DEFAULT_PATIENCE, metavar="S",
        help="seconds to wait for a Redis that went away mid-crawl before this process "
        "stops, losing nothing (default %(default)s); a wrong address or password is an "
        "error at once",
    )  # fmt: skip
    cluster.add_argument(
        "--fresh", action="store_true",
        help="with --redis: forget what Redis holds of this --crawl-id and start it over",
    )  # fmt: skip
    add_state_option(cluster)


def _lease_seconds(text: str) -> float:
    value = seconds(text)
    if not 1 <= value <= MAX_LEASE_MS / 1000:
        raise argparse.ArgumentTypeError(
            f"must be from 1 second to {MAX_LEASE_MS // 1000} (a day), not {text}"
        )
    return value


def _redis_url(text: str) -> str:
    from redis.connection import parse_url as parse_redis_url

    try:
        if not text.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("it starts with neither redis://, rediss:// nor unix://")
        parse_redis_url(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"not a Redis URL (redis://HOST:PORT/DB): {text!r}: {exc}"
        ) from None
    # Every user of the machine can read a command line: a URL without a password takes
    # the one in the environment, as `attach` and `serve` do.
    password = os.environ.get(REDIS_PASSWORD_ENV)
    return with_password(text, password) if password else text


async def crawl_demo(args: argparse.Namespace) -> int:
    from crawlscope.engine.crawler import Crawler
    from crawlscope.engine.sites.demo import DemoServer

    from .headless import run_headless

    async with DemoServer(demo_config(args)) as server:
        crawler = Crawler(crawl_config(args, [server.url]))
        return await run_headless(
            crawler, args.output, feed_format=args.feed_format, report=args.report
        )


def main(args: argparse.Namespace) -> int:
    """`crawlscope crawl`: the asyncio engine on this loop, or a lecture engine blocking."""
    from crawlscope.engine.cluster.lookup import before_crawling
    from crawlscope.engine.cluster.node import redis_crawler
    from crawlscope.engine.cluster.problems import RedisProblem
    from crawlscope.engine.cluster.sqlite_state import StateError, check_state_file, keep_state
    from crawlscope.engine.crawler import Crawler
    from crawlscope.engine.feeds import check_formats

    from .headless import run_headless

    try:
        config = crawl_config(args, args.roots)
        check_formats(args.output, args.feed_format)
    except (ConfigError, ValueError) as exc:
        return fail(str(exc))
    if args.engine != "asyncio":
        if args.record:
            # A recording is the asyncio crawler's state changes; the lecture engines
            # have no such listeners (their loop is watched step by step instead).
            return fail("--record needs the asyncio engine (the lecture engines cannot record)")
        if args.sitemaps:
            return fail("--sitemaps needs the asyncio engine")
        if args.monitor:
            return fail("--monitor needs the asyncio engine")
        if args.redis or args.state:
            return fail("--redis and --state need the asyncio engine")
        return _crawl_blocking(args, config)

    if (args.redis is None) != (args.crawl_id is None):
        return fail("--redis and --crawl-id go together")
    if args.redis and args.state:
        return fail("--state keeps a crawl of one process; with --redis, Redis keeps it")
    if args.fresh and not args.redis:
        return fail("--fresh goes with --redis: it forgets a crawl kept in Redis")
    if args.state:
        try:
            check_state_file(args.state)
        except StateError as exc:
            return fail(str(exc))
    try:
        place = bind_monitor(args.monitor)
    except (ValueError, OSError) as exc:
        return fail(f"--monitor: {exc}")

    async def crawl() -> int:
        if args.redis is not None:
            # One look first: a Redis that cannot be used, or a crawl that has ended, is
            # one line now, not a crawl that waits for ever or crawls nothing.
            try:
                ended = await before_crawling(
                    args.redis, args.crawl_id, config.root_urls, args.fresh
                )
            except RedisProblem as exc:
                return fail(str(exc))
            if ended is not None:
                print(f"crawlscope: {ended}", file=sys.stderr)
                return 0
        crawler = (
            Crawler(config)
            if args.redis is None
            else redis_crawler(config, args.redis, args.crawl_id, args.lease, args.redis_patience)
        )
        if args.state:
            try:
                keep_state(crawler, args.state)
            except StateError as exc:  # another process took it since it was checked
                return fail(str(exc))
        async with monitoring(crawler, place, viewer_limits(args)):
            return await run_headless(
                crawler, args.output, args.verbose, args.quiet, record=args.record,
                feed_format=args.feed_format, report=args.report,
            )  # fmt: skip

    return run(crawl)


def _crawl_blocking(args: argparse.Namespace, config: CrawlConfig) -> int:
    """A lecture engine's crawl: blocking, with the same report and JSON Lines."""
    from crawlscope.engine.crawler import Crawler
    from crawlscope.engine.feeds import open_feed
    from crawlscope.engine.lecture.stages import create
    from crawlscope.engine.records import OutputError
    from crawlscope.engine.report import url_line, write_report

    from .headless import EXIT_CLOSED_PIPE, closed_pipe, exit_status, save_report

    crawler = create(args.engine, config)
    assert not isinstance(crawler, Crawler), "the asyncio engine runs in main"

    def stop_soon(_exc: Exception) -> None:
        # As the asyncio crawler does: a failed listener stops the crawl; from its own
        # loop, since the middle of the fetch whose record was being kept is no place.
        crawler.loop.call_soon(crawler.stop)

    crawler.ledger.on_fault = stop_soon
    writers = []
    try:
        report_file = open(args.report, "w", encoding="utf-8") if args.report else None  # noqa: SIM115
        for path in args.output:
            writers.append(open_feed(path, args.feed_format))
    except OSError as exc:
        for writer in writers:
            writer.close()
        return fail(f"cannot write output: {exc}")
    for writer in writers:
        crawler.ledger.record_listeners.append(writer)
        crawler.ledger.filtered_listeners.append(writer)  # one line per URL seen
    out = sys.stderr if "-" in args.output else sys.stdout  # the records have stdout
    if args.verbose:
        crawler.ledger.record_listeners.append(
            lambda r: print(url_line(r, Counter()), file=sys.stderr)
        )
    try:
        crawler.run()
    except KeyboardInterrupt:
        print("crawlscope: interrupted", file=sys.stderr)
        return 130
    finally:
        for writer in writers:
            try:
                writer.close()
            except OutputError as exc:
                crawler.ledger.report_fault(exc)
    if closed_pipe(crawler):  # type: ignore[arg-type]
        return EXIT_CLOSED_PIPE
    if report_file is not None:
        save_report(crawler, report_file, None if args.quiet else out)
    elif not args.quiet:
        write_report(crawler, out)
    return exit_status(crawler, None, sys.stderr)  # type: ignore[arg-type]
