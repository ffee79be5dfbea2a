"""Who ran when, in stages 1 and 2: the lecture's steps as a timeline's feed.

The timeline (engine/observe/timeline.py) draws a lane per worker over time from the
flight recorder. A stage's loop is stepped by hand, so here time is the step count: a
lane per fetch slot (stage 1's callbacks) or per task (stage 2's generator coroutines),
each showing its state at every step, and RAN at the step its code ran (the task the
step resumed; in stage 1 the slot the step's callback moved on, since a callback is
known only by what it changed). The snapshots are the screen's own history of steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .snapshot import Engine, StageSnapshot

RAN = "ran"  # a lane's state at the step its code ran

StatePoint = tuple[float, int, str, "str | None"]
CountPoint = tuple[float, int, int, int]


def lane_name(name: str) -> str:
    """A task's name as a lane's label: "worker-3" as "w3"."""
    return "w" + name.removeprefix("worker-") if name.startswith("worker-") else name


class StepFeed:
    """A Feed (engine/observe/timeline.py) over a stage's snapshots, one per step."""

    def __init__(self, snapshots: Callable[[], Iterable[StageSnapshot]]) -> None:
        self.snapshots = snapshots
        self.names: list[str] = []  # each lane's label, by lane number
        self._lanes: dict[str, int] = {}  # a task's name or a slot's key -> lane number
        self._shown: dict[int, tuple[str, str | None]] = {}  # what each lane shows now
        self._before: dict[int, tuple[str, str | None]] = {}  # stage 1: slots a step ago
        self._first = 0.0

    def label(self, lane: int) -> str:
        return self.names[lane] if 0 <= lane < len(self.names) else f"{lane}"

    def _lane(self, key: str, name: str) -> int:
        number = self._lanes.get(key)
        if number is None:
            number = self._lanes[key] = len(self.names)
            self.names.append(name)
        return number

    def new_points(self, seen: int) -> tuple[list[StatePoint], list[CountPoint], int]:
        """The points of the steps from step `seen` on, and the number after the last."""
        states: list[StatePoint] = []
        counts: list[CountPoint] = []
        added = seen
        first = True
        for snap in self.snapshots():
            if first:
                self._first, first = float(snap.steps), False
            if snap.steps < seen:
                continue
            added = snap.steps + 1
            t = float(snap.steps)
            for lane, state, url in self._lanes_of(snap):
                if self._shown.get(lane) != (state, url):
                    self._shown[lane] = (state, url)
                    states.append((t, lane, state, url))
            a = snap.accounting
            counts.append((t, snap.queue.size, snap.queue.unfinished, a.done + a.failed))
        return states, counts, added

    def _lanes_of(self, snap: StageSnapshot) -> list[tuple[int, str, str | None]]:
        out: list[tuple[int, str, str | None]] = []
        if snap.engine is Engine.GENERATORS:
            for task in snap.tasks:
                lane = self._lane(task.name, lane_name(task.name))
                out.append((lane, RAN if task.resumed else task.state, task.url))
            return out
        for slot in snap.loop.slots:
            lane = self._lane(f"slot {slot.id}", f"s{slot.id}")
            now = (slot.state, slot.url)
            before = self._before.get(lane)
            self._before[lane] = now
            ran = before is not None and before != now
            out.append((lane, RAN if ran else slot.state, slot.url))
        return out

    def new_events(self, seen: int) -> tuple[list[dict[str, Any]], int]:
        """No fetch's events: a stage's steps have no waterfall."""
        return [], seen

    @property
    def first_t(self) -> float:
        return self._first
