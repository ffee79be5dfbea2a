"""One record per fetch: the chapter's FetchStatistic, extended; and one per URL left
unfetched by the rules (`filtered`), so the JSON Lines account for every URL seen."""

from __future__ import annotations

import asyncio
import codecs
import hashlib
import json
import select
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

FIELDS = (
    "url", "status", "next_url", "exception", "size", "content_type", "encoding",
    "num_urls", "num_new_urls", "tries", "depth", "referrer", "worker", "t_start", "t_end",
    "filtered",
)  # fmt: skip


# The most characters of a record's text (its URL, referrer, redirect target, exception,
# filter reason): a page may link a 5 MiB href, and its record must still fit any line
# limit on its way (a --procs parent's is 4 MiB; JSON escapes a character in up to 12
# bytes). --max-url-length is capped to it, so a URL fetched is never cut: only one
# filtered as too long, or quoted in another field.
RECORD_TEXT_LIMIT = 16 * 1024


def bounded(text: str | None) -> str | None:
    """`text`, or for one over RECORD_TEXT_LIMIT its start and a visible mark saying it
    was cut, with a digest of the whole: two long URLs alike at the start stay two."""
    if text is None or len(text) <= RECORD_TEXT_LIMIT:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    mark = f"…[cut from {len(text)} characters, sha256 {digest}]"
    return text[: RECORD_TEXT_LIMIT - len(mark)] + mark


@dataclass(slots=True)
class FetchRecord:
    url: str
    status: int | None  # None when no response came
    next_url: str | None  # the redirect target, resolved and normalised
    exception: str | None  # "TypeName: message" when the fetch failed
    size: int
    content_type: str | None
    encoding: str | None
    num_urls: int  # links found on the page (after scoping)
    num_new_urls: int  # of those, the ones not seen before
    tries: int
    depth: int
    referrer: str | None
    worker: int | None  # None for a URL filtered before any worker took it
    t_start: float  # wall-clock seconds since the epoch
    t_end: float
    filtered: str | None = None  # why the rules leave this URL alone; then nothing was asked

    def __post_init__(self) -> None:
        # Cut where a record is made, in every process alike: never dropped on its way.
        for name in ("url", "next_url", "exception", "referrer", "filtered"):
            text = getattr(self, name)
            if text is not None and len(text) > RECORD_TEXT_LIMIT:
                setattr(self, name, bounded(text))

    @property
    def failed(self) -> bool:
        return self.status is None and self.filtered is None

    def to_dict(self) -> dict[str, Any]:
        # Every field is a str, a number or None: asdict's deep copy of each copied
        # nothing, and made a record's JSON line cost 30 us instead of 5 (every page's,
        # for -o and for a --procs child's parent).
        return {name: getattr(self, name) for name in _RECORD_FIELDS}

    def to_json(self) -> str:
        # ensure_ascii keeps the line valid whatever bytes a hostile page put in a URL.
        return json.dumps(self.to_dict(), ensure_ascii=True)


_RECORD_FIELDS = tuple(f.name for f in fields(FetchRecord))


def describe_exception(exc: BaseException) -> str:
    text = str(exc)
    name = type(exc).__name__
    return f"{name}: {text}" if text else name


# What a Content-Type makes of a body: an HTML page (its links are taken), text (it has
# an encoding), or bytes. Here, not in links.py, which needs BeautifulSoup: a process that
# only reads records (a --procs parent, a report) does not load it.
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Types of text outside text/*: a body of any other type is bytes, with no encoding.
TEXT_TYPES = frozenset({"application/json", "application/xml", "application/javascript",
                        "application/ecmascript", "application/x-javascript"})  # fmt: skip


def is_html(content_type: str | None) -> bool:
    return content_type in HTML_TYPES


def is_text(content_type: str | None) -> bool:
    """Whether a body of `content_type` (lower case, no parameters) is text."""
    if not content_type:
        return False
    return (
        content_type.startswith("text/")
        or content_type in TEXT_TYPES
        or content_type.endswith(("+xml", "+json"))
    )


def known_charset(charset: str | None) -> str | None:
    """`charset` if Python has a codec by that name, else None (servers lie)."""
    if not charset:
        return None
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return None


def media_type(content_type: str | None) -> str | None:
    """The media type a Content-Type header names, as the server sent it (lower-cased,
    parameters dropped): "foo" stays "foo", never a library's stand-in for what it could
    not parse. None when there is no header, or nothing in it."""
    if content_type is None:
        return None
    return content_type.partition(";")[0].strip().lower() or None


class Fault(Exception):
    """Trouble beside the fetches whose message says it all: an output that cannot be
    written, a worker that died. Other faults are listeners' own exceptions."""


def describe_fault(exc: Exception) -> str:
    return str(exc) if isinstance(exc, Fault) else f"a listener failed: {describe_exception(exc)}"


# The output path that means standard output.
STDOUT = "-"

# How long a written line may wait in memory before it goes to its file: `tail -f` follows
# a crawl live, and a kill -9 loses at most this much.
FLUSH_AFTER = 0.2


class OutputError(Fault):
    """An output file that could not be written; the message names the file and why."""

    def __init__(self, path: str, cause: OSError) -> None:
        super().__init__(f"cannot write {path}: {cause.strerror or cause}")
        self.path = path
        self.cause = cause

    @property
    def closed_pipe(self) -> bool:
        """The reader went away (`| head`): an end to take quietly, as Unix tools do."""
        return isinstance(self.cause, BrokenPipeError)


class LineFile:
    """A file written a whole line at a time, in batches.

    Lines wait in memory for at most FLUSH_AFTER seconds (on an asyncio loop; with no
    loop running, each goes out at once), then reach the file in one write, so the file
    never ends in half a line. The first failed write raises OutputError, once; the file
    is broken from then on, and later lines are dropped: its failure has been told.
    """

    def __init__(self, path: str | Path) -> None:
        to_stdout = str(path) == STDOUT
        self.path = "stdout" if to_stdout else str(path)  # as errors name it
        # Unbuffered: the batch below is the only buffer, so a flush is one write call.
        # "-" is standard output, as Unix tools take it; closing this file leaves fd 1 open.
        if to_stdout:
            self._file = open(sys.stdout.fileno(), "wb", buffering=0, closefd=False)  # noqa: SIM115
        else:
            self._file = open(path, "wb", buffering=0)  # noqa: SIM115 (closed in close())
        self._lines: list[str] = []
        self._timer: asyncio.TimerHandle | None = None
        self._failure: OutputError | None = None  # found by a timed flush, not told yet
        self._broken = False

    @property
    def closed(self) -> bool:
        return self._file.closed

    def write_line(self, line: str) -> None:
        self._tell_failure()
        if self._broken or self._file.closed:
            return
        self._lines.append(line)
        if self._timer is None:
            self._flush_soon()

    def _flush_soon(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.flush()  # no asyncio loop to flush later (a lecture engine's own loop)
            return
        self._timer = loop.call_later(FLUSH_AFTER, self._timed_flush)

    def _timed_flush(self) -> None:
        self._timer = None
        try:
            self.flush()
        except OutputError as exc:
            # A loop callback has no caller to tell: the next line, or close(), raises it.
            self._failure = exc

    def flush(self) -> None:
        if not self._lines or self._broken:
            return
        data = memoryview(("\n".join(self._lines) + "\n").encode("utf-8"))
        self._lines.clear()
        try:
            while data:
                written = self._file.write(data)
                if written is None:
                    # A pipe someone left non-blocking, and full: wait as a blocking one would.
                    select.select([], [self._file], [])
                    continue
                data = data[written:]
        except OSError as exc:
            self._broken = True
            raise OutputError(self.path, exc) from exc

    def _tell_failure(self) -> None:
        failure, self._failure = self._failure, None
        if failure is not None:
            raise failure

    def close(self) -> None:
        """Write what is left and close; raises OutputError if a failure is still untold."""
        if self._file.closed:
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            self.flush()
            self._tell_failure()
        finally:
            self._file.close()


class JsonlWriter:
    """Writes each record as one JSON line as it is made (on disk within FLUSH_AFTER, never
    half a line: see LineFile), so memory stays flat and a crawl cut short, even by kill -9,
    leaves every line it got to but the last moment's."""

    def __init__(self, path: str | Path) -> None:
        self._out = LineFile(path)

    @property
    def path(self) -> str:
        return self._out.path

    def __call__(self, record: FetchRecord) -> None:
        self._out.write_line(record.to_json())

    def flush(self) -> None:
        """The lines written so far, on disk now."""
        self._out.flush()

    def close(self) -> None:
        self._out.close()
