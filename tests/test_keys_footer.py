"""The footer is rebuilt only when the keys it shows change: each rebuild mounts a dozen
widgets and lays the whole screen out again, on the crawl's loop."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey
from tui_support import until

from crawlscope.tui.widgets.keys_footer import KeysFooter


class KeysScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [("g", "go", "go"), ("h", "halt", "halt")]

    def __init__(self) -> None:
        super().__init__()
        self.go_applies = True

    def compose(self) -> ComposeResult:
        yield KeysFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "go":
            return True if self.go_applies else None  # None: shown greyed out
        return True

    def action_go(self) -> None: ...

    def action_halt(self) -> None: ...


class KeysApp(App[None]):
    def get_default_screen(self) -> Screen[None]:
        return KeysScreen()


def counted(footer: Footer) -> list[int]:
    """How many times the footer rebuilds its keys, counted at the rebuild itself."""
    calls = [0]
    rebuild = footer.recompose

    async def counting() -> None:
        calls[0] += 1
        await rebuild()

    footer.recompose = counting  # type: ignore[method-assign]
    return calls


def go_key_greyed(footer: Footer) -> bool:
    keys = [key for key in footer.query(FooterKey) if key.action == "go"]
    return len(keys) == 1 and keys[0].has_class("-disabled")


async def test_the_footer_is_rebuilt_once_and_only_when_a_key_stops_applying() -> None:
    app = KeysApp()
    async with app.run_test() as pilot:
        screen = app.screen
        assert isinstance(screen, KeysScreen)
        footer = screen.query_one(Footer)
        await until(pilot, lambda: bool(footer.query(FooterKey)), "the first keys")
        rebuilds = counted(footer)
        for _ in range(5):  # said to change, with nothing shown changed
            screen.refresh_bindings()
            await pilot.pause()
        screen.go_applies = False
        for _ in range(5):  # one change, said five times
            screen.refresh_bindings()
        await until(pilot, lambda: go_key_greyed(footer), "the go key greyed out")
        await pilot.pause()
        assert rebuilds[0] == 1
