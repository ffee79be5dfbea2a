"""One worker in full, for the detail view (`enter` on a row): its whole await chain,
both histograms, its time in each state. Plain data, read when asked for (a walk of the
task and a copy of a few hundred bytes, Crawler.worker_detail), never on every frame."""

from __future__ import annotations

from dataclasses import dataclass

from ..timing.per_worker import BUCKETS, bucket_edge_ns


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
    step_counts: tuple[int, ...]  # per bucket of engine/timing/per_worker.py (bucket_edge_ns)
    step_max: float  # seconds
    delay_counts: tuple[int, ...]
    delay_max: float
    states: tuple[StateTime, ...]
    # Each frame of the chain as (function, module path, line): where its source is
    # (engine/observe/code.py).
    positions: tuple[tuple[str, str, int], ...] = ()


def bucket_edges() -> tuple[float, ...]:
    """Each histogram bucket's upper edge, in seconds."""
    return tuple(bucket_edge_ns(i) / 1e9 for i in range(BUCKETS))
