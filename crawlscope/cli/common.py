"""What several commands share: a one-line failure, running a command's coroutine, and
what is said after a screen closes. Nothing here imports Textual."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, TextIO

from crawlscope.engine.config import ConfigError

if TYPE_CHECKING:
    from textual.app import App

    from crawlscope.engine.report import Crawl
    from crawlscope.engine.trace.flight_saver import FlightSaver
    from crawlscope.engine.trace.replay import ReplayedCrawl

# The exit status of a process that SIGPIPE ended (128 + 13), as a shell reports it: what
# Unix tools give when the reader of their output goes away (`| head`).
EXIT_CLOSED_PIPE = 141


def fail(message: str) -> int:
    print(f"crawlscope: {message}", file=sys.stderr)
    return 2


def crawl_recording(path: str, command: str) -> ReplayedCrawl | int:
    """The crawl recorded at `path` (a recording or a saved flight), or the exit status of
    the one line that says why not: unreadable, or a lecture's."""
    from crawlscope.engine.exchange.user_files import shown_path
    from crawlscope.engine.trace.load import load_recording
    from crawlscope.engine.trace.replay import ReplayedCrawl, ReplayError

    try:
        recording = load_recording(path)
    except ReplayError as exc:
        return fail(str(exc))
    if not isinstance(recording, ReplayedCrawl):
        return fail(f"{shown_path(path)} is a lecture recording; {command} takes a crawl's")
    return recording


def has_terminal() -> bool:
    return sys.stdin.isatty() and sys.stdout.isatty()


def run(make: Callable[[], Coroutine[None, None, int]]) -> int:
    """Run the coroutine `make()` builds, turning the user's mistakes into one-line errors."""
    try:
        return asyncio.run(make())
    except (ConfigError, ValueError) as exc:
        return fail(str(exc))
    except BrokenPipeError:
        return EXIT_CLOSED_PIPE  # the report's reader went away (`| head`)
    except OSError as exc:
        return fail(f"cannot write output: {exc}")
    except KeyboardInterrupt:
        print("crawlscope: interrupted", file=sys.stderr)
        return 130


def open_report(path: str | None) -> TextIO | None:
    """The --report file, opened before the screen is: a path that cannot be written is
    said at once, not after the crawl."""
    return open(path, "w", encoding="utf-8") if path else None


def summarise(crawler: Crawl | None, report_file: TextIO | None, out: TextIO) -> None:
    """After a screen closes: the report's totals and accounting line on `out`, the whole
    report in `report_file` if there is one. The whole report of a TUI's crawl runs to
    a thousand lines, too many for a terminal the screen just gave back."""
    from crawlscope.engine.report import write_totals

    if crawler is None or getattr(crawler, "t0", None) is None:  # it never started
        if report_file is not None:
            report_file.close()
        return
    if report_file is not None:
        save_report(crawler, report_file, out)
    else:
        write_totals(crawler, out)
        print("For the whole report, run it with --report FILE", file=out)


def save_report(
    crawler: Crawl, file: TextIO, summary: TextIO | None, ended: str | None = None,
    flight: FlightSaver | None = None,
) -> None:  # fmt: skip
    """The whole report into `file` (closed after); to `summary`, the report's totals and
    where the rest went."""
    from crawlscope.engine.report import write_report, write_totals

    with file:
        write_report(crawler, file, ended=ended, flight=flight)
    if summary is not None:
        write_totals(crawler, summary, ended=ended)
        print(f"The full report is in {file.name}", file=summary)


def app_status(app: App[Any], result: object = None) -> int:
    """The exit status of an app back from run(). After an unhandled exception Textual
    prints the traceback and returns no result, with return_code 1: never a success."""
    if app.return_code:
        return app.return_code
    return result if isinstance(result, int) else 0
