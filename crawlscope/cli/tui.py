"""`crawlscope tui`: a crawl watched live, or a lecture engine's stage screen. Textual is
imported only once the screen is about to open."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crawlscope.engine.config import ConfigError
from crawlscope.engine.lecture.names import ENGINES
from crawlscope.engine.observe.text import printable
from crawlscope.engine.sites.demo_config import DEMO_FOR_THE_EYE
from crawlscope.tui.frame_budget import FRAMES_PER_SECOND

from .common import app_status, fail, has_terminal, open_report, summarise
from .crawl_plan import add_plan_options, lecture_refusal, looked_before_drawing, plan_from_args
from .monitor import announce
from .options import crawl_config, demo_config, frames_per_second, seconds, terminal_size


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    tui = sub.add_parser(
        "tui",
        help="watch a crawl of ROOT... live (no ROOT: the built-in demo site)",
        description="The live TUI. With no ROOT it crawls the built-in demo site, served "
        "in-process; the demo options tune that site. When you quit, the report's totals "
        "are printed (--report FILE keeps the whole report).",
    )
    add_tui_arguments(tui)
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


def add_tui_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("roots", nargs="*", metavar="ROOT", help="URL to start from")
    # The demo site a person watches is bigger and slower than the one benchmarks hammer.
    add_plan_options(parser, demo=DEMO_FOR_THE_EYE)
    ui = parser.add_argument_group("the screen")
    ui.add_argument(
        "--fps",
        type=frames_per_second,
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
        type=terminal_size((20, 8), (1000, 500)),
        default=(120, 40),
        metavar="WxH",
        help="terminal size for --screenshot (default 120x40)",
    )


def main(args: argparse.Namespace) -> int:
    """Open the TUI; after it closes, print the report (unless it only took a screenshot)."""
    if args.engine != "asyncio":
        return _stage(args)
    from crawlscope.engine.plan import PlanError

    try:
        # Made here, so a bad option is a one-line error before the screen opens.
        plan = plan_from_args(args, "tui", DEMO_FOR_THE_EYE)
    except PlanError as exc:
        return fail(str(exc))
    if not args.screenshot and not has_terminal():
        return fail("the TUI needs a terminal; for a crawl without one use `crawlscope crawl`")
    if args.procs:
        from .procs import tui_procs

        return tui_procs(plan, args)
    stop = looked_before_drawing(plan)
    if stop is not None:
        return stop
    from crawlscope.tui.app import CrawlScopeApp
    from crawlscope.tui.screenshot_run import take_screenshot
    from crawlscope.tui.startup import LiveCrawl

    live = LiveCrawl(tuple(args.roots), plan=plan)
    app = CrawlScopeApp(live, fps=args.fps)
    if args.screenshot:
        try:
            saved = take_screenshot(app, args.screenshot, args.screenshot_after, args.size)
        except OSError as exc:
            return fail(f"cannot write the screenshot: {exc}")
        print(f"crawlscope: screenshot saved to {saved}", file=sys.stderr)
        return 0
    try:
        report_file = open_report(args.report)
    except OSError as exc:
        return fail(f"cannot write the report: {exc}")
    if plan.monitor is not None:
        announce(plan.monitor.url)  # before the screen takes the terminal, so it stays readable
    result = app.run()
    summarise(live.crawler, report_file, sys.stdout)
    if app.crawl_error:
        print(f"crawlscope: the crawl failed: {app.crawl_error}", file=sys.stderr)
        return 1
    for root, why in app.unreachable:  # as `crawlscope crawl` says it
        print(f"crawlscope: cannot reach {printable(root)}: {printable(why)}", file=sys.stderr)
    return app_status(app, result)


def _stage(args: argparse.Namespace) -> int:
    """A lecture engine's screen (`tui --engine callbacks|generators`)."""
    refusal = lecture_refusal(args)
    if refusal is not None:
        return fail(refusal)
    if args.output:
        # The stage screens keep no listeners for records; `crawl --engine` writes them.
        return fail(
            "--output with a lecture engine is for `crawl` only: the stage screens write no records"
        )
    try:
        crawl_config(args, args.roots or ["http://127.0.0.1/"])
        demo = demo_config(args)
    except (ConfigError, ValueError) as exc:
        return fail(str(exc))
    if not args.screenshot and not has_terminal():
        return fail("the TUI needs a terminal; for a crawl without one use `crawlscope crawl`")
    try:
        report_file = None if args.screenshot else open_report(args.report)
    except OSError as exc:
        return fail(f"cannot write the report: {exc}")
    from crawlscope.tui.lecture.app import LECTURE_DEMO, LectureApp
    from crawlscope.tui.screenshot_run import shoot_app

    # The demo options' defaults are the live TUI's big slow site; a lecture stage keeps
    # its own small one unless the user tuned it. Read from this command's own options,
    # not the whole command line's parser, which imports this module.
    own_options = argparse.ArgumentParser(add_help=False)
    add_tui_arguments(own_options)
    defaults = demo_config(own_options.parse_args([]))
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
            return fail(f"cannot write the screenshot: {exc}")
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
    return app_status(app)
