"""`crawlscope why URL FILE`: what became of one URL of a recorded crawl, and how the crawl
came to it (engine/trace/why.py), on one screen of text; exit 1 if the crawl never saw it."""

from __future__ import annotations

import argparse

from .common import crawl_recording, fail


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    why = sub.add_parser(
        "why",
        help="why a URL of a recorded crawl was (or was not) fetched",
        description="For one URL of a crawl's recording (--record) or a saved flight: its "
        "status, or why it was not fetched (out of scope, robots.txt and the rule that "
        "refused it, an --exclude pattern, --max-depth, --max-pages); the discovery path "
        "back to a root; the redirects that led to it; the worker, its tries and their "
        "error; and where its time went. Or, from a crawl's --state file: whether it "
        "was done, failed, left alone or is still queued, and its discovery path. Exit "
        "status 1 when the crawl never saw the URL (the nearest it saw are listed).",
    )
    why.add_argument("url", metavar="URL", help="the URL, as the crawl saw it or as typed")
    why.add_argument(
        "file", metavar="FILE", help="a crawl's recording, a saved flight or a --state file"
    )


def main(args: argparse.Namespace) -> int:
    from crawlscope.engine.cluster.sqlite_state import StateError
    from crawlscope.engine.cluster.state_books import StateBooks, is_state_file
    from crawlscope.engine.trace.why import why

    if is_state_file(args.file):
        try:
            books = StateBooks(args.file)
        except StateError as exc:
            return fail(str(exc))
        try:
            answer = why(args.url, (), books=books)
        finally:
            books.close()
        print("\n".join(answer.lines))
        return 0 if answer.found else 1
    recording = crawl_recording(args.file, "why")
    if isinstance(recording, int):
        return recording
    config = recording.config
    answer = why(args.url, recording.events, config.max_depth, config.max_pages)
    print("\n".join(answer.lines))
    return 0 if answer.found else 1
