"""The line under the status line: what limits the crawl now, with its evidence and the one
thing that would help (engine/observe/verdict.py says it; every source of a crawl carries it
in its snapshots: the live crawl, a replay, attach, serve and the cluster view)."""

from __future__ import annotations

from crawlscope.engine.observe.text import printable

from .text_lines import OneLine

# Before the evidence has held long enough to say anything.
NOT_YET = "what limits the crawl: a few seconds of evidence first"
# The verdict's cause, in the colour it is said in.
CAUSE_STYLE = {
    "server-bound": "bold cyan",
    "politeness-bound": "bold dark_khaki",
    "frontier-starved": "bold green",
    "CPU-bound": "bold magenta",
    "loop blocked": "bold red",
    "Redis-bound": "bold blue",
    "mixed": "bold yellow",
    "every process": "bold",
    "processes differ": "bold yellow",
}


class VerdictLine(OneLine):
    DEFAULT_CSS = """
    VerdictLine {
        height: 1;
    }
    """

    def show(self, verdict: str) -> None:
        """Draw `verdict` (a peer's or a file's text too: shown literally)."""
        if not verdict:
            line: tuple[tuple[str, str], ...] = ((f" {NOT_YET}", "dim"),)
        else:
            cause, colon, rest = printable(verdict, 300).partition(":")
            line = ((" ", ""), (cause, CAUSE_STYLE.get(cause, "bold")), (colon + rest, ""))
        if line != self._line:
            self._line = line
            self.refresh()
