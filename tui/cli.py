"""The `crawlscope` command: the TUI by default, a headless crawl, or the demo site."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
from collections import Counter
from collections.abc import Callable, Coroutine, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import shtab
from redis.connection import parse_url as parse_redis_url
from textual.app import App

from crawlscope.engine.cluster.lookup import before_crawling
from crawlscope.engine.cluster.node import redis_crawler
from crawlscope.engine.cluster.problems import RedisProblem
from crawlscope.engine.cluster.redis_frontier import DEFAULT_LEASE, DEFAULT_PATIENCE
from crawlscope.engine.cluster.scripts import MAX_LEASE_MS
from crawlscope.engine.cluster.sqlite_state import StateError, check_state_file, keep_state
from crawlscope.engine.config import ConfigError, CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.feeds import check_formats, open_feed
from crawlscope.engine.lecture.stages import ENGINES, create
from crawlscope.engine.records import STDOUT, OutputError
from crawlscope.engine.report import Crawl, url_line, write_report, write_totals
from crawlscope.engine.sites.demo import DemoConfig, DemoServer, serve_forever
from crawlscope.engine.text import printable
from crawlscope.engine.trace.replay import ReplayedCrawl, ReplayError

from .app import CrawlScopeApp
from .headless import EXIT_CLOSED_PIPE, closed_pipe, exit_status, run_headless, save_report
from .lecture.app import ASYNCIO_INTRO, LECTURE_DEMO, LectureApp
from .lecture.stage3 import AsyncioStage
from .options import (
    ConfigFileError,
    OneLineErrors,
    add_config_option,
    add_crawl_options,
    add_demo_options,
    add_viewer_options,
    crawl_config,
    demo_config,
    parse_command_line,
    seconds,
    subcommands,
    take_roots,
    viewer_limits,
    whole_number,
)
from .remote_cli import (
    REDIS_PASSWORD_ENV,
    MonitorPlace,
    add_attach_command,
    add_monitor_option,
    bind_monitor,
    monitoring,
    run_attach,
    with_password,
)
from .remote_cli import announce as announce_monitor
from .screens.panels import FRAMES_PER_SECOND
from .screenshots import shoot_app, take_screenshot
from .serve import add_serve_command, run_serve
from .startup import DEMO_FOR_THE_EYE, LiveCrawl, Recording

NO_TERMINAL = (
    "crawlscope: no terminal, so no TUI: running a headless crawl of the demo site instead "
    "(crawlscope crawl URL for your own)"
)


def build_parser() -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = OneLineErrors(  # its subcommands are of its class
        prog="crawlscope",
        description="An asyncio web crawler you can watch think. With no command, "
        "open the live TUI on the built-in demo site.",
    )
    parser.add_argument("--version", action="version", version=f"crawlscope {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    tui = sub.add_parser(
        "tui",
        help="watch a crawl of ROOT... live (no ROOT: the built-in demo site)",
        description="The live TUI. With no ROOT it crawls the built-in demo site, served "
        "in-process; the demo options tune that site. When you quit, the report's totals "
        "are printed (--report FILE keeps the whole report).",
    )
    add_tui_arguments(tui)
    add_monitor_option(tui)
    add_viewer_options(tui)
    tui.add_argument(
        "--engine",
        choices=ENGINES,
        default="asyncio",
        help="callbacks or generators: the lecture screen for that stage, in step mode "
        "(n runs one loop callback, p runs freely); asyncio (default): the live TUI, "
        "whose step mode is slow motion (s)",
    )
    tui.add_argument(
        "--running",
        action="store_true",
        help="with a lecture engine: start running instead of frozen in step mode",
    )

    lecture = sub.add_parser(
        "lecture",
        help="walk through the chapter's three stages on the demo site",
        description="The chapter's three stages in turn, each crawling the built-in demo "
        "site: callbacks, then generator coroutines (n steps, ← steps back and from a "
        "stage's first step goes to the stage before, p runs, → next stage), then the "
        "asyncio TUI.",
    )
    lecture.add_argument("--max-tasks", type=whole_number(1, 20), default=3, metavar="N",
                         help="workers in every stage (default 3)")  # fmt: skip

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

    replay = sub.add_parser(
        "replay",
        help="play a recorded crawl (from --record) in the TUI; no server needed",
        description="Play a recording in the TUI. Keys: p or space play/pause, . and , "
        "(or right and left) step one event, ] and [ change the speed (0.25x to 8x), "
        "pgdn/pgup jump 10%, home/end go to the start or the end.",
    )
    replay.add_argument("file", metavar="FILE", help="a recording written by --record")
    replay.add_argument("--paused", action="store_true", help="open paused at the start")

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

    add_attach_command(sub)
    add_serve_command(sub)

    completion = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description="Print the completion script for SHELL; the README says where it goes.",
    )
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), metavar="SHELL")

    for command in subcommands(parser).values():
        add_config_option(command)
    return parser


def completion_script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The shell's completion script for every command and option, by shtab."""
    for command in [parser, *subcommands(parser).values()]:
        for action in command._actions:
            if action.metavar in ("FILE", "PATH"):  # complete them as file names
                action.complete = shtab.FILE  # type: ignore[attr-defined]
    return shtab.complete(parser, shell=shell)


def version() -> str:
    try:
        return metadata.version("crawlscope")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


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


def add_state_option(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--state", metavar="FILE",
        help="keep the crawl's frontier in this SQLite file: run the same command after a "
        "crash or a kill and it goes on where it was (nothing done is fetched again); "
        "one process at a time",
    )  # fmt: skip


def _lease_seconds(text: str) -> float:
    value = seconds(text)
    if not 1 <= value <= MAX_LEASE_MS / 1000:
        raise argparse.ArgumentTypeError(
            f"must be from 1 second to {MAX_LEASE_MS // 1000} (a day), not {text}"
        )
    return value


def _redis_url(text: str) -> str:
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


def add_record_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--record",
        metavar="FILE",
        help="write the crawl's event trace (every state change) to FILE as JSON Lines, "
        "for `crawlscope replay FILE`; the asyncio engine only",
    )


def add_tui_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("roots", nargs="*", metavar="ROOT", help="URL to start from")
    add_crawl_options(parser)
    add_record_option(parser)
    add_state_option(parser)
    demo = parser.add_argument_group("the demo site (when no ROOT is given)")
    # The demo site a person watches is bigger and slower than the one benchmarks hammer.
    add_demo_options(demo, defaults=DEMO_FOR_THE_EYE)
    ui = parser.add_argument_group("the screen")
    ui.add_argument("--paused", action="store_true", help="start with the crawl paused")
    ui.add_argument(
        "--slowmo",
        type=seconds,
        default=0.0,
        metavar="S",
        help="linger S seconds at each state change (the s key cycles 0, 0.25, 0.5, 1)",
    )
    ui.add_argument(
        "--fps",
        type=_fps,
        default=FRAMES_PER_SECOND,
        metavar="N",
        help=f"screen refreshes a second, 1 to 30 (default {FRAMES_PER_SECOND:g}); "
        "fewer leave more of the loop to the crawl",
    )
    ui.add_argument(
        "--screenshot",
        metavar="PATH",
        help="no terminal: run headless, save an SVG screenshot to PATH, and quit",
    )
    ui.add_argument(
        "--screenshot-after",
        type=seconds,
        default=3.0,
        metavar="S",
        help="seconds of crawling before the screenshot (default 3)",
    )
    ui.add_argument(
        "--size",
        type=_size,
        default=(120, 40),
        metavar="WxH",
        help="terminal size for --screenshot (default 120x40)",
    )


def _fps(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 1 <= value <= 30:
        raise argparse.ArgumentTypeError(f"must be from 1 to 30, not {text}")
    return value


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size like 120x40: {text!r}") from None
    if width < 20 or height < 8:
        raise argparse.ArgumentTypeError(f"too small: {text}")
    return width, height


def _fail(message: str) -> int:
    print(f"crawlscope: {message}", file=sys.stderr)
    return 2


async def _crawl_demo(args: argparse.Namespace) -> int:
    async with DemoServer(demo_config(args)) as server:
        crawler = Crawler(crawl_config(args, [server.url]))
        return await run_headless(
            crawler, args.output, feed_format=args.feed_format, report=args.report
        )


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
    except BrokenPipeError:
        code = EXIT_CLOSED_PIPE
    if code == EXIT_CLOSED_PIPE:
        _drop_stdio()
    return code


def _drop_stdio() -> None:
    """A reader of stdout or stderr went away: what is left for them goes nowhere, so the
    interpreter's last flush at exit cannot complain about the closed pipe either."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        # No command: the TUI on the demo site, taking any crawl or demo options given.
        # Without a terminal to draw on (a pipe, CI), the same demo crawl runs headless.
        if (sys.stdin.isatty() and sys.stdout.isatty()) or "--screenshot" in argv:
            argv = ["tui", *argv]
        else:
            demo_parser = OneLineErrors(prog="crawlscope", help_command="crawlscope tui")
            add_crawl_options(demo_parser)
            add_demo_options(demo_parser)
            add_config_option(demo_parser)
            try:
                args = parse_command_line(demo_parser, argv)
            except ConfigFileError as exc:
                return _fail(str(exc))
            # Said first: a user who typed `crawlscope` in CI or into a pipe expected a
            # screen, and should learn at once why a report comes instead.
            print(NO_TERMINAL, file=sys.stderr, flush=True)
            return _run(lambda: _crawl_demo(args))
    parser = build_parser()
    try:
        args = parse_command_line(parser, argv)
    except ConfigFileError as exc:
        return _fail(str(exc))
    if hasattr(args, "roots"):
        args.roots = take_roots(args.roots, sys.stderr)
    if args.command == "completion":
        print(completion_script(parser, args.shell), end="")
        return 0
    if args.command == "tui":
        return _tui(args)
    if args.command == "demo-site":
        return _demo_site(args)
    if args.command == "lecture":
        return _lecture(args)
    if args.command == "replay":
        return _replay(args)
    if args.command == "attach":
        return run_attach(args)
    if args.command == "serve":
        return run_serve(args)
    return _crawl(args)


def _crawl(args: argparse.Namespace) -> int:
    """`crawlscope crawl`: the asyncio engine on this loop, or a lecture engine blocking."""
    try:
        config = crawl_config(args, args.roots)
        check_formats(args.output, args.feed_format)
    except (ConfigError, ValueError) as exc:
        return _fail(str(exc))
    if args.engine != "asyncio":
        if args.record:
            # A recording is the asyncio crawler's state changes; the lecture engines
            # have no such listeners (their loop is watched step by step instead).
            return _fail("--record needs the asyncio engine (the lecture engines cannot record)")
        if args.sitemaps:
            return _fail("--sitemaps needs the asyncio engine")
        if args.monitor:
            return _fail("--monitor needs the asyncio engine")
        if args.redis or args.state:
            return _fail("--redis and --state need the asyncio engine")
        return _crawl_blocking(args, config)

    if (args.redis is None) != (args.crawl_id is None):
        return _fail("--redis and --crawl-id go together")
    if args.redis and args.state:
        return _fail("--state keeps a crawl of one process; with --redis, Redis keeps it")
    if args.fresh and not args.redis:
        return _fail("--fresh goes with --redis: it forgets a crawl kept in Redis")
    if args.state:
        try:
            check_state_file(args.state)
        except StateError as exc:
            return _fail(str(exc))
    try:
        place = bind_monitor(args.monitor)
    except (ValueError, OSError) as exc:
        return _fail(f"--monitor: {exc}")

    async def crawl() -> int:
        if args.redis is not None:
            # One look first: a Redis that cannot be used, or a crawl that has ended, is
            # one line now, not a crawl that waits for ever or crawls nothing.
            try:
                ended = await before_crawling(
                    args.redis, args.crawl_id, config.root_urls, args.fresh
                )
            except RedisProblem as exc:
                return _fail(str(exc))
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
                return _fail(str(exc))
        async with monitoring(crawler, place, viewer_limits(args)):
            return await run_headless(
                crawler, args.output, args.verbose, args.quiet, record=args.record,
                feed_format=args.feed_format, report=args.report,
            )  # fmt: skip

    return _run(crawl)


def _crawl_blocking(args: argparse.Namespace, config: CrawlConfig) -> int:
    """A lecture engine's crawl: blocking, with the same report and JSON Lines."""
    crawler = create(args.engine, config)
    assert not isinstance(crawler, Crawler), "the asyncio engine runs in _crawl"

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
        return _fail(f"cannot write output: {exc}")
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


def _run(make: Callable[[], Coroutine[None, None, int]]) -> int:
    """Run the coroutine `make()` builds, turning the user's mistakes into one-line errors."""
    try:
        return asyncio.run(make())
    except (ConfigError, ValueError) as exc:
        return _fail(str(exc))
    except BrokenPipeError:
        return EXIT_CLOSED_PIPE  # the report's reader went away (`| head`)
    except OSError as exc:
        return _fail(f"cannot write output: {exc}")
    except KeyboardInterrupt:
        print("crawlscope: interrupted", file=sys.stderr)
        return 130


def _tui(args: argparse.Namespace) -> int:
    """Open the TUI; after it closes, print the report (unless it only took a screenshot)."""
    if args.engine != "asyncio":
        return _stage(args)
    try:
        # Checked here, so a bad option is a one-line error before the screen opens.
        crawl_config(args, args.roots or ["http://127.0.0.1/"])
        demo = demo_config(args)
    except (ConfigError, ValueError) as exc:
        return _fail(str(exc))
    if args.state:
        try:
            check_state_file(args.state)
        except StateError as exc:
            return _fail(str(exc))
    if STDOUT in args.output:
        return _fail("-o - would write over the TUI's screen: give a file name")
    try:
        check_formats(args.output, args.feed_format)
        feeds = [open_feed(path, args.feed_format) for path in args.output]
    except (ValueError, OSError) as exc:
        return _fail(f"--output: {exc}")
    place: MonitorPlace | None = None
    if args.monitor and not args.screenshot:
        try:
            place = bind_monitor(args.monitor)
        except (ValueError, OSError) as exc:
            return _fail(f"--monitor: {exc}")
    live = LiveCrawl(
        tuple(args.roots),
        make_config=lambda roots: crawl_config(args, list(roots)),
        demo=demo,
        paused=args.paused,
        slowmo=args.slowmo,
        record=args.record,
        state=args.state,
        feeds=feeds,
        monitor_socket=place.sock if place else None,
        monitor_token=place.token if place else None,
        monitor_limits=viewer_limits(args),
    )
    app = CrawlScopeApp(live, fps=args.fps)
    if args.screenshot:
        try:
            saved = take_screenshot(app, args.screenshot, args.screenshot_after, args.size)
        except OSError as exc:
            return _fail(f"cannot write the screenshot: {exc}")
        print(f"crawlscope: screenshot saved to {saved}", file=sys.stderr)
        return 0
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _fail("the TUI needs a terminal; for a crawl without one use `crawlscope crawl`")
    try:
        report_file = _open_report(args.report)
    except OSError as exc:
        return _fail(f"cannot write the report: {exc}")
    if place is not None:
        announce_monitor(place)  # before the screen takes the terminal, so it stays readable
    result = app.run()
    summarise(live.crawler, report_file, sys.stdout)
    if app.crawl_error:
        print(f"crawlscope: the crawl failed: {app.crawl_error}", file=sys.stderr)
        return 1
    for root, why in app.unreachable:  # as `crawlscope crawl` says it
        print(f"crawlscope: cannot reach {printable(root)}: {printable(why)}", file=sys.stderr)
    return _app_status(app, result)


def _open_report(path: str | None) -> TextIO | None:
    """The --report file, opened before the screen is: a path that cannot be written is
    said at once, not after the crawl."""
    return open(path, "w", encoding="utf-8") if path else None


def summarise(crawler: Crawl | None, report_file: TextIO | None, out: TextIO) -> None:
    """After a screen closes: the report's totals and accounting line on `out`, the whole
    report in `report_file` if there is one. The whole report of a TUI's crawl runs to
    a thousand lines, too many for a terminal the screen just gave back."""
    if crawler is None or getattr(crawler, "t0", None) is None:  # it never started
        if report_file is not None:
            report_file.close()
        return
    if report_file is not None:
        save_report(crawler, report_file, out)
    else:
        write_totals(crawler, out)
        print("For the whole report, run it with --report FILE", file=out)


def _app_status(app: App[Any], result: object = None) -> int:
    """The exit status of an app back from run(). After an unhandled exception Textual
    prints the traceback and returns no result, with return_code 1: never a success."""
    if app.return_code:
        return app.return_code
    return result if isinstance(result, int) else 0


def _stage(args: argparse.Namespace) -> int:
    """A lecture engine's screen (`tui --engine callbacks|generators`)."""
    if args.record:
        return _fail("--record needs the asyncio engine (the lecture engines cannot record)")
    try:
        crawl_config(args, args.roots or ["http://127.0.0.1/"])
        demo = demo_config(args)
    except (ConfigError, ValueError) as exc:
        return _fail(str(exc))
    if not args.screenshot and not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _fail("the TUI needs a terminal; for a crawl without one use `crawlscope crawl`")
    try:
        report_file = None if args.screenshot else _open_report(args.report)
    except OSError as exc:
        return _fail(f"cannot write the report: {exc}")
    # The demo options' defaults are the live TUI's big slow site; a lecture stage keeps
    # its own small one unless the user tuned it.
    defaults = demo_config(build_parser().parse_args(["tui"]))
    app = LectureApp(
        [args.engine],
        args.roots,
        make_config=lambda roots: crawl_config(args, list(roots)),
        demo=LECTURE_DEMO if demo == defaults else demo,
        stepping=not (args.running or args.screenshot),
    )
    if args.screenshot:
        # Running, not frozen: a screenshot after S seconds should show S seconds of crawl.
        try:
            saved = shoot_app(
                app, Path(args.screenshot), args.size, lambda p: p.pause(args.screenshot_after)
            )
        except OSError as exc:
            return _fail(f"cannot write the screenshot: {exc}")
        print(f"crawlscope: screenshot saved to {saved}", file=sys.stderr)
        return 0
    app.run()
    if app.error:
        print(f"crawlscope: {app.error}", file=sys.stderr)
        return 1
    stage = app.last_stage
    # As the live TUI does: the crawl as far as it went.
    summarise(stage.crawler if stage is not None else None, report_file, sys.stdout)
    if stage is not None and stage.error:
        print(f"crawlscope: the crawl failed: {stage.error}", file=sys.stderr)
        return 1
    return _app_status(app)


def _lecture(args: argparse.Namespace) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _fail("the lecture needs a terminal")

    def config(roots: Sequence[str]) -> CrawlConfig:
        return CrawlConfig(roots=tuple(roots), max_tasks=args.max_tasks)

    stages = ("callbacks", "generators")
    start = 0
    while True:
        lecture = LectureApp(stages, make_config=config, walk=True, start=start)
        if lecture.run() != "next":
            return 1 if lecture.error else _app_status(lecture)
        # Stage 3: the main TUI, in slow motion, so the states can be followed as before.
        live = LiveCrawl(make_config=config, slowmo=0.25)
        app = AsyncioStage(live, greeting=ASYNCIO_INTRO)
        app.run()
        if not app.went_back or app.crawl_error:
            break
        start = len(stages) - 1  # ←: stage 2 again, a fresh crawl as every stage starts
    summarise(live.crawler, None, sys.stdout)
    return 1 if app.crawl_error else _app_status(app)


def _replay(args: argparse.Namespace) -> int:
    try:
        replay = ReplayedCrawl.load(args.file)
    except ReplayError as exc:
        return _fail(str(exc))
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        return _fail("the replay needs a terminal")
    app = CrawlScopeApp(Recording(replay, Path(args.file).name, paused=args.paused))
    return _app_status(app, app.run())


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
