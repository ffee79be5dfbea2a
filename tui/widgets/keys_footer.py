"""Textual's footer, rebuilt only when the keys it shows change.

Textual's Footer rebuilds all its key widgets every time a screen says its bindings may
have changed, and a rebuild mounts a dozen widgets and lays the whole screen out again:
20 to 110 ms on the crawl's loop. A screen says so often (a focus change, the first
rows, a key that stops applying), usually with nothing visible changed; a busy loop then
runs one rebuild after another. This one rebuilds at most once per screen refresh, and
only when the keys shown or their words change: a key that stops or starts applying is
greyed out or back in place, and nothing at all is done when nothing shown changed.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer

from ..textual_private import FooterKey, grey_footer_key

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
    # Its keys are widgets of their own; it draws only its background (see PanelsScreen).
    BLANK = True

    def __init__(self) -> None:
        super().__init__()
        self._shown: Shown | None = None
        self._check_pending = False
        self.rebuilds = 0  # how many times the keys were rebuilt: what the tests count
        self.greyings = 0  # ...and greyed out or back in place, with no rebuild
        self._rebuilt = 0  # rebuilds done: Textual's runs after a refresh, then mounts

    @property
    def settled(self) -> bool:
        """Its keys are the screen's as last told, rebuilt if they had to be (their
        layout may still be on its way); or the app is not focused, and Textual leaves
        the rebuild until it is."""
        if not self.app.app_focus:
            return True
        rebuilt = self._rebuilt == self.rebuilds
        return rebuilt and not self._check_pending and self._shown is not None

    async def recompose(self) -> None:
        await super().recompose()
        self._rebuilt = self.rebuilds

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
        if not self._grey_in_place(keys):
            self.rebuilds += 1
            super().bindings_changed(screen)
        self._shown = keys

    def _grey_in_place(self, keys: Shown) -> bool:
        """When the same keys are shown and only whether they apply moved (a worker row
        highlighted, the crawl started), grey them out or back in place: a change of
        style, drawn without a rebuild or a layout. False if a rebuild is needed."""
        if self._shown is None or [_but_applies(k) for k in keys] != [
            _but_applies(k) for k in self._shown
        ]:
            return False
        applies = {(key, action): enabled for key, action, _words, enabled, _show in keys}
        widgets = [(w, applies.get((w.key, w.action))) for w in self.query(FooterKey)]
        if not widgets or any(enabled is None for _w, enabled in widgets):
            return False  # not the keys recorded (none yet, or a rebuild on its way)
        for widget, enabled in widgets:
            grey_footer_key(widget, bool(enabled))
            widget.set_class(not enabled, "-disabled")
        self.greyings += 1
        return True


def _but_applies(key: tuple[str, str, str, bool, bool]) -> tuple[str, str, str, bool]:
    name, action, words, _applies, show = key
    return (name, action, words, show)
