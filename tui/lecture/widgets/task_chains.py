"""Stage 2: each Task's generator chain, the chapter's figure 5.3 drawn live.

For every task: its name and state, then the yield-from chain from the outermost
generator (the worker) down to `Future.__iter__`, each with the line it is suspended
on (gi_frame.f_lineno) and, on `o`, its last bytecode offset (f_lasti), and last the
Future the task waits on.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from crawlscope.engine.lecture.snapshot import TaskInsides
from crawlscope.engine.observe.text import printable

from ...format import WAITS


class TaskChains(Static):
    """Plain text: crawled URLs are never parsed as markup."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._shown: tuple[TaskInsides, ...] | None = None
        self.frozen = False  # hide f_lineno/f_lasti, which differ between Python releases
        # The bytecode offsets (f_lasti): for those who want them (`o`); a student reads
        # the line, which the code pane shows.
        self.offsets = False

    @property
    def shown(self) -> tuple[TaskInsides, ...]:
        return self._shown or ()

    def show(self, tasks: tuple[TaskInsides, ...], force: bool = False) -> None:
        if tasks == self._shown and not force:
            return
        self._shown = tasks
        self.update(self._render_tasks(tasks))

    def _render_tasks(self, tasks: tuple[TaskInsides, ...]) -> Text:
        text = Text(no_wrap=True, overflow="ellipsis")
        for task in tasks:
            marker = "▶ " if task.resumed else "  "
            text.append(marker, "bold green")
            text.append(task.name, "bold reverse" if task.resumed else "bold")
            text.append(f"  {task.state}", "cyan")
            if task.url:
                text.append(f"  {printable(task.url, 60)}")
            noun = "step" if task.steps == 1 else "steps"
            text.append(f"  ({task.steps} {noun})\n", "dim")
            file = ""
            for depth, link in enumerate(task.links):
                text.append("    " + "  " * depth + ("└ " if depth else ""))
                text.append(link.function, "bold" if depth == 0 else "")
                # The file only where it changes: the chain is narrow enough to read.
                where = link.file if link.file != file else ""
                file = link.file
                if not self.frozen:
                    where = f"{where}:{link.line}"
                    if self.offsets:
                        where += f"  f_lasti {link.lasti}"
                text.append(f"  {where}\n" if where else "\n", "dim")
            if task.waits_on:
                text.append("    " + "  " * len(task.links) + f"{WAITS} waits on ", "yellow")
                text.append(printable(task.waits_on, 60) + "\n", "yellow")
                if task.callbacks:
                    # What its resolution will run: the chapter's "the Task's step".
                    then = ", ".join(printable(c, 60) for c in task.callbacks)
                    text.append("    " + "  " * len(task.links) + f"   then runs {then}\n", "dim")
            text.append("\n")
        if not tasks:
            text.append("no tasks yet: the first step creates the crawl task", "dim")
        return text
