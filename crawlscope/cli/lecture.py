"""`crawlscope lecture`: the chapter's three stages in turn, on the demo site; recorded
with --record (played by `crawlscope replay`), watched with --monitor (by `attach`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING

from crawlscope.engine.config import CrawlConfig

from .common import app_status, fail, has_terminal, run, summarise
from .monitor import MonitorPlace, bind_monitor
from .options import whole_number

if TYPE_CHECKING:
    from crawlscope.engine.crawler import Crawler
    from crawlscope.engine.lecture.observe import LiveStage
    from crawlscope.engine.lecture.recording import LectureRecorder
    from crawlscope.engine.trace.recording import Recorder

STAGES = ("callbacks", "generators")
LECTURE_WORKERS, LECTURE_MAX_WORKERS = 3, 20  # a stage's workers, by default and at most
ConfigMaker = Callable[[Sequence[str]], CrawlConfig]
StageOpened = Callable[["LiveStage"], None]
CrawlOpened = Callable[["Crawler"], object]
Services = Callable[[], list[AbstractAsyncContextManager[object]]]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    lecture = sub.add_parser(
        "lecture",
        help="walk through the chapter's three stages on the demo site",
        description="The chapter's three stages in turn, each crawling the built-in demo "
        "site: callbacks, then generator coroutines (n steps, ← steps back and from a "
        "stage's first step goes to the stage before, p runs, → next stage), then the "
        "asyncio TUI. --record keeps every step of stages 1 and 2, and stage 3's crawl, for "
        "`crawlscope replay`; --monitor serves all three to `crawlscope attach`, read-only.",
    )
    lecture.add_argument(
        "--max-tasks", type=whole_number(1, LECTURE_MAX_WORKERS), default=LECTURE_WORKERS,
        metavar="N", help=f"workers in every stage (default {LECTURE_WORKERS})",
    )  # fmt: skip
    lecture.add_argument(
        "--record", metavar="FILE",
        help="write every step of stages 1 and 2, and each stage-3 crawl, to FILE (JSON "
        "lines), to play with `crawlscope replay FILE`",
    )  # fmt: skip
    lecture.add_argument(
        "--headless", action="store_true",
        help="with --record: no screen; run the three stages to their end and record them "
        "(no terminal needed: a recording made ahead of the class)",
    )  # fmt: skip
    lecture.add_argument("--steps", type=whole_number(1), metavar="N",
                         help="with --headless: at most N steps in stages 1 and 2")  # fmt: skip
    lecture.add_argument(
        "--monitor", metavar="[HOST:]PORT",
        help="serve the three stages to `crawlscope attach` over a WebSocket on HOST (default "
        "127.0.0.1) and PORT (0: any free one); viewers watch, only your keys act",
    )  # fmt: skip
    lecture.add_argument("--replay", metavar="FILE", help=argparse.SUPPRESS)


def main(args: argparse.Namespace) -> int:
    if args.replay is not None:
        return fail(f"a recorded lecture plays with `crawlscope replay {args.replay}`")
    if args.steps is not None and not args.headless:
        return fail("--steps goes with --headless")
    if args.headless and not args.record:
        return fail("--headless needs --record FILE: the steps go there")
    if args.headless and args.monitor:
        return fail("--monitor needs the screen: a headless lecture runs to its end at once")
    if not args.headless and not has_terminal():
        return fail("the lecture needs a terminal (--headless --record FILE needs none)")
    try:
        place = bind_monitor(args.monitor)
    except (OSError, ValueError) as exc:
        return fail(str(exc))
    recorder = None
    if args.record:
        from crawlscope.engine.lecture.recording import LectureRecorder

        try:
            recorder = LectureRecorder(args.record)
        except OSError as exc:
            return fail(f"cannot write the recording {args.record}: {exc.strerror or exc}")
        if recorder.failure:  # its first line could not be written (a full disk)
            return fail(recorder.failure)
    try:
        if args.headless:
            kept = recorder
            assert kept is not None  # --headless needs --record, checked above
            code = run(lambda: _headless(args, kept))
        else:
            code = _on_screen(args, recorder, place)
    finally:
        if place is not None:
            place.sock.close()
        if recorder is not None:
            recorder.close()
    if recorder is not None and recorder.failure:
        print(f"crawlscope: {recorder.failure}", file=sys.stderr)
        return 1
    if recorder is not None:
        from crawlscope.engine.observe.text import printable

        # Where it went, and how to play it: a lecturer looks for it after the class.
        print(f"crawlscope: the lecture is recorded in {printable(recorder.path, 300)} "
              f"({recorder.steps} steps, {recorder.runs} stage-3 crawls); play it with "
              f"`crawlscope replay {printable(recorder.path, 300)}`", file=sys.stderr)  # fmt: skip
    return code


def _config(args: argparse.Namespace) -> ConfigMaker:
    def config(roots: Sequence[str]) -> CrawlConfig:
        return CrawlConfig(roots=tuple(roots), max_tasks=args.max_tasks)

    return config


async def _headless(args: argparse.Namespace, recorder: LectureRecorder) -> int:
    from crawlscope.engine.crawler import Crawler
    from crawlscope.engine.lecture.live import Stage, drive
    from crawlscope.engine.lecture.stages import create
    from crawlscope.engine.sites.demo import DemoServer
    from crawlscope.engine.sites.demo_config import LECTURE_DEMO

    config = _config(args)
    async with DemoServer(LECTURE_DEMO) as demo:
        for engine in STAGES:
            stage = Stage(engine, config([demo.url]))
            recorder.follow(stage)
            await drive(stage, args.steps or 0)
            snap = stage.snapshot()
            print(f"stage {engine}: {snap.steps} steps recorded, "
                  f"{snap.accounting.line()}", file=sys.stderr)  # fmt: skip
            if snap.error:
                return fail(f"the {engine} stage failed: {snap.error}")
        # Stage 3, the chapter's asyncio crawler, as `crawl --engine asyncio` makes it.
        crawler = create("asyncio", config([demo.url]))
        assert isinstance(crawler, Crawler)
        run = recorder.follow_crawl(crawler)
        try:
            await crawler.crawl()
        finally:
            run.close()
        print(f"stage asyncio: {crawler.accounting().line()}", file=sys.stderr)
    return 0


def _on_screen(
    args: argparse.Namespace, recorder: LectureRecorder | None, place: MonitorPlace | None
) -> int:
    from crawlscope.tui.lecture.app import ASYNCIO_INTRO, LectureApp
    from crawlscope.tui.lecture.stage3 import AsyncioStage, LectureCrawl

    config = _config(args)
    opened: list[StageOpened] = [] if recorder is None else [recorder.follow]
    runs: list[Recorder] = []  # stage 3's crawls, recorded
    crawl_opened: list[CrawlOpened] = []
    if recorder is not None:
        crawl_opened.append(lambda crawler: runs.append(recorder.follow_crawl(crawler)))
    serve = _serving(place, opened, crawl_opened)
    greeting = _monitor_words(place)
    start = resume = 0
    while True:
        lecture = LectureApp(
            STAGES,
            make_config=config,
            walk=True,
            start=start,
            resume=resume,
            opened=opened,
            services=serve(),
            greeting=greeting,
        )
        went = lecture.run()
        # Where stage 2 was left: coming back from stage 3, it runs on to that step.
        resume = lecture.last_stage.steps if lecture.last_stage is not None else 0
        if went != "next":
            if lecture.error:
                print(f"crawlscope: {lecture.error}", file=sys.stderr)
                return 1
            return app_status(lecture)
        # Stage 3: the main TUI, in slow motion, so the states can be followed as before.
        live = LectureCrawl(make_config=config, slowmo=0.25, opened=crawl_opened)
        app = AsyncioStage(live, greeting=ASYNCIO_INTRO, services=serve())
        try:
            app.run()
        finally:
            for run in runs:
                run.close()  # its end line; the crawl has stopped with the app
            runs.clear()
        if app.error:
            print(f"crawlscope: {app.error}", file=sys.stderr)
            return 1
        if not app.went_back or app.crawl_error:
            break
        start = len(STAGES) - 1  # ←: stage 2 again, run on to the step it was left at
    summarise(live.crawler, None, sys.stdout)
    return 1 if app.crawl_error else app_status(app)


def _serving(
    place: MonitorPlace | None, opened: list[StageOpened], crawl_opened: list[CrawlOpened]
) -> Services:
    """What each run of the lecture's app, and of stage 3's, serves: with --monitor, a
    lecture monitor on the socket bound at the start (a copy each run, so the port stays
    the lecture's), showing the stage or the crawl each app opens."""
    if place is None:
        return list
    from crawlscope.engine.remote.lecture_monitor import LectureMonitor, StageRelay

    relay = StageRelay()
    opened.append(relay.follow)
    crawl_opened.append(relay.follow_crawl)

    def services() -> list[AbstractAsyncContextManager[object]]:
        relay.clear()  # what the app before showed is gone with it
        return [LectureMonitor(relay, place.sock.dup(), token=place.token)]

    return services


def _monitor_words(place: MonitorPlace | None) -> str:
    if place is None:
        return ""
    from crawlscope.engine.remote.lecture_monitor import LECTURE_PATH
    from crawlscope.engine.remote.monitor import socket_url

    url = socket_url(place.sock, None, LECTURE_PATH)
    print(f"monitor: {url}", file=sys.stderr, flush=True)
    return f"The lecture is served to `crawlscope attach {url}` (read-only)."
