"""The contract between a lecture stage and the screen that shows it, as engine/observe/contract.py
is for the crawl.

The lecture screen depends on these protocols and on the snapshots of snapshot.py, never
on a stage's classes: a stage crawling here (live.py) is observed and driven; a recording
played back (replay.py) is moved through, step by step; a stage watched from another
process (remote/lecture_client.py) is its last snapshot. Only the first has keys that
drive it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ..observe.contract import PlayedBack
from ..report import Crawl
from .snapshot import StageSnapshot

# Told of every snapshot a live stage takes after a step (a recorder, say).
StageListener = Callable[[StageSnapshot], None]
# Told of each traceback `t` showed: the stage's engine, and the text.
TracebackListener = Callable[[str, str], None]


class ObservedStage(Protocol):
    """What every lecture panel reads: the stage as plain data, one snapshot a frame."""

    def snapshot(self) -> StageSnapshot: ...


class StageControls(Protocol):
    """Driving a stage's own loop: what the keys n, p, ] and [ and t do."""

    def start(self, stepping: bool) -> None:
        """Start the crawl; with `stepping`, the loop's clock is held between steps."""
        ...

    def step_once(self, jump: bool = False) -> bool:
        """Run one callback if one is ready now (never waits); True if one ran. With
        `jump`, the clock jumps to the next timer when nothing else can come next."""
        ...

    @property
    def over(self) -> bool:
        """The crawl ended (or a callback's bug ended it) and nothing is left to run."""
        ...

    def hold_clock(self) -> None: ...

    def release_clock(self) -> None: ...

    def close(self) -> None:
        """Stop the crawl (held URLs back on the queue) and close the loop."""
        ...

    def traceback(self) -> str:
        """Crawl the first root again with a parser that raises; its traceback. Blocks
        (its own loop and sockets): call it from a thread."""
        ...

    def shown_traceback(self, text: str) -> None:
        """Tell the stage's listeners (a recorder) that `text` was shown, from the loop's
        thread: a recording keeps it for its replay's `t`."""
        ...

    @property
    def crawl(self) -> Crawl:
        """The crawl's books, for the report after the screen closes."""
        ...


class LiveStage(ObservedStage, StageControls, Protocol):
    """A stage crawling in this process: observed and driven, and telling `listeners`
    of the snapshot after each step."""

    listeners: list[StageListener]
    traceback_listeners: list[TracebackListener]


class RecordedRun(Protocol):
    """Stage 3 as recorded once: the main TUI's crawl, played on the crawl's replay."""

    @property
    def after(self) -> int:
        """How many of the stages' steps were recorded before it began."""
        ...

    @property
    def t(self) -> float:
        """Seconds into the lecture it began."""
        ...

    @property
    def crawl(self) -> PlayedBack: ...


class RecordedStages(Protocol):
    """A lecture played back (replay.py): every step it recorded, to move through, and
    each time it was in stage 3."""

    @property
    def name(self) -> str: ...

    @property
    def runs(self) -> Sequence[RecordedRun]: ...

    @property
    def times(self) -> tuple[float, ...]:
        """Seconds since the start of each step, never going back."""
        ...

    @property
    def duration(self) -> float: ...

    def at(self, index: int) -> StageSnapshot:
        """The screen after the `index`-th step recorded."""
        ...

    def index_at(self, t: float) -> int:
        """The last step recorded at or before `t` seconds."""
        ...
