"""The side panel: what the loop just did, in a sentence, and the steps before it."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.widgets import Static

from crawlscope.engine.lecture.snapshot import Told
from crawlscope.engine.observe.text import printable


class StepNarration(Static):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[int, tuple[Told, ...], str, str] | None = None

    def show(self, steps: int, recent: Sequence[Told], note: str = "", where: str = "") -> None:
        """`steps`: callbacks run so far; `recent`: the last few, newest last; `where`:
        the line of code the last one is about ("line 629 ...")."""
        # The steps told, not only their count: a replay may show another crawl's step 5.
        key = (steps, tuple(recent), note, where)
        if key == self._shown:
            return
        self._shown = key
        text = Text()
        if note:
            text.append(note + "\n\n", "bold yellow")
        if recent:
            last = recent[-1]
            text.append(f"step {steps}: ", "bold")
            text.append(printable(last.sentence, 400) + "\n", "")
            if where:
                text.append("→ " + printable(where, 200) + "\n", "bold cyan")
            text.append(printable(last.raw, 200) + "\n\n", "dim italic")
            if len(recent) > 1:
                text.append("before that\n", "bold")
            for number, step in zip(range(steps - 1, 0, -1), reversed(recent[:-1]), strict=False):
                text.append(f"{number:5}  ", "dim")
                text.append(printable(step.raw, 120) + "\n")
        else:
            text.append("Nothing has run yet. Press n to run the first callback.", "dim")
        self.update(text)
