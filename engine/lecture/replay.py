"""A recorded lecture (recording.py) read back: the same ObservedStage as a live stage, at
any of its steps.

A recording is a file a user hands us: cut short, edited, or not ours at all. It is read
whole and checked before anything is shown, within caps on its size, its lines and its
steps; every snapshot passes the checked decoder of engine/exchange/plain.py, and every line of a
stage-3 crawl the checks of a crawl's recording (trace/validation.py). A bad file is one
message naming its line and what is wrong (`LectureReplayError`), never a crash mid-way.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..exchange.plain import BadMessage, decode
from ..exchange.user_files import FileRefused, read_capped, shown_path
from ..observe.text import printable
from ..trace.replay import ReplayedCrawl, ReplayError
from ..trace.validation import BadEvent, check_event, check_start, parse_line
from .recording import FORMAT_VERSION, MOST_TRACEBACK, RECORDING
from .snapshot import StageSnapshot
from .source import sources_of

# A step is some kB: an hour's lecture run to the end again and again stays well within.
MAX_BYTES = 64 * 1024 * 1024
MAX_LINE = 1024 * 1024  # one step's snapshot is a few kB
MAX_STEPS = 500_000
MAX_RUNS = 1000  # stage-3 crawls: each time the lecture entered stage 3, one
PEEK = 4096  # bytes read to tell a lecture's recording from a crawl's


class LectureReplayError(ReplayError):
    """A file that is not a lecture recording; the message is for the user."""


def is_lecture_start(head: bytes) -> bool:
    """Whether a file whose first bytes are `head` (PEEK of them) starts as a lecture's
    recording does (False for anything else, a crawl's recording included)."""
    first = head.split(b"\n", 1)[0]
    try:
        start = parse_line(first.decode("utf-8"))
    except (BadEvent, UnicodeDecodeError):
        return False
    return isinstance(start, dict) and start.get("recording") == RECORDING


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """One stage-3 crawl of the lecture, played as a crawl's recording is."""

    after: int  # the stage steps recorded before it began
    t: float  # seconds into the lecture it began
    crawl: ReplayedCrawl


@dataclass(frozen=True, slots=True)
class RecordedLecture:
    """Every step of a recorded lecture; `at(i)` is the screen after the i-th; `runs`,
    each stage-3 crawl, in the order they were entered."""

    name: str
    wall: float  # when it was recorded (seconds since the epoch)
    times: tuple[float, ...]  # seconds since the start, one a step, never going back
    steps: tuple[StageSnapshot, ...]
    runs: tuple[RecordedRun, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)  # each stage module's hash
    # Each traceback `t` showed: (the steps recorded before it, its stage, its text).
    tracebacks: tuple[tuple[int, str, str], ...] = ()

    def traceback_at(self, index: int) -> tuple[str, str] | None:
        """The last traceback shown at or before step `index` of the same stage, as
        (engine, text); None if none was."""
        engine = self.at(index).engine.value
        shown = [(e, text) for after, e, text in self.tracebacks if after <= index + 1
                 and e == engine]  # fmt: skip
        return shown[-1] if shown else None

    @property
    def duration(self) -> float:
        return self.times[-1]

    def at(self, index: int) -> StageSnapshot:
        return self.steps[min(max(index, 0), len(self.steps) - 1)]

    def index_at(self, t: float) -> int:
        """The last step recorded at or before `t` seconds (the first, before it)."""
        return max(bisect.bisect_right(self.times, t) - 1, 0)


def load_lecture(path: str | Path) -> RecordedLecture:
    """The recording at `path`, checked whole; LectureReplayError names what is wrong,
    or why the file is not read at all (no regular file, over MAX_BYTES)."""
    try:
        data = read_capped(path, MAX_BYTES, "a lecture recording")
    except FileRefused as exc:
        raise LectureReplayError(str(exc)) from None
    return lecture_from_bytes(path, data)


def lecture_from_bytes(path: str | Path, data: bytes) -> RecordedLecture:
    """What load_lecture gives, from the bytes of the file at `path` (read, capped)."""
    shown = shown_path(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise LectureReplayError(f"{shown} is not a lecture recording (not UTF-8 text)") from None
    # At newlines only: str.splitlines() would also cut inside a JSON string (U+2028...).
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    if not lines:
        raise LectureReplayError(f"{shown} is not a lecture recording (an empty file)")
    try:
        wall, sources = _start(_line(lines[0]))
    except (BadEvent, BadMessage) as exc:
        raise LectureReplayError(f"{shown}:1: {exc}") from None
    times: list[float] = []
    steps: list[StageSnapshot] = []
    runs = _Runs()
    tracebacks: list[tuple[int, str, str]] = []
    for number, line in enumerate(lines[1:], 2):
        try:
            _take(_line(line), times, steps, runs, tracebacks)
        except (BadEvent, BadMessage) as exc:
            raise LectureReplayError(f"{shown}:{number}: {exc}") from None
        if len(steps) > MAX_STEPS:
            raise LectureReplayError(f"{shown}: more than {MAX_STEPS} steps")
    if not steps:
        raise LectureReplayError(f"{shown}: a lecture recording with no step in it")
    try:
        played = runs.played()
    except ReplayError as exc:
        raise LectureReplayError(f"{shown}: stage 3: {exc}") from None
    return RecordedLecture(
        Path(path).name, wall, tuple(times), tuple(steps), played, sources, tuple(tracebacks)
    )


def _line(line: str) -> Any:
    if len(line) > MAX_LINE:
        raise BadEvent(f"a line of {len(line)} characters (at most {MAX_LINE})")
    return parse_line(line)


def _start(event: Any) -> tuple[float, dict[str, str]]:
    if not isinstance(event, dict) or event.get("kind") != "start":
        raise BadEvent("not a lecture recording (no start line)")
    if event.get("recording") != RECORDING:
        raise BadEvent("not a lecture recording (a crawl's? play it with `crawlscope replay`)")
    version = event.get("version")
    if version != FORMAT_VERSION:
        raise BadEvent(
            f"a lecture recording of version {printable(repr(version), 20)}; "
            f"this crawlscope reads version {FORMAT_VERSION}"
        )
    wall: float = decode(float, event.get("wall"), "wall")
    return wall, sources_of(event.get("sources"))


def _take(
    event: Any,
    times: list[float],
    steps: list[StageSnapshot],
    runs: _Runs,
    tracebacks: list[tuple[int, str, str]],
) -> None:
    if not isinstance(event, dict) or not isinstance(event.get("kind"), str):
        raise BadEvent("not a lecture event (a JSON object with a 'kind')")
    kind = event["kind"]
    if kind == "start":
        raise BadEvent("a second start line")
    t: float = decode(float, event.get("t"), "t")
    if t < 0 or (times and t < times[-1]):
        raise BadEvent(f"'t' goes back in time ({t})")
    if kind == "step":
        steps.append(StageSnapshot.from_plain(event.get("snapshot")))
        times.append(t)
    elif kind == "crawl":
        runs.take(event, t, len(steps))
    elif kind == "traceback":
        text, engine = event.get("text"), event.get("engine")
        if not isinstance(text, str) or len(text) > MOST_TRACEBACK:
            raise BadEvent(f"a traceback that is not a text of at most {MOST_TRACEBACK}")
        if engine not in ("callbacks", "generators"):
            raise BadEvent("a traceback of no stage 1 or 2")
        # Line by line: each line escaped (a file's word, shown on a terminal), the
        # lines kept.
        lines = "\n".join(printable(line, MOST_TRACEBACK) for line in text.split("\n"))
        tracebacks.append((len(steps), engine, lines))
    # "end", and kinds a newer recorder may write, have nothing to show.


@dataclass(slots=True)
class _Run:
    number: int
    after: int
    t: float
    start: dict[str, Any]
    events: list[dict[str, Any]]
    last: float = 0.0  # the crawl's own time of its latest event


class _Runs:
    """The stage-3 runs as their lines come: a run starts with its crawl's start line,
    and each line after it is checked as a line of a crawl's recording."""

    def __init__(self) -> None:
        self.runs: list[_Run] = []

    def take(self, line: dict[str, Any], t: float, after: int) -> None:
        number = line.get("run")
        if isinstance(number, bool) or not isinstance(number, int):
            raise BadEvent("a crawl line whose 'run' is not a whole number")
        event = line.get("event")
        try:
            if not isinstance(event, dict):
                raise BadEvent("a crawl line without its event (a JSON object)")
            if event.get("kind") == "start":
                self._start(number, after, t, event)
                return
            run = self.runs[-1] if self.runs else None
            if run is None or run.number != number:
                raise BadEvent(f"a line of run {number}, which has not started here")
            run.last = check_event(event, run.last)
            run.events.append(event)
        except BadEvent as exc:
            raise BadEvent(f"stage 3, run {number}: {exc}") from None

    def _start(self, number: int, after: int, t: float, event: dict[str, Any]) -> None:
        if self.runs and number <= self.runs[-1].number:
            raise BadEvent("a run that started before")
        if len(self.runs) >= MAX_RUNS:
            raise BadEvent(f"more than {MAX_RUNS} runs")
        check_start(event)
        self.runs.append(_Run(number, after, t, event, []))

    def played(self) -> tuple[RecordedRun, ...]:
        return tuple(RecordedRun(r.after, r.t, ReplayedCrawl(r.start, r.events)) for r in self.runs)
