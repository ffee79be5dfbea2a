"""The docs' key tables are made from the bindings (docs/hooks/keys.py): every key a screen
binds is in its table, every screen with keys of its own has a table on some page, and
every page's marker names a table that exists."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from docs_support import DOCS, hook
from textual.binding import Binding
from textual.keys import format_key

import crawlscope.tui

keys = hook("keys")

# Classes with bindings of their own that need no table of their own, and why.
NO_TABLE = {
    "crawlscope.tui.widgets.cursor_lines:CursorLines": "the chains panel's base: in `chains`",
    "crawlscope.tui.lecture.stage_replay:LectureReplayApp": "q, under every replayed stage",
    "crawlscope.tui.lecture.stage_watched:LectureWatchApp": "q alone: a viewer only quits",
}


def own_bindings(cls: type) -> list[Binding]:
    return [
        item if isinstance(item, Binding) else Binding(*item)
        for item in cls.__dict__.get("BINDINGS", ())
    ]


def classes_with_keys() -> set[str]:
    prefix = crawlscope.tui.__name__ + "."
    found = set()
    for info in pkgutil.walk_packages(crawlscope.tui.__path__, prefix):
        module = importlib.import_module(info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ == info.name and own_bindings(cls):
                found.add(f"{info.name}:{name}")
    return found


@pytest.mark.parametrize("screen", sorted(keys.SCREENS))
def test_every_key_a_screen_binds_is_in_its_table(screen: str) -> None:
    cls = keys._load(keys.SCREENS[screen][0])
    listed = " ".join(k for k, _ in keys.rows(screen))
    bound = [b for base in cls.__mro__ if base.__module__.startswith("crawlscope.")
             for b in own_bindings(base)]  # fmt: skip
    assert bound
    for binding in bound:
        for name in binding.key.split(","):
            shown = keys.SPELLED.get(name, format_key(name))
            assert f"`{shown}`" in listed, (screen, name)


def test_a_key_says_what_it_does() -> None:
    rows = keys.rows("live")
    assert ("`c`, `delete`", "Cancel the selected worker (its URL goes back on the queue)") in rows
    # p pauses or resumes, whichever applies: both are listed.
    assert [what for key, what in rows if key == "`p`"] == [
        "Pause the crawl (every worker stops before its next step)",
        "Resume the crawl",
    ]
    assert dict(keys.rows("hosts"))["`b`"] == "Block/unblock"


def test_every_screen_with_keys_has_a_table() -> None:
    tabled = {where for where, _ in keys.SCREENS.values()}
    missing = classes_with_keys() - tabled - set(NO_TABLE)
    assert not missing, f"screens whose keys no docs page lists: {sorted(missing)}"
    assert not (set(NO_TABLE) - classes_with_keys()), "an exception for a class now gone"


def test_every_table_is_on_a_page_and_every_marker_names_one() -> None:
    pages = "\n".join(page.read_text() for page in DOCS.glob("*.md"))
    asked = set(keys.MARKER.findall(pages))
    assert asked == set(keys.SCREENS)
    with pytest.raises(KeyError, match="no key table called 'gone'"):
        keys.fill("<!-- keys: gone -->\n")
    assert "| `w` |" in keys.fill("text\n<!-- keys: live -->\nmore")
