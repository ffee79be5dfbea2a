"""A crawl with no UI: a progress line on stderr, the report on stdout."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING, Any, TextIO

from crawlscope.engine.observe.text import printable
from crawlscope.engine.politeness import crawl_delay_note
from crawlscope.engine.records import OutputError, describe_fault
from crawlscope.engine.report import (
    unreachable_roots,
    url_line,
    write_report,
)
from crawlscope.tui.heap import settled_heap

from .common import EXIT_CLOSED_PIPE, save_report

if TYPE_CHECKING:
    from crawlscope.engine.crawler import Crawler
    from crawlscope.engine.plan import OpenCrawl

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
SIGNAL_WORDS: dict[int, str] = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


def progress_line(crawler: Crawler) -> str:
    a = crawler.accounting()
    rate = (a.done + a.failed) / crawler.elapsed if crawler.elapsed else 0.0
    busy = sum(1 for w in crawler.workers.values() if w.url is not None)
    live = sum(1 for w in crawler.workers.values() if w.alive)
    delay = crawl_delay_note(crawler)
    trouble = frontier_trouble(crawler)
    return (
        f"{crawler.elapsed:7.1f}s  {a.done} done  {a.failed} failed  {a.queued} queued"
        f"  {busy}/{live} busy  {rate:.0f} pages/s"
        + (f"  {delay}" if delay else "")
        + (f"  {trouble}" if trouble else "")
    )


def frontier_trouble(crawler: Crawler) -> str:
    """Why a shared frontier cannot be reached now, in a few words ("" if it can)."""
    why = getattr(crawler.q, "unreachable", None)
    if not why:
        return ""
    patience = getattr(crawler.q, "patience", None)
    within = f" for up to {patience:g} s (--redis-patience)" if patience is not None else ""
    return f"Redis unreachable ({printable(why)}), retrying{within}"


async def _watch_frontier(crawler: Crawler, err: TextIO, every: float = 0.25) -> None:
    """A line on stderr each time a shared frontier is lost or found again (where no
    progress line shows it)."""
    said = ""
    while True:
        await asyncio.sleep(every)
        trouble = frontier_trouble(crawler)
        if trouble != said:
            print(f"crawlscope: {trouble or 'Redis reachable again'}", file=err, flush=True)
            said = trouble


async def _show_progress(
    crawler: Any, err: TextIO, every: float = 0.25, says: Callable[[Any], str] = progress_line
) -> None:
    """`says(crawler)` redrawn in place on `err` every `every` seconds, until cancelled."""
    width = 0
    try:
        while True:
            await asyncio.sleep(every)
            # A line wider than the terminal wraps, and "\r" then redraws only its last row.
            line = says(crawler)[: shutil.get_terminal_size().columns - 1]
            width = max(width, len(line))
            err.write("\r" + line.ljust(width))
            err.flush()
    finally:
        err.write("\r" + " " * width + "\r")
        err.flush()


class StopOnSignals:
    """SIGINT and SIGTERM stop the crawl gracefully; a second one exits at once.

    Python-level handlers, not the loop's: they run between any two bytecodes, so the
    second signal acts even while the loop is stuck (a write to a pipe nobody reads, a
    long report). Once a signal came the quick exit stays armed to the process's end;
    otherwise the previous handlers come back on leaving. Off the main thread (where
    handlers cannot be set) it does nothing.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.received: int | None = None  # the first signal's number
        self._previous: dict[int, object] = {}
        self._loop: asyncio.AbstractEventLoop | None = None

    def __enter__(self) -> StopOnSignals:
        if threading.current_thread() is threading.main_thread():
            self._loop = asyncio.get_running_loop()
            for sig in STOP_SIGNALS:
                self._previous[sig] = signal.signal(sig, self._first)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.received is None:
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)  # type: ignore[arg-type]

    def _first(self, signum: int, _frame: FrameType | None) -> None:
        self.received = signum
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._again)
        # Only the loop may touch the crawl; this may run in the middle of the loop's code.
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing to stop
                self._loop.call_soon_threadsafe(self.crawler.stop)

    @staticmethod
    def _again(signum: int, _frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):  # stderr may be a closed pipe too
            os.write(2, b"\ncrawlscope: quitting at once\n")
        os._exit(128 + signum)


def closed_pipe(crawler: Crawler) -> bool:
    """Whether a reader of an output went away (`| head`): an end to take quietly."""
    return any(
        isinstance(f, BrokenPipeError) or (isinstance(f, OutputError) and f.closed_pipe)
        for f in crawler.ledger.faults
    )


async def run_headless(
    crawl: OpenCrawl,
    verbose: bool = False,
    quiet: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
    report: str | None = None,
) -> int:
    """Crawl an opened plan to the end or to a stop, then print the report; the exit
    status.

    0: the crawl ran to its end (failed pages included). 1: no root could be reached, or
    an output failed (the crawl stops, and says which file and why). 130 / 143:
    SIGINT / SIGTERM stopped it (what finished is in the outputs and the report).
    EXIT_CLOSED_PIPE: a reader of an output went away; the process ends quietly.

    With `report`, the whole report goes to that file and `out` (stdout) gets the totals
    and where the report went; `err` is stderr unless given.
    """
    # Looked up now, not when this module was imported: a test may have swapped them since.
    out, err = out or sys.stdout, err or sys.stderr
    crawler = crawl.crawler
    # Opened now, so a path that cannot be written fails before the crawl, not after it.
    report_file = open(report, "w", encoding="utf-8") if report else None  # noqa: SIM115
    if verbose:
        # url_line tallies categories as it goes; a verbose line has no use for the tally.
        crawler.ledger.record_listeners.append(lambda r: print(url_line(r, Counter()), file=err))
    progress = None
    if not quiet and not verbose and err.isatty():
        progress = asyncio.create_task(_show_progress(crawler, err))
    elif hasattr(crawler.q, "unreachable"):
        progress = asyncio.create_task(_watch_frontier(crawler, err))
    with StopOnSignals(crawler) as signals, settled_heap():
        try:
            await crawl.run()  # its outputs closed when it returns
        finally:
            if progress is not None:
                progress.cancel()
                with contextlib.suppress(asyncio.CancelledError, OSError):
                    await progress
        if closed_pipe(crawler):
            return EXIT_CLOSED_PIPE
        ended = ended_by(signals.received)
        if report_file is not None:
            save_report(crawler, report_file, None if quiet else out, ended, crawl.flight)
        elif not quiet:
            write_report(crawler, out, ended=ended, flight=crawl.flight)
        if crawl.flight is not None:
            for saved in crawl.flight.saved:
                print(f"crawlscope: the last minute before a warning ({saved.why}) is in "
                      f"{printable(str(saved.path))}: crawlscope replay FILE plays it",
                      file=err)  # fmt: skip
        return exit_status(crawler, signals.received, err)


def ended_by(signum: int | None) -> str | None:
    """The report's word for a crawl a signal stopped ("Interrupted"); None: as it ran."""
    return None if signum is None else SIGNAL_WORDS.get(signum, "stopped").capitalize()


def exit_status(crawler: Crawler, signum: int | None, err: TextIO) -> int:
    """Say what went wrong, one line each, and give the status it earns."""
    faults = list(dict.fromkeys(describe_fault(f) for f in crawler.ledger.faults))
    for line in faults:
        print(f"crawlscope: {printable(line)}", file=err)
    # The lecture engines have no frontier object; only a Redis one has notes.
    frontier_notes = getattr(getattr(crawler, "q", None), "closing_notes", None)
    for note in frontier_notes() if frontier_notes is not None else ():
        print(f"crawlscope: {printable(note)}", file=err)
    if signum is not None:
        print(f"crawlscope: {SIGNAL_WORDS.get(signum, 'stopped')}", file=err)
        return 128 + signum
    failures = unreachable_roots(crawler)
    for root, why in failures:
        print(f"crawlscope: cannot reach {printable(root)}: {printable(why)}", file=err)
    return 1 if failures or faults else 0
