"""The code beside the state: a module's source, a cursor on the line where each task
stands, labelled with the task's name in its colour, the selected task's line in the
middle. A lecture stage's tasks (engine/lecture/source.py says which lines) and a live
crawl's workers (code_pane.py) alike; the module is always one this version ships."""

from __future__ import annotations

import functools
import textwrap

from rich.style import Style
from rich.syntax import Syntax
from rich.text import Text
from textual.widgets import Static

from crawlscope.engine.observe.code import Cursor, Source
from crawlscope.engine.observe.text import printable

GUTTER = 16  # columns of the task names left of a line
NUMBER = 5  # columns of the line number
TASK_COLOURS = ("green", "magenta", "cyan", "yellow", "bright_blue", "red", "bright_green",
                "bright_magenta", "bright_cyan", "orange1")  # fmt: skip
CURRENT = Style(bgcolor="grey23")


# What is shown under the code: a heading, and names with their values (short reprs).
Frame = tuple[str, tuple[tuple[str, str], ...]]


# What show() was last given: drawn again when the pane's size changes.
Drawn = tuple["Source | None", list[Cursor], dict[str, str], "str | None", str, Frame]


def task_colour(index: int) -> str:
    return TASK_COLOURS[index % len(TASK_COLOURS)]


@functools.cache
def highlighted(source: Source) -> tuple[Text, ...]:
    """The module's lines, each coloured as Python (once per module)."""
    code = "\n".join(source.lines)
    whole = Syntax(code, "python", theme="monokai").highlight(code)
    return tuple(whole.split("\n", allow_blank=True))


def shown_lines(marked: list[int], focus: int, last: int, height: int) -> list[int | None]:
    """The line numbers to draw in `height` rows, None for a fold (⋮): every marked line
    with as much context around it as fits (from 3 lines down to none), and when even
    the marked lines do not fit, those nearest `focus`; with nothing marked, the lines
    around `focus`."""
    if not marked:
        first = max(min(focus - height // 2, last - height + 1), 1)
        return list(range(first, min(first + height, last + 1)))
    for context in (3, 2, 1, 0):
        wanted = sorted({n for m in marked for n in range(max(m - context, 1),
                                                          min(m + context, last) + 1)})  # fmt: skip
        rows: list[int | None] = []
        for n in wanted:
            if rows and rows[-1] is not None and n != rows[-1] + 1:
                rows.append(None)
            rows.append(n)
        if len(rows) <= height:
            return rows
    near = sorted(sorted(marked, key=lambda m: abs(m - focus))[: (height + 1) // 2])
    rows = []
    for n in near:
        if rows:
            rows.append(None)
        rows.append(n)
    return rows[:height]


class SourcePane(Static):
    """Plain text: a line of code, and a task's name, are never parsed as markup."""

    # A long line is cut at the pane's edge, never folded onto the next: a row is a line.
    DEFAULT_CSS = """
    SourcePane {
        text-wrap: nowrap;
        text-overflow: ellipsis;
        overflow: hidden;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[object, ...] | None = None
        self._drawn: Drawn | None = None

    def show(
        self,
        source: Source | None,
        cursors: list[Cursor],
        colours: dict[str, str],
        selected: str | None,
        note: str = "",
        frame: Frame = ("", ()),
    ) -> None:
        """Draw `source` around the selected task's cursor (else the first), each cursor's
        task named on its line; `note` (a line above the code) says what is amiss;
        `frame`, the selected task's function and its locals, goes below the code."""
        shown = (source, tuple(cursors), tuple(colours.items()), selected, note, frame,
                 self.size.height)  # fmt: skip
        if shown == self._shown:
            return
        self._shown = shown
        self._drawn = (source, cursors, colours, selected, note, frame)
        self.update(self._text(source, cursors, colours, selected, note, frame))

    def on_resize(self) -> None:
        # What fits depends on the height: a pane shown before its first layout (a
        # screen composed again for another stage) is drawn again once it has one.
        if self._drawn is not None:
            self._shown = None
            self.show(*self._drawn)

    def _text(
        self,
        source: Source | None,
        cursors: list[Cursor],
        colours: dict[str, str],
        selected: str | None,
        note: str,
        frame: Frame,
    ) -> Text:
        out = Text(no_wrap=True, overflow="ellipsis")
        # The note whole, on as many lines as it takes: the code is what is cut.
        told = textwrap.wrap(printable(note, 300), max(self.size.width, 20)) if note else []
        for line in told:
            out.append(line + "\n", "bold yellow")
        if source is None:
            if not note:
                out.append("no code to show yet: the first step starts the crawl", "dim")
            return out
        mine = [c for c in cursors if c.file == source.name and source.line(c.line) is not None]
        at: dict[int, list[Cursor]] = {}
        for cursor in mine:
            at.setdefault(cursor.line, []).append(cursor)
        focus = next((c for c in mine if c.task == selected and c.depth == 0), None)
        focus = focus or (mine[0] if mine else None)
        heading, names = frame
        below = self._locals(heading, names)
        height = max(self.size.height - len(told) - len(below.plain.splitlines()), 1)
        lines = highlighted(source)
        last = len(source.lines)
        for number in shown_lines(sorted(at), focus.line if focus else 1, last, height):
            if number is None:
                out.append(" " * GUTTER + "   ⋮\n", "dim")
                continue
            out.append_text(self._gutter(at.get(number, []), colours))
            current = focus is not None and number == focus.line
            out.append(f"{number:>{NUMBER - 1}} ", "bold" if current else "dim")
            code = lines[number - 1].copy()
            if current:
                code.stylize(CURRENT)
            out.append_text(code)
            out.append("\n")
        out.append_text(below)
        out.rstrip()  # no line after the last: the pane's height is all it has
        return out

    @staticmethod
    def _locals(heading: str, names: tuple[tuple[str, str], ...]) -> Text:
        """The selected task's frame (its locals), or its Fetcher's fields: one a line,
        shown literally."""
        out = Text()
        if not heading:
            return out
        out.append(printable(heading, 200) + "\n", "dim")
        for name, value in names:
            out.append(f"  {printable(name, 30)} = ", "bold")
            out.append(printable(value, 200) + "\n")
        return out

    @staticmethod
    def _gutter(here: list[Cursor], colours: dict[str, str]) -> Text:
        """The names of the tasks on a line, in their colours: as many as fit, then +N."""
        text = Text()
        if not here:
            text.append(" " * GUTTER)
            return text
        names = list(dict.fromkeys(c.task if c.depth == 0 else f"({c.task})" for c in here))
        text.append("▶ ", "bold")
        for i, name in enumerate(names):
            label = printable(name, 40)
            rest = f" +{len(names) - i - 1}" if i < len(names) - 1 else ""
            if i and len(text.plain) + 1 + len(label) + len(rest) > GUTTER:
                text.append(f" +{len(names) - i}", "dim")
                break
            if i:
                text.append(" ")
            task = name.strip("()")
            text.append(label, Style(color=colours.get(task, "white"), bold=name == task))
        text.truncate(GUTTER, overflow="crop", pad=True)
        return text
