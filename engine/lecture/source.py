"""The code a lecture stage runs, as a student reads it, and where each task stands in it.

A stage's snapshot names each position by the module's file name, a line and a function
(snapshot.py's ChainLink): never a path. The source shown for it is the module as shipped
with this version of crawlscope, looked up by that name among the lecture's own modules,
so a recording or a viewer's frame can name any file it likes and nothing outside the
package is ever read. A recording carries the hash of the source it ran (`digest`): a
replay whose shipped source differs says so rather than drawing cursors on other lines.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Mapping
from pathlib import Path

from ..exchange.plain import BadMessage
from ..observe.code import Cursor, Source, source_of
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


@functools.cache
def shipped(name: str) -> Source | None:
    """The lecture module called `name` as this version ships it; None for a name that
    is not one of them (a path, a name from elsewhere, a file too big to be ours)."""
    if name not in _modules():
        return None
    data = (HERE / name).read_bytes()
    return source_of(name, data) if len(data) <= MOST_BYTES else None


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


def source_note(recorded: Mapping[str, str], said: str = "recorded with") -> str:
    """What to say of a recording's stage modules (name -> hash, as `digests()` gave them
    when it was made; or a lecturer's, `said` "the lecturer runs") against those this
    version ships: "" when they are the same, or none are named (a recording made before
    they were kept)."""
    shipped_now = digests()
    differ = sorted(name for name, digest in recorded.items()
                    if name in shipped_now and shipped_now[name] != digest)  # fmt: skip
    if not differ:
        return ""
    return (f"{said} another {', '.join(differ)} than this version ships: "
            "the cursors may stand on other lines")  # fmt: skip


def sources_of(value: object) -> dict[str, str]:
    """A recording's "sources" (name -> sha256 hex), checked; BadMessage if not that."""
    if value is None:
        return {}
    if not isinstance(value, dict) or len(value) > MOST_SOURCES:
        raise BadMessage(f"'sources' is not an object of at most {MOST_SOURCES} entries")
    for name, digest in value.items():
        if not (isinstance(name, str) and len(name) <= 100 and isinstance(digest, str)
                and re.fullmatch(r"[0-9a-f]{64}", digest)):  # fmt: skip
            raise BadMessage("'sources' holds an entry that is not a name and a sha256")
    return dict(value)


MOST_SOURCES = 16


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


@functools.cache
def _places(source: Source) -> tuple[dict[str, int], dict[str, tuple[int, ...]]]:
    """Where each function of a module is defined (by qualified name), and the lines that
    hand each method to the loop (`watch`, `call_soon`, `call_later`: by its name)."""
    defs: dict[str, int] = {}
    handed: dict[str, list[int]] = {}
    try:
        tree = ast.parse("\n".join(source.lines))
    except (SyntaxError, ValueError):
        return {}, {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                defs[f"{prefix}{child.name}"] = child.lineno
                visit(child, f"{prefix}{child.name}.<locals>.")
            else:
                visit(child, prefix)

    visit(tree, "")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in LOOP_CALLS
        ):
            for arg in node.args:
                if isinstance(arg, ast.Attribute):
                    handed.setdefault(arg.attr, []).append(node.lineno)
    return defs, {name: tuple(lines) for name, lines in handed.items()}


LOOP_CALLS = frozenset({"watch", "call_soon", "call_later"})
_CALLBACK = re.compile(r"([A-Za-z_][\w.<>]*)(?: \[(.*)\])?$")


def callback_label(fd: int) -> str:
    """What stage 1's pane calls a registered callback: its socket ("fd 7"); the Fetcher
    it belongs to is named by its URL, too long for the pane's margin."""
    return f"fd {fd}"


def callback_cursors(
    source: Source, registered: list[tuple[int, str]], ready: tuple[str, ...]
) -> list[Cursor]:
    """Stage 1: the callback about to run (`ready`'s first, as the loop writes a step) on
    its `def`, and each socket's registered callback on its `def` and, one further out, on
    the lines that handed it to the loop. `registered`: (fd, callback) as the snapshot holds
    them."""
    defs, handed = _places(source)
    cursors = []
    if ready:
        found = _CALLBACK.match(ready[0].split(": ", 1)[-1])
        if found and found.group(1) in defs:
            cursors.append(Cursor("next", source.name, defs[found.group(1)], found.group(1), 0))
    for fd, callback in registered:
        found = _CALLBACK.match(callback)
        if not found or found.group(1) not in defs:
            continue
        name = found.group(1)
        label = callback_label(fd)
        cursors.append(Cursor(label, source.name, defs[name], name, 0))
        for line in handed.get(name.rsplit(".", 1)[-1], ()):
            cursors.append(Cursor(label, source.name, line, name, 1))
    return cursors


# A step's callback, as the engines write it: after "...: " or "-> ", before " [about]".
_RAN = re.compile(r"(?:: |-> )([A-Za-z_][\w.<>]*)(?: \[.*\])?$")


def told_line(source: Source, raw: str, task: str | None, cursors: list[Cursor]) -> Cursor | None:
    """The line a step's narration talks about: where the task the step ran now stands
    (stage 2: that task's own cursor, the line it ran on to), else the `def` of the
    callback the step ran (stage 1's `Fetcher.connected`, stage 2's `on_writable`)."""
    for cursor in cursors:
        if cursor.task == task and cursor.depth == 0 and source.line(cursor.line) is not None:
            return cursor
    found = _RAN.search(raw)
    defs, _ = _places(source)
    if found is None or found.group(1) not in defs:
        return None
    name = found.group(1)
    return Cursor(task or "", source.name, defs[name], name, 0)
