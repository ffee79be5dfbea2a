"""The screen's keys in the command palette (ctrl+p), offered only where they apply.

The entries come from the same table as the bindings (tui/keys.py), so the palette and
the footer always name the same actions.
"""

from __future__ import annotations

from collections.abc import Coroutine
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider

from .keys import Key, commands
from .screens.panels import PanelsScreen


class CrawlCommands(Provider):
    def _available(self) -> list[Key]:
        screen = self.screen  # the screen the palette was opened on
        if not isinstance(screen, PanelsScreen):
            return []
        return [key for key in commands(screen.KEYS) if screen.action_applies(key.action)]

    def _run(self, key: Key) -> partial[Coroutine[Any, Any, None]]:
        return partial(self.screen.run_action, key.action)

    async def discover(self) -> Hits:
        for key in self._available():
            yield DiscoveryHit(key.command, self._run(key), help=key.explain)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for key in self._available():
            score = matcher.match(key.command)
            if score > 0:
                yield Hit(score, matcher.highlight(key.command), self._run(key), help=key.explain)
