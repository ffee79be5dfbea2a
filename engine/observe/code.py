"""The source of a frame, for the code beside the state: crawlscope's own modules, and
aiohttp's and asyncio's as installed here, looked up by a module path ("engine/crawler.py",
"aiohttp/client.py", "asyncio/queues.py"), never by a path a file or a peer hands in.

A frame's file is turned into such a path once (`module_path`); reading it (`read_module`)
joins it to one of the known roots and refuses anything that leaves that root, so a
recording, a monitor's frame or a browser tab naming "../../etc/passwd" reads nothing.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

MOST_BYTES = 1 << 20  # aiohttp's largest module is some 60 KB: more is not source


def _roots() -> dict[str, Path]:
    """Each root a module path may start in, by its first part."""
    roots = {}
    package = Path(__file__).resolve().parents[1]  # engine/
    top = package.parent  # the project's root: engine/, tui/, crawlscope/
    for name in ("engine", "tui", "crawlscope"):
        roots[name] = top / name
    roots["asyncio"] = Path(asyncio.__file__).resolve().parent
    try:
        import aiohttp

        roots["aiohttp"] = Path(aiohttp.__file__).resolve().parent
    except ImportError:  # pragma: no cover - a dependency of the engine
        pass
    return roots


ROOTS = _roots()


@dataclass(frozen=True, slots=True)
class Source:
    name: str  # its module path ("engine/crawler.py") or, in a lecture, its file name
    lines: tuple[str, ...]
    digest: str  # sha256 of its bytes, hex

    def line(self, number: int) -> str | None:
        """Line `number` (from 1), or None when the module has no such line."""
        return self.lines[number - 1] if 1 <= number <= len(self.lines) else None


def source_of(name: str, data: bytes) -> Source:
    text = data.decode("utf-8", errors="replace")
    return Source(name, tuple(text.splitlines()), hashlib.sha256(data).hexdigest())


@functools.cache
def module_path(filename: str) -> str:
    """`filename` (a code object's) as a path under one of ROOTS ("" if under none)."""
    try:
        path = Path(filename).resolve()
    except (OSError, ValueError):
        return ""
    for name, root in ROOTS.items():
        if path.is_relative_to(root):
            return f"{name}/{path.relative_to(root).as_posix()}"
    return ""


# Bounded: a module path may come from a peer (a monitor's frame), each one kept.
@functools.lru_cache(maxsize=256)
def read_module(module: str) -> Source | None:
    """The module at `module` ("engine/crawler.py"), or None when it names no Python
    file under a known root (whatever it holds: "..", an absolute path, a NUL)."""
    first, _, rest = module.partition("/")
    root = ROOTS.get(first)
    if root is None or not rest.endswith(".py") or "\x00" in rest:
        return None
    try:
        path = (root / rest).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            return None
        data = path.read_bytes()
    except (OSError, ValueError):
        return None
    return source_of(module, data) if len(data) <= MOST_BYTES else None


@functools.lru_cache(maxsize=256)
def own_module(basename: str) -> str:
    """The module path of crawlscope's own file called `basename` ("crawler.py" ->
    "engine/crawler.py"), when exactly one is: what a position from another process names
    (a monitor's frame carries the base name); "" for none, or more than one."""
    if not basename.endswith(".py") or "/" in basename or "\\" in basename:
        return ""
    found = [
        f"{name}/{path.relative_to(ROOTS[name]).as_posix()}"
        for name in ("engine", "tui", "crawlscope")
        if name in ROOTS and ROOTS[name].is_dir()
        for path in ROOTS[name].rglob(basename)
    ]
    return found[0] if len(found) == 1 else ""


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where one task stands: its name, and a line of a module."""

    task: str
    file: str  # the module's name as its Source has it
    line: int
    function: str
    depth: int  # 0: where the task's own code waits; 1, 2...: the frames that called it


_POSITION = re.compile(r"^([\w.<>]{1,200}) ([\w./-]{1,200}\.py):(\d{1,6})$")


def own_position(text: str) -> tuple[str, str, int] | None:
    """(function, module path, line) of a worker's own position as the engine writes it
    ("Crawler._work engine/crawler.py:286"), or None for any other text (a peer's)."""
    found = _POSITION.match(text)
    if found is None:
        return None
    return found.group(1), found.group(2), int(found.group(3))
