"""The crawl's controls in the command palette (ctrl+p), offered only where they apply."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from .app import CrawlScopeApp

# (title, action, help): the same actions the keys run.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("Pause the crawl", "pause_all", "p: every worker stops before its next step"),
    ("Resume the crawl", "resume_all", "p"),
    ("Pause the selected worker", "pause_worker", "space: after the fetch in hand"),
    ("Resume the selected worker", "resume_worker", "space"),
    ("Cancel the selected worker", "cancel_worker", "c: its URL goes back on the queue"),
    ("Add a worker", "add_worker", "a: one more task looping on q.get()"),
    ("Remove a worker", "remove_worker", "-: an idle one at once, else after its fetch"),
    ("Slow motion: next step", "slowmo(1)", "s: linger at each state change"),
    ("Slow motion: previous step", "slowmo(-1)", "S"),
    ("Show what the states mean", "help", "?"),
    ("Quit and print the report", "quit", "q: stops the crawl gracefully"),
)


class CrawlCommands(Provider):
    @property
    def _app(self) -> CrawlScopeApp:
        return self.app  # type: ignore[return-value]

    def _available(self) -> list[tuple[str, str, str]]:
        app = self._app
        return [entry for entry in COMMANDS if app.action_applies(entry[1])]

    async def discover(self) -> Hits:
        for title, action, help_text in self._available():
            yield DiscoveryHit(title, partial(self._app.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, action, help_text in self._available():
            score = matcher.match(title)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(title),
                    partial(self._app.run_action, action),
                    help=help_text,
                )
