"""One worker in full, for the detail view (`enter` on a row): its whole await chain,
both histograms, its time in each state. Plain data, read when asked for (a walk of the
task and a copy of a few hundred bytes), never on every frame."""

from __future__ import annotations

from dataclasses import dataclass

from .introspect import suspension_point
from .timing import BUCKETS, bucket_edge_ns
from .workers import Worker


@dataclass(frozen=True, slots=True)
class StateTime:
    state: str
    seconds: float  # time spent in it so far, the current stay included
    times: int  # stays ended


@dataclass(frozen=True, slots=True)
class WorkerDetail:
    id: int
    # Every frame of its await chain, from its own coroutine down: "Crawler._work
    # crawler.py:286"; then what the innermost one waits on ("Future pending").
    chain: tuple[str, ...]
    awaits: str
    task_state: str  # introspect's: "suspended", "running", "done", ...
    step_counts: tuple[int, ...]  # per bucket of engine/timing.py (bucket_edge_ns)
    step_max: float  # seconds
    delay_counts: tuple[int, ...]
    delay_max: float
    states: tuple[StateTime, ...]


def bucket_edges() -> tuple[float, ...]:
    """Each histogram bucket's upper edge, in seconds."""
    return tuple(bucket_edge_ns(i) / 1e9 for i in range(BUCKETS))


def detail_of(w: Worker, now: float) -> WorkerDetail:
    """`w` as it is at monotonic time `now`."""
    point = suspension_point(w.task)
    t = w.timing
    totals = t.state_totals()
    current = w.state.value
    seconds = {state: s for state, (s, _) in totals.items()}
    seconds[current] = seconds.get(current, 0.0) + max(now - w.since, 0.0)
    states = tuple(
        StateTime(state, seconds[state], totals.get(state, (0.0, 0))[1])
        for state in sorted(seconds, key=lambda s: -seconds[s])
    )
    return WorkerDetail(
        id=w.id,
        chain=tuple(str(frame) for frame in point.frames),
        awaits=point.awaits,
        task_state=point.state,
        step_counts=tuple(t.step.counts),
        step_max=t.step.max_ns / 1e9,
        delay_counts=tuple(t.delay.counts),
        delay_max=t.delay.max_ns / 1e9,
        states=states,
    )
