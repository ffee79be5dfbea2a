"""`crawlscope lecture`: the chapter's three stages in turn, on the demo site."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from crawlscope.engine.config import CrawlConfig

from .common import app_status, fail, has_terminal, summarise
from .options import whole_number


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def main(args: argparse.Namespace) -> int:
    if not has_terminal():
        return fail("the lecture needs a terminal")
    from crawlscope.tui.lecture.app import ASYNCIO_INTRO, LectureApp
    from crawlscope.tui.lecture.stage3 import AsyncioStage
    from crawlscope.tui.startup import LiveCrawl

    def config(roots: Sequence[str]) -> CrawlConfig:
        return CrawlConfig(roots=tuple(roots), max_tasks=args.max_tasks)

    stages = ("callbacks", "generators")
    start = 0
    while True:
        lecture = LectureApp(stages, make_config=config, walk=True, start=start)
        if lecture.run() != "next":
            return 1 if lecture.error else app_status(lecture)
        # Stage 3: the main TUI, in slow motion, so the states can be followed as before.
        live = LiveCrawl(make_config=config, slowmo=0.25)
        app = AsyncioStage(live, greeting=ASYNCIO_INTRO)
        app.run()
        if not app.went_back or app.crawl_error:
            break
        start = len(stages) - 1  # ←: stage 2 again, a fresh crawl as every stage starts
    summarise(live.crawler, None, sys.stdout)
    return 1 if app.crawl_error else app_status(app)
