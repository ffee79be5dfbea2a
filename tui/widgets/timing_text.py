"""Timing figures (engine/timing/per_worker.py) in the few cells a table row or a panel has."""

from __future__ import annotations

from crawlscope.engine.observe.workers import WorkerView

from ..format import NO_FIGURE


def millis(seconds: float) -> str:
    """3.1µs, 420µs, 1.2ms, 180ms, 1.2s, 42s: three significant figures at most."""
    if seconds <= 0:
        return "0"
    us = seconds * 1e6
    if us < 9.95:
        return f"{us:.1f}µs"
    if us < 999.5:
        return f"{us:.0f}µs"
    ms = seconds * 1000
    if ms < 9.95:
        return f"{ms:.1f}ms"
    if ms < 999.5:
        return f"{ms:.0f}ms"
    if seconds < 9.95:
        return f"{seconds:.1f}s"
    return f"{seconds:.0f}s"


def step_times(view: WorkerView) -> str:
    """A worker's 99th percentile and longest step, "1.2ms/180ms"; a dash before any."""
    if view.step_max <= 0:
        return NO_FIGURE
    return f"{millis(view.step_p99)}/{millis(view.step_max)}"
