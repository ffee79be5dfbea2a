"""The crawl at one instant, copied out for an observer."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from .workers import WorkerView


class Phase(StrEnum):
    IDLE = "idle"  # crawl() not called yet
    RUNNING = "running"
    PAUSED = "paused"
    STOPPING = "stopping"  # cancelling the workers
    FINISHED = "finished"  # join() returned: nothing left to do
    STOPPED = "stopped"  # stop() ended it early


@dataclass(frozen=True, slots=True)
class Accounting:
    """Where every seen URL is. The parts always add up to `seen`."""

    seen: int
    done: int
    failed: int
    filtered: int
    queued: int
    held: int
    unfetched: int

    @property
    def balanced(self) -> bool:
        parts = self.done + self.failed + self.filtered + self.queued + self.held + self.unfetched
        return parts == self.seen

    def line(self) -> str:
        verdict = "all accounted for" if self.balanced else "MISMATCH"
        return (
            f"Accounting: {self.seen} seen = {self.done} done + {self.failed} failed"
            f" + {self.filtered} filtered + {self.queued} queued + {self.held} held"
            f" + {self.unfetched} unfetched ({verdict})"
        )


@dataclass(frozen=True, slots=True)
class Snapshot:
    t: float  # monotonic time it was taken
    elapsed: float
    phase: Phase
    workers: tuple[WorkerView, ...]
    live_workers: int
    accounting: Accounting
    unfinished: int  # the queue's unfinished-task counter that join() waits on
    redirect_version: int
