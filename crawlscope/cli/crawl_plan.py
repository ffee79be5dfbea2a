"""The options that describe a crawl, and the one function that turns them into the
engine's CrawlPlan (engine/plan.py). `crawl`, `tui` and `serve` take the same options
from here, so each means the same in all three; where a command cannot take one,
`plan_from_args` refuses it in the same words whichever command it was given to.

Building the parsers imports neither the crawler nor aiohttp: the plan is made only
once a command runs."""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

from crawlscope.engine.cluster.defaults import DEFAULT_LEASE, DEFAULT_PATIENCE
from crawlscope.engine.cluster.scripts import MAX_LEASE_MS
from crawlscope.engine.config import ConfigError
from crawlscope.engine.records import STDOUT
from crawlscope.engine.remote.limits import MAX_VIEWERS
from crawlscope.engine.sites.demo_config import DemoConfig
from crawlscope.engine.trace.flight import FlightOptions

from .attach import REDIS_PASSWORD_ENV, with_password
from .monitor import add_monitor_option, bind_monitor
from .options import (
    add_crawl_options,
    add_demo_options,
    add_viewer_options,
    crawl_config,
    demo_config,
    seconds,
    viewer_limits,
    whole_number,
)

if TYPE_CHECKING:
    from crawlscope.engine.plan import CrawlPlan
    from crawlscope.engine.remote.spot import MonitorSpot

# Where a command that serves its crawl to browsers puts its monitor without --monitor.
SERVE_MONITOR = "127.0.0.1:0"
# The options a lecture engine (--engine callbacks|generators) cannot take, by the
# name argparse stores them under, and the flag the user typed.
NEEDS_ASYNCIO = {
    "record": "--record", "monitor": "--monitor", "state": "--state", "redis": "--redis",
    "sitemaps": "--sitemaps", "slowmo": "--slowmo", "paused": "--paused",
}  # fmt: skip
LECTURE_CAN = {
    "record": "crawlscope lecture --record FILE",
    "monitor": "crawlscope lecture --monitor PORT",
}
# The options a crawl over processes (--procs) cannot take: each is one process's.
PROCS_CANNOT = {
    "state": "--state", "record": "--record", "monitor": "--monitor", "paused": "--paused",
    "slowmo": "--slowmo",
}  # fmt: skip
# The options that only a crawl in this process can take.
CRAWL_ONLY = {
    "roots": "ROOT", "output": "--output", "report": "--report", "record": "--record",
    "state": "--state", "paused": "--paused", "slowmo": "--slowmo", "sitemaps": "--sitemaps",
    "fresh": "--fresh",
}  # fmt: skip


def add_plan_options(parser: argparse.ArgumentParser, demo: DemoConfig | None = None) -> None:
    """Every option of a crawl plan; with `demo`, the demo site's too (for a command
    that crawls it when given no ROOT), with those defaults."""
    add_crawl_options(parser)
    parser.add_argument(
        "--record", metavar="FILE",
        help="write the crawl's event trace (every state change) to FILE as JSON Lines, "
        "for `crawlscope replay FILE`; the asyncio engine only",
    )  # fmt: skip
    _add_flight_options(parser)
    add_monitor_option(parser)
    add_viewer_options(parser)
    start = parser.add_argument_group("how the crawl starts")
    start.add_argument(
        "--paused", action="store_true",
        help="start with the crawl paused (a headless crawl needs --monitor, whose "
        "viewers can resume it)",
    )  # fmt: skip
    start.add_argument(
        "--slowmo", type=seconds, default=0.0, metavar="S",
        help="linger S seconds at each state change, for a class to follow (the TUI's s "
        "key cycles 0, 0.25, 0.5, 1)",
    )  # fmt: skip
    _add_frontier_options(parser)
    if demo is not None:
        group = parser.add_argument_group("the demo site (when no ROOT is given)")
        add_demo_options(group, defaults=demo)


def _add_flight_options(parser: argparse.ArgumentParser) -> None:
    from crawlscope.engine.trace.flight import DEFAULT_KEEP, DEFAULT_MB, DEFAULT_SECONDS

    flight = parser.add_argument_group(
        "the flight recorder (always on: the recent past, for rewind, the timeline and waterfalls)"
    )
    flight.add_argument(
        "--flight-seconds", type=_flight_seconds, default=DEFAULT_SECONDS, metavar="S",
        help="keep the last S seconds of the crawl's events in memory (default "
        "%(default)g, or --flight-mb, whichever is reached first)",
    )  # fmt: skip
    flight.add_argument(
        "--flight-mb", type=whole_number(1, 65_536), default=DEFAULT_MB, metavar="MB",
        help="keep at most MB megabytes of events in memory (default %(default)s)",
    )  # fmt: skip
    flight.add_argument(
        "--flight-dir", metavar="DIR",
        help="where the last minute is saved when a warning fires (loop blocked, a worker "
        "stuck, a retry storm) or on the TUI's F key, for `crawlscope replay` (default "
        "$XDG_CACHE_HOME/crawlscope/flights, or ~/.cache/crawlscope/flights)",
    )  # fmt: skip
    flight.add_argument(
        "--flight-keep", type=whole_number(0, 10_000), default=DEFAULT_KEEP, metavar="N",
        help="keep the newest N saved flights in that folder, removing older ones "
        "(default %(default)s)",
    )  # fmt: skip


def _flight_seconds(text: str) -> float:
    value = seconds(text)
    if not 1 <= value <= 86_400:
        raise argparse.ArgumentTypeError(f"{text!r} is not 1 to 86400 seconds")
    return value


def _add_frontier_options(parser: argparse.ArgumentParser) -> None:
    cluster = parser.add_argument_group("where the frontier is kept")
    cluster.add_argument(
        "--state", metavar="FILE",
        help="keep the crawl's frontier in this SQLite file: run the same command after a "
        "crash or a kill and it goes on where it was (nothing done is fetched again); "
        "one process at a time",
    )  # fmt: skip
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
        "--procs", type=_procs_count, default=0, metavar="N",
        help="crawl over N processes of this machine (auto: one per core; 0, the "
        "default: this process alone), on a Redis "
        "started for the crawl and stopped with it (or on --redis); one report, one set "
        "of outputs; the limits (--max-pages, --per-host, ...) are the whole crawl's",
    )  # fmt: skip
    cluster.add_argument(
        "--fresh", action="store_true",
        help="with --redis: forget what Redis holds of this --crawl-id and start it over",
    )  # fmt: skip


def _procs_count(text: str) -> int:
    from .procs import procs_count

    return procs_count(text)


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


def lecture_refusal(args: argparse.Namespace) -> str | None:
    """For a lecture engine: the line refusing the first option it cannot take, if any."""
    for dest, flag in NEEDS_ASYNCIO.items():
        if getattr(args, dest, None):
            if dest in LECTURE_CAN:
                # The lecture records and serves its stages step by step, not as a crawl.
                instead = LECTURE_CAN[dest]
                return f"{flag} needs the asyncio engine; for the lecture's stages: {instead}"
            return f"{flag} needs the asyncio engine (the lecture engines cannot take it)"
    return None


def plan_from_args(
    args: argparse.Namespace,
    command: str,
    demo_defaults: DemoConfig = DemoConfig(),  # noqa: B008
) -> CrawlPlan:
    """The crawl `command` (crawl, tui or serve) was asked for; PlanError (one line) if
    the options cannot make one. `demo_defaults` are the demo options' defaults in this
    command. Nothing is opened but the monitor's socket, bound last so its URL can be
    said before the crawl starts."""
    from crawlscope.engine.plan import (
        STAND_IN_ROOT,
        CrawlPlan,
        PlanError,
        SharedFrontier,
        check_writable,
    )

    if STDOUT in args.output and command != "crawl":
        raise PlanError("-o - would write over what this command shows on stdout: give a file name")
    if (args.redis is None) != (args.crawl_id is None):
        raise PlanError("--redis and --crawl-id go together")
    if args.fresh and not args.redis:
        raise PlanError("--fresh goes with --redis: it forgets a crawl kept in Redis")
    if args.redis and not args.roots:
        raise PlanError("--redis needs a ROOT: the demo site is this process's alone")
    procs = getattr(args, "procs", 0)
    if procs and command == "serve":
        raise PlanError("--procs is for crawl and tui; serve a cluster with --redis")
    for dest, flag in PROCS_CANNOT.items():
        if procs and getattr(args, dest, None):
            raise PlanError(f"{flag} is for a crawl in one process, not with --procs")
    for flag, given, needs in _tuning(args, command):
        if given:
            raise PlanError(f"{flag} goes with {needs}: without it, it would tune nothing")
    if args.paused and command == "crawl" and not args.monitor:
        raise PlanError("--paused needs --monitor here: without a screen only a viewer resumes")
    try:
        config = crawl_config(args, args.roots or [STAND_IN_ROOT])
        demo = demo_config(args) if hasattr(args, "pages") else DemoConfig()
    except (ConfigError, ValueError) as exc:
        raise PlanError(str(exc)) from None
    if args.roots and demo != demo_defaults:
        raise PlanError(
            "the demo site's options (--pages, --latency, ...) go with no ROOT: "
            "the demo site is served only when no ROOT is given"
        )
    plan = CrawlPlan(
        config, crawl_demo=not args.roots, demo=demo, state=args.state,
        shared=SharedFrontier(args.redis, args.crawl_id, args.lease, args.redis_patience,
                              args.fresh) if args.redis else None,
        outputs=tuple(args.output), feed_format=args.feed_format, record=args.record,
        paused=args.paused, slowmo=args.slowmo,
        flight=FlightOptions(args.flight_seconds, args.flight_mb, args.flight_dir,
                             args.flight_keep),
    )  # fmt: skip
    plan.check()
    if args.report:  # written when the crawl ends: a path that cannot be is said now
        check_writable(args.report, "the report")
    plan.monitor = monitor_spot(args, command)
    return plan


def looked_before_drawing(plan: CrawlPlan) -> int | None:
    """For a command that draws (tui, serve): a shared crawl's Redis looked at before the
    screen or the pages open. The exit status if the command should end here (its
    one line said), else None."""
    import asyncio
    import sys

    from crawlscope.engine.plan import CrawlEnded, PlanError

    try:
        asyncio.run(plan.look())
    except CrawlEnded as exc:
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 0
    except PlanError as exc:
        print(f"crawlscope: {exc}", file=sys.stderr)
        return 2
    return None


def _tuning(args: argparse.Namespace, command: str) -> list[tuple[str, bool, str]]:
    """(option, whether it was set, the option it tunes) for the options that only tune
    another; serve always has a monitor."""
    procs = getattr(args, "procs", 0)
    return [
        ("--max-viewers", args.max_viewers != MAX_VIEWERS and command != "serve"
         and not args.monitor, "--monitor"),
        ("--allow-origin", bool(args.allow_origin) and command != "serve"
         and not args.monitor, "--monitor"),
        ("--lease", args.lease != DEFAULT_LEASE and not args.redis and not procs,
         "--redis"),
        ("--redis-patience", args.redis_patience != DEFAULT_PATIENCE and not args.redis
         and not procs, "--redis"),
    ]  # fmt: skip


def crawl_only_refusal(args: argparse.Namespace, why: str) -> str | None:
    """Where nothing is crawled in this process (a replay, a cluster only watched): the
    line refusing the first option that only a crawl here could take, if any."""
    for dest, flag in CRAWL_ONLY.items():
        if getattr(args, dest, None):
            return f"{why}: {flag} needs a crawl in this process"
    return None


def monitor_spot(args: argparse.Namespace, command: str) -> MonitorSpot | None:
    """The socket --monitor asks for, bound now (serve has one always); PlanError if it
    cannot be had. None for a screenshot, which nobody watches."""
    from crawlscope.engine.plan import PlanError

    address = args.monitor or (SERVE_MONITOR if command == "serve" else None)
    if getattr(args, "screenshot", None):
        return None
    try:
        return bind_monitor(address, viewer_limits(args))
    except (ValueError, OSError) as exc:
        raise PlanError(f"--monitor: {exc}") from None
