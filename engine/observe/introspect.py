"""Where a task is suspended right now, read from the task itself.

A suspended coroutine remembers what it awaits (`cr_await`); that awaitable is often
another coroutine, which remembers its own, and so on down to a Future that some
callback will resolve. Walking that chain shows the truth beside the state label a
worker sets for itself: `Queue.get queues.py:158` waiting on a Future, say.

Pure asyncio and the standard library; cheap (a few attribute reads per level) and
never raises, because a UI calls it for every visible row, many times a second.
"""

from __future__ import annotations

import asyncio
import gc
import inspect
import os
from dataclasses import dataclass
from types import CodeType, FrameType
from typing import Any

from .code import module_path

__all__ = ["Frame", "SuspensionPoint", "suspension_point"]

# Deeper than any real await chain; only guards against a cycle or a pathological stack.
_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Frame:
    function: str  # qualified name, e.g. "Queue.get"
    file: str  # base name of the source file
    line: int
    # Where code.py finds its source: "engine/crawler.py", "aiohttp/client.py" ("": none).
    module: str = ""

    def __str__(self) -> str:
        return f"{self.function} {self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class SuspensionPoint:
    """What a task is doing at one instant.

    `state` is one of: "suspended", "running", "not started", "done", "cancelled",
    "no task", "unknown". For a suspended task, `frames` runs from the task's
    own coroutine to the innermost one, and `awaits` names what that one waits on.
    """

    state: str
    frames: tuple[Frame, ...] = ()
    awaits: str = ""

    @property
    def innermost(self) -> Frame | None:
        return self.frames[-1] if self.frames else None

    def __str__(self) -> str:
        if self.state != "suspended":
            return self.state
        if self.frames:
            return str(self.frames[-1])
        return self.awaits or self.state


_NO_TASK = SuspensionPoint("no task")
_UNKNOWN = SuspensionPoint("unknown")


def suspension_point(task: asyncio.Task[Any] | None) -> SuspensionPoint:
    """Walk `task`'s await chain down to the innermost awaitable. Never raises."""
    if task is None:
        return _NO_TASK
    try:
        return _inspect(task)
    except Exception:
        # A task from an exotic event loop or a hand-written awaitable may not have the
        # attributes walked here; an observer must not crash on that.
        return _UNKNOWN


def _inspect(task: asyncio.Task[Any]) -> SuspensionPoint:
    if task.done():
        # Not task.exception(): that would mark an error as retrieved, and an observer
        # must not silence asyncio's "exception was never retrieved" warning.
        return SuspensionPoint("cancelled" if task.cancelled() else "done")
    coro = task.get_coro()
    # A worker's task runs its coroutine inside a TimedCoroutine (engine/timing/per_worker.py).
    coro = getattr(coro, "wrapped", coro) if not inspect.iscoroutine(coro) else coro
    if inspect.iscoroutine(coro):
        if coro.cr_running:
            return SuspensionPoint("running")
        if inspect.getcoroutinestate(coro) == inspect.CORO_CREATED:
            return SuspensionPoint("not started", (_frame_of(coro.cr_code, None),))
    frames: list[Frame] = []
    node: object = coro
    for _ in range(_MAX_DEPTH):
        step = _step(node)
        if step is None:
            break
        frame, node = step
        if frame is not None:
            frames.append(frame)
        if node is None:
            break
    else:
        node = None
    awaits = _describe(node) if node is not None else _describe_waiter(task)
    return SuspensionPoint("suspended", tuple(frames), awaits)


def _step(node: object) -> tuple[Frame | None, object] | None:
    """One level down: this node's frame (if it has one) and what it awaits.

    None means `node` is a leaf: a Future, or something not to be looked into.
    """
    if isinstance(node, asyncio.Future):
        return None
    if inspect.iscoroutine(node):
        return _frame_of(node.cr_code, node.cr_frame), node.cr_await
    if inspect.isgenerator(node):
        # Generator-based coroutines (@types.coroutine, pure-Python Future.__await__).
        return _frame_of(node.gi_code, node.gi_frame), node.gi_yieldfrom
    if inspect.isasyncgen(node):
        return _frame_of(node.ag_code, node.ag_frame), node.ag_await
    # C-level iterators with no public way in: asyncio's FutureIter (from awaiting a
    # Future), the coroutine_wrapper that `coro.__await__()` returns, an async
    # generator's asend/athrow. Each holds what it wraps as a GC referent; one level of
    # get_referents on a single small object is cheap.
    for inner in gc.get_referents(node):
        if isinstance(inner, asyncio.Future) or _walkable(inner):
            return None, inner
    return None


def _walkable(obj: object) -> bool:
    return inspect.iscoroutine(obj) or inspect.isgenerator(obj) or inspect.isasyncgen(obj)


# A code object's file, named and placed (code.py): few files, met on every frame walked.
_NAMES: dict[str, tuple[str, str]] = {}


def _frame_of(code: CodeType, frame: FrameType | None) -> Frame:
    line = frame.f_lineno if frame is not None else code.co_firstlineno
    path = code.co_filename
    names = _NAMES.get(path)
    if names is None:
        names = _NAMES[path] = (os.path.basename(path), module_path(path))
    return Frame(code.co_qualname, names[0], line or 0, names[1])


def _describe(node: object) -> str:
    if isinstance(node, asyncio.Task):
        return f"Task {node.get_name()} {_future_state(node)}"
    if isinstance(node, asyncio.Future):
        return f"{type(node).__name__} {_future_state(node)}"
    return type(node).__name__


def _describe_waiter(task: asyncio.Task[Any]) -> str:
    # Where the walk ended on a frame (a bare `yield` in a generator-based coroutine,
    # say), the task's own record of the future it waits on is the next best truth.
    waiter = getattr(task, "_fut_waiter", None)
    return _describe(waiter) if waiter is not None else ""


def _future_state(future: asyncio.Future[Any]) -> str:
    if not future.done():
        return "pending"
    return "cancelled" if future.cancelled() else "done"
