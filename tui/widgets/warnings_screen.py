"""`w`: the crawl's warnings (lints), newest first, over the panels; the status line
counts them. A screen of its own rather than a panel: the panels already share the
terminal four ways, and a warning is read now and then, not watched.

Warnings are crawled text and may come from another process: drawn as Text, escaped.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from crawlscope.engine.lints.lint import LintKind
from crawlscope.engine.observe.contract import ObservedCrawl
from crawlscope.engine.observe.snapshot import Snapshot
from crawlscope.engine.observe.text import printable

from ..format import clock
from .timing_text import millis

REFRESH_EVERY = 0.5  # seconds

KIND_STYLE = {
    LintKind.LOOP_BLOCKED: "bold red",
    LintKind.STUCK: "bold yellow",
    LintKind.JOIN_STALLED: "bold magenta",
    LintKind.POLITENESS: "bold cyan",
    LintKind.RETRY_STORM: "bold red",
}


def warnings_text(snap: Snapshot) -> Text:
    out = Text()  # wrapped: a warning's URL and line are read whole
    lag = f"loop lag p50 {millis(snap.loop_lag_p50)}  p99 {millis(snap.loop_lag_p99)}"
    out.append(f"{lag} (last minute)\n", "bold")
    if snap.holds:
        out.append("held the loop longest:\n", "bold underline")
        for hold in snap.holds:
            out.append(f"  {millis(hold.seconds):>6}  worker {hold.worker} {printable(hold.state)}")
            if hold.line:
                out.append(f"  gave it back at {printable(hold.line, 80)}", "dim")
            if hold.url:
                out.append(f"  {printable(hold.url, 120)}")
            out.append("\n")
    shown = len(snap.warnings)
    noun = "warning" if snap.warning_count == 1 else "warnings"
    told = f"{snap.warning_count} {noun}" + (
        f" (the latest {shown} shown)" if snap.warning_count > shown else ""
    )
    out.append(f"\n{told}\n", "bold underline")
    if not snap.warnings:
        out.append("  none\n", "dim")
    for lint in reversed(snap.warnings):
        out.append(f"  {clock(max(lint.t, 0.0)):>7}  ")  # a peer's clock may be off
        out.append(f"{lint.kind.value:<16}", KIND_STYLE.get(lint.kind, "bold"))
        out.append(f" {printable(lint.text, 300)}\n")
    return out


class WarningsScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,w,q", "dismiss", "Close", show=True),
    ]

    def __init__(self, source: ObservedCrawl) -> None:
        super().__init__()
        self.source = source

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="warnings-body") as body:
            body.border_title = "warnings"
            yield Static(id="warnings-text")

    def on_mount(self) -> None:
        self.redraw()
        self.set_interval(REFRESH_EVERY, self.redraw)

    def text(self) -> Text:
        return warnings_text(self.source.snapshot((), rows=False))

    def redraw(self) -> None:
        self.query_one("#warnings-text", Static).update(self.text())
