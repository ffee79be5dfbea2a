"""Save the flight when something goes wrong: the last minute of the flight recorder, written
to a file `crawlscope replay` plays, when a warning that means trouble fires (or when the
user asks: the TUI's F key).

A save runs after the warning's own event is in the ring (call_soon), at most once per
GAP seconds, so a storm of warnings costs one file; the folder keeps the newest `keep`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..lints.lint import Lint, LintKind
from .flight import FlightOptions, FlightRing, default_flight_dir, save_flight

# The warnings that save a flight: the loop held, a worker stuck, a host failing in a row.
SAVE_ON = frozenset({LintKind.LOOP_BLOCKED, LintKind.STUCK, LintKind.RETRY_STORM})
GAP = 30.0  # seconds between two saves a warning asks for


@dataclass
class Saved:
    path: Path
    why: str


@dataclass
class FlightSaver:
    ring: FlightRing
    options: FlightOptions = field(default_factory=FlightOptions)
    saved: list[Saved] = field(default_factory=list)
    problem: str = ""  # why the last save failed, in one line ("" if it did not)
    listeners: list[Callable[[Saved | None], None]] = field(default_factory=list)
    _last: float = field(default=float("-inf"), init=False)
    _due: bool = field(default=False, init=False)

    @property
    def folder(self) -> Path:
        return Path(self.options.folder) if self.options.folder else default_flight_dir()

    def on_lint(self, lint: Lint) -> None:
        if lint.kind not in SAVE_ON or self._due or time.monotonic() - self._last < GAP:
            return
        self._due = True
        try:
            asyncio.get_running_loop().call_soon(self._save_due, lint.kind.value)
        except RuntimeError:  # no loop: save now
            self._save_due(lint.kind.value)

    def _save_due(self, why: str) -> None:
        self._due = False
        self.save(why)

    def save(self, why: str) -> Saved | None:
        """The last minute, saved now; None (and `problem` set) if it could not be."""
        self._last = time.monotonic()
        if self.options.keep <= 0:
            self.problem = "saved flights are off (--flight-keep 0)"
            return None
        try:
            path = save_flight(self.ring, self.folder, why, self.options.keep)
        except OSError as exc:
            self.problem = f"cannot save the flight in {self.folder}: {exc.strerror or exc}"
            for listener in self.listeners:
                listener(None)
            return None
        self.problem = ""
        saved = Saved(path, why)
        self.saved.append(saved)
        for listener in self.listeners:
            listener(saved)
        return saved
