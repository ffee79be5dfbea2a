"""A crawl with no UI: a progress line on stderr, the report on stdout."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections import Counter
from typing import TextIO

from crawlscope.engine.crawler import Crawler
from crawlscope.engine.records import JsonlWriter
from crawlscope.engine.report import url_line, write_report
from crawlscope.engine.text import printable


def progress_line(crawler: Crawler) -> str:
    a = crawler.accounting()
    rate = (a.done + a.failed) / crawler.elapsed if crawler.elapsed else 0.0
    busy = sum(1 for w in crawler.workers.values() if w.url is not None)
    live = sum(1 for w in crawler.workers.values() if w.alive)
    return (
        f"{crawler.elapsed:7.1f}s  {a.done} done  {a.failed} failed  {a.queued} queued"
        f"  {busy}/{live} busy  {rate:.0f} pages/s"
    )


async def _show_progress(crawler: Crawler, err: TextIO, every: float = 0.25) -> None:
    width = 0
    try:
        while True:
            await asyncio.sleep(every)
            line = progress_line(crawler)
            width = max(width, len(line))
            err.write("\r" + line.ljust(width))
            err.flush()
    finally:
        err.write("\r" + " " * width + "\r")
        err.flush()


def unreachable_roots(crawler: Crawler) -> list[tuple[str, str]]:
    """(root, why) for each root, when no root could be reached at all (else empty)."""
    roots = crawler.config.root_urls
    if any(root in crawler.done for root in roots):
        return []
    reasons = []
    for root in roots:
        if root in crawler.failed:
            reasons.append((root, crawler.failed[root].exception or "no response"))
        elif "unreachable" in crawler.filtered.get(root, ""):
            reasons.append((root, crawler.filtered[root]))
    return reasons if len(reasons) == len(roots) else []


async def run_headless(
    crawler: Crawler,
    output: str | None = None,
    verbose: bool = False,
    quiet: bool = False,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
) -> int:
    """Crawl, print the report; the exit status: 0 when the crawl ran to its end."""
    writer = JsonlWriter(output) if output else None
    if writer is not None:
        crawler.record_listeners.append(writer)
    if verbose:
        # url_line tallies categories as it goes; a verbose line has no use for the tally.
        crawler.record_listeners.append(lambda r: print(url_line(r, Counter()), file=err))
    progress = None
    if not quiet and not verbose and err.isatty():
        progress = asyncio.create_task(_show_progress(crawler, err))
    try:
        await crawler.crawl()
    finally:
        if progress is not None:
            progress.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await progress
        if writer is not None:
            writer.close()
    if not quiet:
        write_report(crawler, out)
    failures = unreachable_roots(crawler)
    for root, why in failures:
        print(f"crawlscope: cannot reach {printable(root)}: {printable(why)}", file=err)
    return 1 if failures else 0
