"""`crawlscope export FILE --trace OUT`: a recording or a saved flight as a Chrome trace,
for Perfetto (ui.perfetto.dev) or chrome://tracing."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from .common import crawl_recording, fail


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export = sub.add_parser(
        "export",
        help="write a recording or a saved flight as a Chrome trace, for Perfetto",
        description="Write a crawl's recording (--record) or a saved flight as a trace in "
        "the Chrome trace-event format, which https://ui.perfetto.dev and chrome://tracing "
        "open: a track per worker with a slice per state (its URL in the slice's args), a "
        "track of its fetches, counters for the queue, the unfinished counter and the "
        "pages done, and an instant event for each warning.",
    )
    export.add_argument("file", metavar="FILE", help="a crawl's recording or a saved flight")
    export.add_argument(
        "--trace", metavar="OUT", required=True, help="where to write the trace (- for stdout)"
    )


def main(args: argparse.Namespace) -> int:
    from crawlscope.engine.exchange.user_files import shown_path
    from crawlscope.engine.trace.export import trace_of

    recording = crawl_recording(args.file, "export")
    if isinstance(recording, int):
        return recording
    start = {"config": {"roots": list(recording.config.roots)}, "wall": recording.started_at}
    trace = trace_of(start, recording.events)
    slices = sum(1 for e in trace["traceEvents"] if e["ph"] == "X")
    counters = sum(1 for e in trace["traceEvents"] if e["ph"] == "C")
    warnings = sum(1 for e in trace["traceEvents"] if e.get("cat") == "warning")
    if args.trace == "-":
        json.dump(trace, sys.stdout)
        sys.stdout.write("\n")
        return 0
    out = Path(args.trace)
    try:
        if out.exists() and out.resolve() == Path(args.file).resolve():
            return fail(f"{shown_path(out)} is the recording itself: give another file")
        # Whole or not at all: a trace cut short by a full disk would not open.
        fd, partial = tempfile.mkstemp(prefix=".trace-", dir=out.parent or ".")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                json.dump(trace, file)
            os.replace(partial, out)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    except OSError as exc:
        return fail(f"cannot write {shown_path(out)}: {exc.strerror or exc}")
    print(
        f"wrote {shown_path(out)}: {slices} slices, {counters} counter samples, {warnings} "
        "warnings (open it in https://ui.perfetto.dev)",
        file=sys.stderr,
    )
    return 0
