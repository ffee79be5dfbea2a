"""`crawlscope serve`'s command line; the serving itself is tui/serve.py and
tui/classroom/, imported only when the command runs. The crawl served is a plan like
`crawl`'s and `tui`'s (crawl_plan.py), with the same options."""

from __future__ import annotations

import argparse
import os
import sys

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.sites.demo_config import DEMO_FOR_THE_EYE
from crawlscope.tui.classroom.limits import (
    MAX_BEHIND_BYTES,
    MAX_BEHIND_SECONDS,
    MAX_VIEWERS,
    SLACK_BYTES,
    TOTAL_BEHIND_BYTES,
)

from .common import fail
from .crawl_plan import (
    add_plan_options,
    crawl_only_refusal,
    looked_before_drawing,
    plan_from_args,
)
from .lecture import LECTURE_MAX_WORKERS, LECTURE_WORKERS
from .options import frames_per_second, human_bytes, terminal_size, whole_number


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser(
        "serve",
        help="one screen, watched by a whole class in their browsers (for a lecture)",
        description="Crawl ROOT... (no ROOT: the built-in demo site), play a recording "
        "with --replay, or give the lecture with --lecture, and serve its screen to "
        "browsers at http://HOST:PORT/. The screen is drawn once, in a terminal of "
        "--size, and mirrored to every browser (which scales its font to fit and never "
        "resizes it); a late joiner sees the screen as it stands. The `serving:` URL is "
        "the class's, read-only, with the count of viewers; the `lecturer:` URL (a "
        "secret path: give it to nobody) sends your keys to the screen; the `monitor:` "
        "URL is for `crawlscope attach`. A crawl starts paused, so the class sees it "
        "start: the lecturer presses p (or give --running). With --redis and --crawl-id "
        "the screen is that whole cluster crawl, which this process joins when given "
        "ROOT... (and only watches when not). Ctrl-C stops it.",
    )
    serve.add_argument("roots", nargs="*", metavar="ROOT", help="URL to start from")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to serve on (default 127.0.0.1: this machine only; "
                       "0.0.0.0 lets the class's laptops in)")  # fmt: skip
    serve.add_argument(
        "--port", type=whole_number(0, 65535), default=8000, help="port (default 8000; 0: any)"
    )
    serve.add_argument("--replay", metavar="FILE", help="play this recording instead of crawling")
    serve.add_argument("--lecture", action="store_true",
                       help="give the lecture (`crawlscope lecture`: the chapter's three "
                       "stages, n steps) instead of crawling")  # fmt: skip
    serve.add_argument(
        "--size",
        type=terminal_size(MIN_SIZE, MAX_SIZE),
        metavar="COLSxROWS",
        help="the screen's size, the same in every browser (default 120x40; with --here, "
        "this terminal's)",
    )
    serve.add_argument(
        "--fps", type=frames_per_second, default=CLASS_FPS, metavar="N",
        help="a crawl's screen refreshes a second, 1 to 30 (default %(default)s, where the "
        "TUI has 15: a class of 300 on one Wi-Fi gets a third of the bytes; a key's effect "
        "is drawn at once whatever this is)",
    )  # fmt: skip
    serve.add_argument(
        "--here", action="store_true",
        help="show the screen in this terminal too and steer it from here, as the "
        "lecturer's page does (every key goes to the screen; q ends the class)",
    )  # fmt: skip
    add_plan_options(serve, demo=DEMO_FOR_THE_EYE)
    _class_limits(serve)
    for group in serve._action_groups:
        if group.title == "how the crawl starts":
            group.add_argument(
                "--running", action="store_true",
                help="start crawling at once; by default a crawl served to a class starts "
                "paused (the lecturer's bar says PAUSED: press p when the class watches)",
            )  # fmt: skip
    for action in serve._actions:
        if action.dest == "paused":
            action.help = "start with the crawl paused: serve's default (see --running)"
    # None: the mode's own number, a crawl's default or the lecture's (which --max-tasks
    # is passed on to when given).
    for action in serve._actions:
        if action.dest == "max_tasks":
            action.default = None
            action.help = (
                f"worker tasks (default {CrawlConfig.max_tasks}; with --lecture, "
                f"{LECTURE_WORKERS}, and at most {LECTURE_MAX_WORKERS})"
            )


def _class_limits(serve: argparse.ArgumentParser) -> None:
    """serve's --max-viewers and --allow-origin bound the class's browsers (and its
    monitor): the same options as a monitor's, with serve's default and words."""
    for group in serve._action_groups:
        if group.title == "viewers of --monitor":
            group.title = "the class's browsers (and the monitor's viewers)"
    for action in serve._actions:
        if action.dest == "max_viewers":
            action.default = MAX_VIEWERS
            action.help = (
                "browsers watching at once (default %(default)s); one more is refused "
                "with 503 and a line saying so. A browser with more than "
                f"{human_bytes(MAX_BEHIND_BYTES)} waiting for it (all together: "
                f"{human_bytes(TOTAL_BEHIND_BYTES)}), or more than "
                f"{human_bytes(SLACK_BYTES)} for over {MAX_BEHIND_SECONDS:g} s on end, is "
                "dropped; the screen never waits for one. The monitor holds as many."
            )
        elif action.dest == "allow_origin":
            action.help = (
                "let web pages from ORIGIN (http://host:port) open the class's socket; a "
                "page from any other origin but the class page's own, or Origin null, "
                "gets 403; repeatable"
            )


MIN_SIZE, MAX_SIZE, DEFAULT_SIZE = (40, 10), (400, 150), (120, 40)
CLASS_FPS = 5.0


def here_size() -> tuple[int, int]:
    """This terminal's size, within the sizes --size takes (DEFAULT_SIZE if there is no
    terminal: --here then says so)."""
    try:
        size = os.get_terminal_size(sys.stdout.fileno())
    except OSError:
        return DEFAULT_SIZE
    cols = min(max(size.columns, MIN_SIZE[0]), MAX_SIZE[0])
    return cols, min(max(size.lines, MIN_SIZE[1]), MAX_SIZE[1])


def main(args: argparse.Namespace) -> int:
    from crawlscope.engine.plan import PlanError
    from crawlscope.engine.remote.monitor import listen
    from crawlscope.engine.trace.load import load_recording
    from crawlscope.engine.trace.replay import ReplayError

    plan = None
    try:
        if args.replay is not None and args.lecture:
            raise PlanError("--replay or --lecture: one screen at a time")
        if args.replay is not None or args.lecture:
            why = "--replay plays a recording" if args.replay is not None else (
                "--lecture gives the lecture")  # fmt: skip
            _refuse_crawl_options(args, why)
            if args.max_tasks is not None and (args.replay is not None or (
                    args.max_tasks > LECTURE_MAX_WORKERS)):  # fmt: skip
                limit = "" if args.replay is not None else f" above {LECTURE_MAX_WORKERS}"
                raise PlanError(f"{why}: --max-tasks{limit} needs a crawl in this process")
            for given, flag in ((args.redis, "--redis"), (args.monitor, "--monitor")):
                if given is not None:
                    raise PlanError(f"{why}: {flag} needs a crawl in this process")
            if args.replay is not None:
                load_recording(args.replay)  # a bad file (of either kind): now, in one line
        elif args.redis is not None and not args.roots:
            if args.crawl_id is None:
                raise PlanError("--redis and --crawl-id go together")
            _refuse_crawl_options(args, "--redis with no ROOT only watches the cluster crawl")
        else:
            if args.max_tasks is None:
                args.max_tasks = CrawlConfig.max_tasks
            if args.running and args.paused:
                raise PlanError("--paused or --running: one start at a time")
            # A class sees its crawl start: paused until the lecturer presses p.
            args.paused = not args.running
            plan = plan_from_args(args, "serve", DEMO_FOR_THE_EYE)
            stop = looked_before_drawing(plan)
            if stop is not None:
                return stop
        sock = listen(args.host, args.port)
    except (PlanError, ReplayError) as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}")
    from crawlscope.tui import serve
    from crawlscope.tui.classroom.limits import ClassLimits
    from crawlscope.tui.classroom.session import ClassSettings

    cols, rows = args.size or (here_size() if args.here else DEFAULT_SIZE)
    if args.here:
        from crawlscope.tui.classroom.terminal import refusal

        cannot = refusal(cols, rows)
        if cannot is not None:
            sock.close()
            return fail(cannot)
    settings = ClassSettings(
        cols, rows, ClassLimits(max_viewers=args.max_viewers),
        frozenset(args.allow_origin), here=args.here, fps=args.fps,
    )  # fmt: skip
    if args.replay is not None:
        return serve.serve_command(sock, ["replay", args.replay], settings)
    if args.lecture:
        workers = [] if args.max_tasks is None else ["--max-tasks", str(args.max_tasks)]
        return serve.serve_command(sock, ["lecture", *workers], settings)
    if args.redis is not None:
        # The screen is the whole cluster crawl; with a plan, this process is in it.
        return serve.serve_cluster(sock, args.redis, args.crawl_id, settings, plan, args.report)
    assert plan is not None
    return serve.serve_crawl(sock, plan, args.report, settings)


def _refuse_crawl_options(args: argparse.Namespace, why: str) -> None:
    from crawlscope.engine.plan import PlanError

    refusal = crawl_only_refusal(args, why)
    if refusal is None and args.running:
        refusal = f"{why}: --running needs a crawl in this process"
    if refusal is not None:
        raise PlanError(refusal)
