"""The footer is rebuilt only when the keys it shows change: each rebuild mounts a dozen
widgets and lays the whole screen out again, on the crawl's loop."""

from __future__ import annotations

from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey
from tui_support import config, crawler_of, until

from crawlscope.engine.sites.demo import DemoConfig
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.widgets.keys_footer import KeysFooter


class KeysScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [("g", "go", "go"), ("h", "halt", "halt")]

    def __init__(self) -> None:
        super().__init__()
        self.go_applies = True
        self.go_hidden = False

    def compose(self) -> ComposeResult:
        yield KeysFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "go":
            if self.go_hidden:
                return False  # not shown at all
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


async def test_a_key_that_stops_applying_is_greyed_out_in_place_and_a_hidden_one_rebuilds() -> None:
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
        assert rebuilds[0] == 0
        assert isinstance(footer, KeysFooter) and footer.greyings == 1
        # Greyed in place, it answers a click as a greyed key does: a bell, not the action.
        assert [k._disabled for k in footer.query(FooterKey) if k.action == "go"] == [True]
        screen.go_applies = True
        screen.refresh_bindings()
        await until(pilot, lambda: not go_key_greyed(footer), "the go key back")
        assert rebuilds[0] == 0
        # A key that goes out of sight changes what is shown: that takes a rebuild, once.
        screen.go_hidden = True
        for _ in range(5):
            screen.refresh_bindings()
        await until(pilot, lambda: rebuilds[0] == 1, "a rebuild")
        await pilot.pause()
        assert rebuilds[0] == 1
        assert "go" not in [k.action for k in footer.query(FooterKey)]


async def test_the_footer_is_settled_once_its_keys_are_rebuilt_or_the_app_has_no_focus() -> None:
    # What a crawl waits for before it starts (PanelsScreen.settle).
    app = KeysApp()
    async with app.run_test() as pilot:
        screen = app.screen
        footer = screen.query_one(KeysFooter)
        await until(pilot, lambda: footer.settled, "the first keys")
        screen.go_hidden = True
        footer.bindings_changed(screen)  # as the screen's signal calls it, a turn later
        assert not footer.settled  # a look at the keys is on its way
        with footer._context():  # the look, run now as the footer runs it
            footer._check(screen)  # it asks Textual for a rebuild
        assert footer.rebuilds == 2 and not footer.settled
        await until(pilot, lambda: footer.settled, "the keys rebuilt")
        assert "go" not in [key.action for key in footer.query(FooterKey)]
        # Unfocused, Textual leaves a rebuild until the app has the focus again: there
        # is nothing to wait for.
        app.app_focus = False
        screen.go_hidden = False
        footer.bindings_changed(screen)
        assert footer.settled


async def test_at_80_columns_help_and_quit_are_shown_whatever_the_keys_say() -> None:
    """The longest words the steering keys take (the crawl and its one worker paused:
    "Resume", "Resume one") still leave "? Help" and "q Quit" whole on an 80-column line."""
    app = CrawlScopeApp(LiveCrawl(make_config=config(1), demo=DemoConfig(pages=24), paused=True))
    async with app.run_test(size=(80, 24)) as pilot:
        crawler = await crawler_of(pilot)
        footer = app.screen.query_one(KeysFooter)

        def words() -> dict[str, FooterKey]:
            return {key.description: key for key in footer.query(FooterKey)}

        await until(pilot, lambda: 0 in crawler.workers, "the worker")
        assert crawler.pause(0)  # as space on its row does

        await until(pilot, lambda: footer.settled and "Resume one" in words(), "Resume one")
        await pilot.pause()
        for word in ("Resume", "Resume one", "Help", "Quit"):
            region = words()[word].region
            assert region.width and region.right <= 80, f"{word!r} is cut: {region}"
