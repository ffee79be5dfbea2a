"""Textual's footer, rebuilt only when the keys it shows change.

Textual's Footer rebuilds all its key widgets every time a screen says its bindings may
have changed, and a rebuild mounts a dozen widgets and lays the whole screen out again:
20 to 110 ms on the crawl's loop. A screen says so often (a focus change, the first
rows, a key that stops applying), usually with nothing visible changed; a busy loop then
runs one rebuild after another. This one rebuilds at most once per screen refresh, and
not at all when every key, its words and whether it applies are as already shown.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer

Shown = tuple[tuple[str, str, str, bool, bool], ...]


def shown_keys(screen: Screen[object]) -> Shown:
    """What a footer draws for `screen`: each key, its action and words, whether it
    applies, and whether it is shown at all."""
    shown = []
    for key, active in screen.active_bindings.items():
        binding = active.binding
        shown.append((key, binding.action, binding.description, active.enabled, binding.show))
    return tuple(shown)


class KeysFooter(Footer):
    def __init__(self) -> None:
        super().__init__()
        self._shown: Shown | None = None
        self._check_pending = False
        self.rebuilds = 0  # how many times the keys were rebuilt: what the tests count

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self._check_pending:
            return  # a look is on its way, and it reads the bindings as they are then
        self._check_pending = True
        self.call_after_refresh(self._check, screen)

    def _check(self, screen: Screen[object]) -> None:
        self._check_pending = False
        if not (self.app.app_focus and self.is_attached and screen is self.screen):
            # The footer would not rebuild now (Textual's own conditions): leave what it
            # showed unrecorded, so the next change is looked at afresh.
            super().bindings_changed(screen)
            return
        keys = shown_keys(screen)
        if keys == self._shown:
            return
        self._shown = keys
        self.rebuilds += 1
        super().bindings_changed(screen)
