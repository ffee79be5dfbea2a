"""`crawlscope lecture --record FILE`: every step of the lecture's stages, as JSON lines.

The same family as the crawl's recordings (engine/trace/recording.py): a start line with
the format's version, then one line per event, times in seconds since the start, ASCII
only. Its events are the stage snapshots (snapshot.py) the screen draws, one after each
step the loop runs, so a replay shows each step as the class saw it:

    {"kind": "start", "recording": "lecture", "version": 1, "wall": 1764100000.0}
    {"kind": "step", "t": 0.51, "snapshot": {"engine": "callbacks", "steps": 1, ...}}
    {"kind": "end", "t": 93.2}

Each line reaches the file when it is written (a lecture makes a few hundred a minute),
so a recording cut short by a kill holds every step before it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, TextIO

from .observe import LiveStage
from .snapshot import StageSnapshot

RECORDING = "lecture"  # the start line's "recording": what tells it from a crawl's
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
        self._write({"kind": "start", "recording": RECORDING, "version": FORMAT_VERSION,
                     "wall": time.time()})  # fmt: skip

    def follow(self, stage: LiveStage) -> None:
        stage.listeners.append(self.on_snapshot)

    def on_snapshot(self, snap: StageSnapshot) -> None:
        if snap == self._last:
            return  # told twice with nothing new (the start, then a step that ran none)
        self._last = snap
        self.steps += 1
        self._write({"kind": "step", "t": self._now(), "snapshot": snap.to_plain()})

    def _now(self) -> float:
        return round(time.monotonic() - self._t0, 6)

    def _write(self, event: dict[str, Any]) -> None:
        if self._file is None:
            return
        try:
            # ensure_ascii: a hostile URL cannot break the line or the terminal that cats it.
            self._file.write(json.dumps(event, ensure_ascii=True) + "\n")
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
        self._write({"kind": "end", "t": self._now()})
        self._drop()
