"""What a lecture engine's loop is about to run, as data: one event per callback.

The selector loop of stage 1 (and stage 2, which reuses it) hands each of these to its
`on_step` hook before it runs the callback, so a screen can explain the step from its
fields. `str(step)` is the same step in one terse line, for places that print it.

`callback` is the callback's qualified name (`Fetcher.read_response`, `Task._wakeup`);
`about` is what it acts on when the loop can name it: a Fetcher's URL, a task's name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

__all__ = [
    "ClockJumped",
    "FutureResolved",
    "Scheduled",
    "SleepEnded",
    "SocketReady",
    "Step",
    "TimerFired",
]


def _target(callback: str, about: str | None) -> str:
    return f"{callback} [{about}]" if about else callback


class _RunsCallback:
    """A step that runs `callback`, on behalf of `about` when it is known."""

    __slots__ = ()
    callback: str
    about: str | None

    @property
    def target(self) -> str:
        """The callback and what it acts on, as the panels write it."""
        return _target(self.callback, self.about)


@dataclass(frozen=True, slots=True)
class SocketReady(_RunsCallback):
    """The selector reported a watched socket ready; its callback runs."""

    fd: int
    readable: bool  # False: writable
    callback: str
    about: str | None = None

    def __str__(self) -> str:
        ready = "readable" if self.readable else "writable"
        return f"socket {self.fd} {ready}: {self.target}"


@dataclass(frozen=True, slots=True)
class FutureResolved(_RunsCallback):
    """A future was resolved, and one of its done callbacks runs (stage 2's wake-ups)."""

    future: str  # the future's label: "queue get", "socket 7 readable", ...
    callback: str
    about: str | None = None  # the task the callback resumes

    def __str__(self) -> str:
        return f"{self.future!r} resolved -> {self.target}"


@dataclass(frozen=True, slots=True)
class TimerFired(_RunsCallback):
    """A timer (a backoff, a deadline) came due; its callback runs."""

    callback: str
    about: str | None = None

    def __str__(self) -> str:
        return f"timer fired: {self.target}"


@dataclass(frozen=True, slots=True)
class SleepEnded:
    """The timer of a `sleep()` came due: it resolves the future the sleeper waits on."""

    seconds: float
    backoff_of: str | None = None  # the worker whose backoff this sleep is, if one

    callback = "Future.set_result"

    @property
    def about(self) -> str:
        """The sleep's future's label."""
        slept = f"sleep {self.seconds:g}s"
        return f"{slept}: backoff of {self.backoff_of}" if self.backoff_of else slept

    @property
    def target(self) -> str:
        return _target(self.callback, self.about)

    def __str__(self) -> str:
        return f"timer fired: {self.target}"


@dataclass(frozen=True, slots=True)
class Scheduled(_RunsCallback):
    """A callback put on the ready queue with `call_soon()` runs (a task's step)."""

    callback: str
    about: str | None = None

    def __str__(self) -> str:
        return f"scheduled: {self.target}"


@dataclass(frozen=True, slots=True)
class ClockJumped:
    """Nothing else could come next, so the clock jumped `seconds` to a timer: `then`."""

    seconds: float
    then: Step

    @property
    def target(self) -> str:
        return self.then.target

    def __str__(self) -> str:
        return f"clock jumped {round(self.seconds, 2):g} s: {self.then}"


Step: TypeAlias = SocketReady | FutureResolved | TimerFired | SleepEnded | Scheduled | ClockJumped
