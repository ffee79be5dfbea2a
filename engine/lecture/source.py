"""The code a lecture stage runs, as a student reads it, and where each task stands in it.

A stage's snapshot names each position by the module's file name, a line and a function
(snapshot.py's ChainLink): never a path. The source shown for it is the module as shipped
with this version of crawlscope, looked up by that name among the lecture's own modules,
so a recording or a viewer's frame can name any file it likes and nothing outside the
package is ever read. A recording carries the hash of the source it ran (`digest`): a
replay whose shipped source differs says so rather than drawing cursors on other lines.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

from .snapshot import Engine, TaskInsides

HERE = Path(__file__).parent
MOST_BYTES = 512 * 1024  # a lecture module is some 30 KB: more is not one of ours
# Where a task's own code waits: the frames below it are the Future's machinery.
FUTURE_ITER = "Future.__iter__"

# Each stage's module, and the part of the chapter a student reads beside it.
STAGE_MODULES = {
    Engine.CALLBACKS: ("stage_callbacks.py", '"Programming With Callbacks"'),
    Engine.GENERATORS: (
        "stage_generators.py",
        '"Factoring Coroutines With yield from", figure 5.3',
    ),
}


@dataclass(frozen=True, slots=True)
class Source:
    name: str  # the module's file name, "stage_generators.py"
    lines: tuple[str, ...]
    digest: str  # sha256 of its bytes, hex

    def line(self, number: int) -> str | None:
        """Line `number` (from 1), or None when the module has no such line."""
        return self.lines[number - 1] if 1 <= number <= len(self.lines) else None


@functools.cache
def shipped(name: str) -> Source | None:
    """The lecture module called `name` as this version ships it; None for a name that
    is not one of them (a path, a name from elsewhere, a file too big to be ours)."""
    if name not in _modules():
        return None
    data = (HERE / name).read_bytes()
    if len(data) > MOST_BYTES:
        return None
    text = data.decode("utf-8", errors="replace")
    return Source(name, tuple(text.splitlines()), hashlib.sha256(data).hexdigest())


@functools.cache
def _modules() -> frozenset[str]:
    return frozenset(path.name for path in HERE.glob("*.py"))


def digests() -> dict[str, str]:
    """Each stage module's hash, as a recording keeps them."""
    out = {}
    for name, _ in STAGE_MODULES.values():
        source = shipped(name)
        if source is not None:
            out[name] = source.digest
    return out


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where one task stands: its name, and a line of a module."""

    task: str
    file: str
    line: int
    function: str
    depth: int  # 0: where the task's own code waits; 1, 2...: the frames that called it


def task_cursors(tasks: tuple[TaskInsides, ...], chain: bool = False) -> list[Cursor]:
    """Stage 2: a cursor per task on the line its own code is suspended at (the innermost
    generator that is not the Future's `__iter__`, which every waiting task shares), or,
    with `chain`, one on every frame of its yield-from chain, outermost last."""
    cursors = []
    for task in tasks:
        own = [link for link in task.links if link.function != FUTURE_ITER]
        links = own if chain else own[-1:]
        for depth, link in enumerate(reversed(links)):
            cursors.append(Cursor(task.name, link.file, link.line, link.function, depth))
    return cursors
