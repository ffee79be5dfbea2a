"""What every panels screen offers of code: `v`, the code pane beside the panels, a cursor
on the line where each worker's own code waits (widgets/code_pane.py). Shown at once where
the app asks for it and the screen is wide enough (the lecture's stage 3), else on `v`."""

from __future__ import annotations

from textual.screen import Screen

from crawlscope.engine.observe.snapshot import Snapshot
from crawlscope.engine.observe.workers import WorkerView

from ..widgets.code_pane import CHAPTER, CodePane

# Narrower than this, the pane waits for `v`: the workers table needs the width.
CODE_FITS = 140
WHY_NONE = (
    "no worker's position to show: a recording keeps none (a live crawl, attach and serve do)"
)


class CodeViews(Screen[None]):
    # Whether the pane is shown: None until `v`, then the app's wish and the width decide.
    code_pane: bool | None = None

    def code_shown(self) -> bool:
        if self.code_pane is not None:
            return self.code_pane
        return bool(getattr(self.app, "code_beside", False)) and self.size.width >= CODE_FITS

    def selected(self) -> WorkerView | None:
        """The worker the pane centres on: the panels' highlighted row."""
        return None

    def show_code(self, snap: Snapshot) -> None:
        """Draw the pane from the frame's rows, when it is shown (else nothing is read)."""
        pane = self.query_one(CodePane)
        shown = self.code_shown()
        if pane.display != shown:
            pane.display = shown
        if not shown:
            return
        selected = self.selected()
        chosen = selected.id if selected is not None else None
        module = pane.show_workers(snap.workers, chosen, WHY_NONE)
        said = CHAPTER.get(module)
        title = f"{module} · {said}" if said else module
        if pane.border_title != title:
            pane.border_title = title

    def code_follows(self) -> None:
        """Drawn again now from the last frame's rows (the highlighted row moved)."""
        snap = getattr(self, "snap", None)
        if isinstance(snap, Snapshot):
            self.show_code(snap)

    def action_code_pane(self) -> None:
        self.code_pane = not self.code_shown()
        self.code_follows()
