"""The code beside the workers: the engine module a worker's own code waits in, with a
cursor on the line each worker stands at, named `w3` in its state's colour (the workers
table's), the selected worker's line in the middle.

The positions are the crawl's (WorkerView.own_at: read from each task when the rows were
taken, or sent by a monitor); the source is the one this version ships, read by module
path under the engine's folder only (engine/observe/code.py). A position that names no
such line is left out and said in one line above the code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from crawlscope.engine.observe.code import Cursor, own_position, read_module
from crawlscope.engine.observe.workers import WorkerView

from ..format import state_style
from .source_pane import SourcePane

# What the pane opens on with no worker to follow: the chapter's crawler, as stage 3 runs it.
HOME = "engine/crawler.py"
# The chapter's words for the engine's modules a worker waits in.
CHAPTER = {
    "engine/crawler.py": 'the chapter\'s "Coordinating Coroutines"',
}


def worker_name(worker: int) -> str:
    return f"w{worker}"


def worker_cursors(views: Iterable[WorkerView]) -> tuple[list[Cursor], list[str]]:
    """A cursor for each live worker whose own position is known, and the positions
    that name no module of the engine (a peer's text), as they came."""
    cursors: list[Cursor] = []
    foreign: list[str] = []
    for view in views:
        if not view.alive or not view.own_at:
            continue
        found = own_position(view.own_at)
        if found is None or not found[1].startswith("engine/"):
            foreign.append(f"{worker_name(view.id)} at {view.own_at}")
            continue
        function, module, line = found
        cursors.append(Cursor(worker_name(view.id), module, line, function, 0))
    return cursors, foreign


def module_shown(cursors: list[Cursor], selected: str | None) -> str:
    """The module the pane shows: the selected worker's, else the one most workers wait
    in, else HOME."""
    for cursor in cursors:
        if cursor.task == selected:
            return cursor.file
    if cursors:
        return Counter(c.file for c in cursors).most_common(1)[0][0]
    return HOME


class CodePane(SourcePane):
    """The pane itself; its border title is set by the screen (code_view.py)."""

    drawn_from: tuple[WorkerView, ...] = ()  # the rows of the frame last drawn

    def show_workers(
        self, views: tuple[WorkerView, ...], selected: int | None, why_none: str
    ) -> str:
        """Draw where `views` stand, centred on worker `selected`; `why_none` is what
        to say when no worker has a position (a recording keeps none). Returns the
        module shown."""
        self.drawn_from = views
        found, foreign = worker_cursors(views)
        cursors = []
        for c in found:  # a line this version does not ship is said, never looked for
            source = read_module(c.file)
            if source is None or source.line(c.line) is None:
                foreign.append(f"{c.task} at {c.file}:{c.line}")
            else:
                cursors.append(c)
        chosen = None if selected is None else worker_name(selected)
        module = module_shown(cursors, chosen)
        source = read_module(module)
        notes = []
        if foreign:
            more = f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else ""
            notes.append(f"{foreign[0]}: not a line of the engine this version ships{more}")
        if not cursors and not foreign and why_none:
            notes.append(why_none)
        colours = {worker_name(v.id): _colour(v) for v in views}
        self.show(source, cursors, colours, chosen, "; ".join(notes))
        return module


def _colour(view: WorkerView) -> str:
    """The colour of the worker's state in the workers table (its background, for a
    paused one's black on yellow; grey for a waiting one's dim)."""
    words = state_style(view.state).split()
    if "on" in words[:-1]:
        return words[words.index("on") + 1]
    colours = [w for w in words if w not in ("bold", "dim", "italic")]
    return colours[0] if colours else "grey62"
