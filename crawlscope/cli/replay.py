"""`crawlscope replay FILE`: a recording played in the TUI, a crawl's (`--record` on crawl
or tui) or a lecture's (`lecture --record`), each on its own screen."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import app_status, fail, has_terminal


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    replay = sub.add_parser(
        "replay",
        help="play a recorded crawl or lecture (from --record) in the TUI; no server needed",
        description="Play a recording in the TUI. Keys: p or space play/pause, . and , "
        "(or right and left) step one event, ] and [ change the speed (0.25x to 8x), "
        "pgdn/pgup jump 10%, home/end go to the start or the end.",
    )
    replay.add_argument("file", metavar="FILE", help="a recording written by --record")
    replay.add_argument("--paused", action="store_true", help="open paused at the start")


def main(args: argparse.Namespace) -> int:
    from crawlscope.engine.trace.load import load_recording
    from crawlscope.engine.trace.replay import ReplayError

    try:
        recording = load_recording(args.file)
    except ReplayError as exc:
        return fail(str(exc))
    if not has_terminal():
        return fail("the replay needs a terminal")
    from crawlscope.engine.trace.replay import ReplayedCrawl

    if not isinstance(recording, ReplayedCrawl):
        from crawlscope.tui.lecture.stage_replay import LectureReplayApp

        lecture = LectureReplayApp(recording, paused=args.paused)
        return app_status(lecture, lecture.run())
    from crawlscope.tui.app import CrawlScopeApp
    from crawlscope.tui.startup import Recording

    app = CrawlScopeApp(Recording(recording, Path(args.file).name, paused=args.paused))
    return app_status(app, app.run())
