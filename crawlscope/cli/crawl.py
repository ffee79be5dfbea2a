"""`crawlscope crawl`: a crawl with no screen, by the asyncio engine or a lecture engine;
and the headless crawl of the demo site that `crawlscope` runs without a terminal."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import TYPE_CHECKING

from crawlscope.engine.config import ConfigError, CrawlConfig
from crawlscope.engine.lecture.names import ENGINES
from crawlscope.engine.records import STDOUT

from .common import fail, run
from .crawl_plan import add_plan_options, lecture_refusal, plan_from_args
from .monitor import announce
from .options import crawl_config

if TYPE_CHECKING:
    from crawlscope.engine.plan import CrawlPlan


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    crawl = sub.add_parser(
        "crawl",
        help="crawl ROOT... headless; the report goes to stdout",
        description="Crawl ROOT... with no screen: a progress line on stderr while it runs "
        "(in a terminal), the report on stdout at the end, a record per fetch in each "
        "--output. A ROOT without a scheme (example.com) is taken as https://example.com/. "
        "Ctrl-C stops it gracefully, with the report.",
    )
    crawl.add_argument(
        "roots", nargs="*", metavar="ROOT",
        help="URL to start from (with --procs and no ROOT: the demo site)",
    )  # fmt: skip
    add_plan_options(crawl)
    crawl.add_argument(
        "--engine",
        choices=ENGINES,
        default="asyncio",
        help="which of the chapter's stages crawls: callbacks (stage 1), generators "
        "(stage 2) or asyncio (stage 3, the default); the report is the same",
    )
    noise = crawl.add_mutually_exclusive_group()
    noise.add_argument("-v", "--verbose", action="store_true", help="print each fetch on stderr")
    noise.add_argument("-q", "--quiet", action="store_true", help="no progress and no report")


async def crawl_demo(args: argparse.Namespace) -> int:
    """`crawlscope` with no terminal: the demo site crawled headless, with the options
    given (they are a plan's, as `crawl`'s are)."""
    from crawlscope.engine.plan import PlanError

    args.roots, args.verbose, args.quiet = [], False, False
    try:
        plan = plan_from_args(args, "crawl")
    except PlanError as exc:
        return fail(str(exc))
    if args.procs:
        from .procs import crawl_procs

        return await crawl_procs(plan, args)
    return await _crawl(plan, args)


def main(args: argparse.Namespace) -> int:
    """`crawlscope crawl`: the asyncio engine on this loop, or a lecture engine blocking."""
    from crawlscope.engine.exchange.feeds import check_formats
    from crawlscope.engine.plan import PlanError

    if not args.roots and not args.procs:
        # As argparse says it of any missing argument, with where the demo site is.
        print(
            "crawlscope crawl: error: the following arguments are required: ROOT "
            "(without one only --procs crawls the demo site) (see crawlscope crawl --help)",
            file=sys.stderr,
        )
        return 2
    if args.engine != "asyncio":
        if args.procs:
            return fail("--procs needs the asyncio engine")
        refusal = lecture_refusal(args)
        if refusal is not None:
            return fail(refusal)
        try:
            config = crawl_config(args, args.roots)
            check_formats(args.output, args.feed_format)
        except (ConfigError, ValueError) as exc:
            return fail(str(exc))
        return _crawl_blocking(args, config)
    try:
        plan = plan_from_args(args, "crawl")
    except PlanError as exc:
        return fail(str(exc))
    if args.procs:
        from .procs import crawl_procs

        return run(lambda: crawl_procs(plan, args))
    return run(lambda: _crawl(plan, args))


async def _crawl(plan: CrawlPlan, args: argparse.Namespace) -> int:
    from crawlscope.engine.plan import CrawlEnded, PlanError

    from .headless import run_headless

    # The records have stdout (-o -): the report goes to stderr.
    out = sys.stderr if STDOUT in args.output else sys.stdout
    try:
        async with plan.open() as crawl:
            if crawl.monitor is not None:
                announce(crawl.monitor.url)
            return await run_headless(crawl, args.verbose, args.quiet, out=out, report=args.report)
    except CrawlEnded as exc:  # run again after the shared crawl finished: nothing to do
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 0
    except PlanError as exc:
        return fail(str(exc))


def _crawl_blocking(args: argparse.Namespace, config: CrawlConfig) -> int:
    """A lecture engine's crawl: blocking, with the same report and JSON Lines."""
    from crawlscope.engine.crawler import Crawler
    from crawlscope.engine.exchange.feeds import open_feed
    from crawlscope.engine.lecture.stages import create
    from crawlscope.engine.records import OutputError
    from crawlscope.engine.report import url_line, write_report

    from .common import save_report
    from .headless import EXIT_CLOSED_PIPE, closed_pipe, exit_status

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
