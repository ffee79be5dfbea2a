"""Feeds: the crawl's records in the format a file's name asks for, as Scrapy's feeds do.

`out.jsonl` (also `.jl`, `.ndjson`, and any other name) is JSON Lines, `out.csv` CSV with
a header row of the record's fields, `out.json` one JSON array, and `-` JSON Lines on
standard output. Every writer goes through LineFile: on disk within FLUSH_AFTER of each
record, whole lines only. The JSON array is closed by close(), which a graceful stop
(Ctrl-C, SIGTERM) reaches; only JSON Lines survive a kill -9 intact.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Protocol

from ..records import FIELDS, STDOUT, FetchRecord, JsonlWriter, LineFile

FORMATS = ("jsonl", "csv", "json")
_BY_SUFFIX = {".jsonl": "jsonl", ".jl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".json": "json"}


class FeedWriter(Protocol):
    @property
    def path(self) -> str: ...

    def __call__(self, record: FetchRecord) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


def feed_format(path: str, forced: str | None = None) -> str:
    """The format for `path`: `forced` if given, else by its extension (JSON Lines when
    the extension names no format, as every output was before there were others)."""
    if forced is not None:
        return forced
    if path == STDOUT:
        return "jsonl"
    return _BY_SUFFIX.get(Path(path).suffix.lower(), "jsonl")


def open_feed(path: str, forced: str | None = None) -> FeedWriter:
    """A writer for `path`, created (truncated) now; OSError if it cannot be."""
    kind = feed_format(path, forced)
    if kind == "csv":
        return CsvWriter(path)
    if kind == "json":
        return JsonArrayWriter(path)
    return JsonlWriter(path)


class CsvWriter:
    """One row per record under a header row of FIELDS; None is an empty cell."""

    def __init__(self, path: str | Path) -> None:
        self._out = LineFile(path)
        self._buffer = io.StringIO()
        # A row's own line end is LineFile's; a newline inside a value stays quoted.
        self._csv = csv.writer(self._buffer, lineterminator="")
        self._write_row(FIELDS)

    @property
    def path(self) -> str:
        return self._out.path

    def _write_row(self, row: tuple[object, ...]) -> None:
        self._buffer.seek(0)
        self._buffer.truncate()
        self._csv.writerow(row)
        self._out.write_line(self._buffer.getvalue())

    def __call__(self, record: FetchRecord) -> None:
        self._write_row(tuple(getattr(record, name) for name in FIELDS))

    def flush(self) -> None:
        """The rows written so far, on disk now."""
        self._out.flush()

    def close(self) -> None:
        self._out.close()


class JsonArrayWriter:
    """One JSON array, a record per line: "[" first, "]" at close()."""

    def __init__(self, path: str | Path) -> None:
        self._out = LineFile(path)
        self._out.write_line("[")
        self._first = True

    @property
    def path(self) -> str:
        return self._out.path

    def __call__(self, record: FetchRecord) -> None:
        comma = "" if self._first else ","
        self._first = False
        self._out.write_line(comma + record.to_json())

    def flush(self) -> None:
        """The records written so far, on disk now (the array is still open)."""
        self._out.flush()

    def close(self) -> None:
        if not self._out.closed:
            try:
                self._out.write_line("]")
            finally:
                self._out.close()


def check_formats(paths: list[str], forced: str | None) -> None:
    """ValueError, for the user, if two outputs are one file or two go to stdout."""
    if paths.count(STDOUT) > 1:
        raise ValueError("-o - given twice: only one output can go to stdout")
    real = [str(Path(p).resolve()) for p in paths if p != STDOUT]
    if len(set(real)) < len(real):
        raise ValueError("the same output file is given twice")
    if forced is not None and forced not in FORMATS:
        raise ValueError(f"unknown format {forced!r} (jsonl, csv or json)")
