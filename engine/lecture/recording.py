"""`crawlscope lecture --record FILE`: every step of the lecture's stages, as JSON lines.

The same family as the crawl's recordings (engine/trace/recording.py): a start line with
the format's version, then one line per event, times in seconds since the start, ASCII
only. Its events are the stage snapshots (snapshot.py) the screen draws, one after each
step the loop runs, so a replay shows each step as the class saw it:

    {"kind": "start", "recording": "lecture", "version": 1, "wall": 1764100000.0,
     "sources": {"stage_callbacks.py": "<sha256>", "stage_generators.py": "<sha256>"}}
    {"kind": "step", "t": 0.51, "snapshot": {"engine": "callbacks", "steps": 1, ...}}
    {"kind": "traceback", "t": 9.2, "engine": "callbacks", "text": "Traceback ..."}
    {"kind": "crawl", "run": 1, "t": 61.0, "event": {"kind": "start", "config": ...}}
    {"kind": "crawl", "run": 1, "t": 61.3, "event": {"kind": "fetch", "t": 0.3, ...}}
    {"kind": "end", "t": 93.2}

Stage 3 (the main TUI's asyncio crawl) is kept in the same file: each time the lecture
enters it, a run of "crawl" lines, each carrying one line of a crawl's recording
(engine/trace/recording.py) as it is, so one file holds the whole lecture and is checked
whole, with one set of caps, when it is played (replay.py).

Each line reaches the file when it is written (a lecture makes a few hundred a minute),
so a recording cut short by a kill holds every step before it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, TextIO

from ..crawler import Crawler
from ..trace.recording import Recorder
from .observe import LiveStage
from .snapshot import StageSnapshot
from .source import digests

RECORDING = "lecture"  # the start line's "recording": what tells it from a crawl's
MOST_TRACEBACK = 32_000  # characters of a traceback kept (a real one is a few thousand)
FORMAT_VERSION = 1


class LectureRecorder:
    """Follow each stage the lecture opens (`follow`), writing a line after each step;
    `close()` writes the end line. A write that fails stops the recording, not the
    lecture: `failure` says why, for the command to tell once the screen has closed."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._file: TextIO | None = open(path, "w", encoding="ascii")  # noqa: SIM115
        self._t0 = time.monotonic()
        self._last: StageSnapshot | None = None
        self.failure: str | None = None
        self.steps = 0  # step lines written
        self.runs = 0  # stage-3 crawls followed
        # The hash of each stage's module: a replay on another version says if its code
        # differs (the cursors on the code pane would stand on other lines).
        self._write({"kind": "start", "recording": RECORDING, "version": FORMAT_VERSION,
                     "wall": time.time(), "sources": digests()})  # fmt: skip

    def follow(self, stage: LiveStage) -> None:
        stage.listeners.append(self.on_snapshot)
        stage.traceback_listeners.append(self.on_traceback)

    def on_traceback(self, engine: str, text: str) -> None:
        """`t` showed `text`: kept, for the replay's `t` at the steps after it."""
        self._write({"kind": "traceback", "t": self.now(), "engine": engine,
                     "text": text[:MOST_TRACEBACK]})  # fmt: skip

    def follow_crawl(self, crawler: Crawler) -> Recorder:
        """Record stage 3's crawl, not yet started, as the next run; close the Recorder
        returned once the crawl is over (its end line)."""
        self.runs += 1
        # The stage shown after it is written even if it looks as one written before.
        self._last = None
        return Recorder(crawler, _RunLines(self, self.runs))

    def on_snapshot(self, snap: StageSnapshot) -> None:
        if snap == self._last:
            return  # told twice with nothing new (the start, then a step that ran none)
        self._last = snap
        self.steps += 1
        self._write({"kind": "step", "t": self.now(), "snapshot": snap.to_plain()})

    def now(self) -> float:
        return round(time.monotonic() - self._t0, 6)

    def _write(self, event: dict[str, Any]) -> None:
        # ensure_ascii: a hostile URL cannot break the line or the terminal that cats it.
        self.write_line(json.dumps(event, ensure_ascii=True))

    def write_line(self, line: str) -> None:
        if self._file is None:
            return
        try:
            self._file.write(line + "\n")
            self._file.flush()
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.failure = f"cannot write the recording {self.path}: {why}"
            self._drop()

    def _drop(self) -> None:
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()
            except OSError as exc:
                self.failure = self.failure or f"cannot write the recording {self.path}: {exc}"

    def close(self) -> None:
        if self._file is None:
            return
        self._write({"kind": "end", "t": self.now()})
        self._drop()


class _RunLines:
    """One stage-3 run's crawl lines (Recorder's Lines), each wrapped in a lecture line."""

    def __init__(self, lecture: LectureRecorder, run: int) -> None:
        self.lecture = lecture
        self.run = run
        self.closed = False

    @property
    def path(self) -> str:
        return self.lecture.path

    def write_line(self, line: str) -> None:
        if not self.closed:
            # `line` is the crawl recorder's JSON object, ASCII already: kept as it is.
            now = json.dumps(self.lecture.now())
            self.lecture.write_line(
                f'{{"kind": "crawl", "run": {self.run}, "t": {now}, "event": {line}}}'
            )

    def close(self) -> None:
        self.closed = True
