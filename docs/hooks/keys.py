"""The docs' key tables, made from the key bindings themselves: a key added to a screen
shows in the docs with no edit, and a key removed leaves them. A page asks for a screen's
table with a marker on a line of its own, `<!-- keys: live -->`; a name not in SCREENS
stops the build (mkdocs build --strict turns the error into a failed run)."""

from __future__ import annotations

import importlib
import re
from typing import Any

from textual.binding import Binding
from textual.keys import format_key

# Each marker's name -> the class whose bindings it lists, and the words over its table.
SCREENS: dict[str, tuple[str, str]] = {
    "live": ("crawlscope.tui.screens.live:LiveScreen", "The live crawl (`crawlscope`, `tui`)"),
    "replay": ("crawlscope.tui.screens.replay:ReplayScreen", "A replay (`replay FILE`)"),
    "watched": (
        "crawlscope.tui.watched_base:WatchedBase",
        "A crawl watched from elsewhere (`attach`, the cluster view)",
    ),
    "hosts": ("crawlscope.tui.screens.hosts:HostsScreen", "The hosts screen (`h`)"),
    "detail": (
        "crawlscope.tui.widgets.worker_detail_screen:WorkerDetailScreen",
        "A worker in full (`enter`)",
    ),
    "warnings": ("crawlscope.tui.widgets.warnings_screen:WarningsScreen", "The warnings (`w`)"),
    "help": ("crawlscope.tui.widgets.help_screen:HelpScreen", "The help (`?`)"),
    "filter": ("crawlscope.tui.screens.worker_filter:FilterScreen", "The workers filter (`f`)"),
    "find": ("crawlscope.tui.widgets.find_url_screen:FindUrlScreen", "A URL's fate (`/`)"),
    "timeline": ("crawlscope.tui.widgets.timeline_screen:TimelineScreen", "The timeline (`t`)"),
    "waterfall": (
        "crawlscope.tui.widgets.waterfall_screen:WaterfallScreen",
        "A fetch's waterfall (`enter` on the timeline)",
    ),
    "rewind": ("crawlscope.tui.screens.rewind:RewindScreen", "Rewind (`r` on a live crawl)"),
    "chains": ("crawlscope.tui.widgets.redirect_tree:RedirectTree", "The redirect chains panel"),
    "lecture": ("crawlscope.tui.lecture.app:LectureApp", "Anywhere in the lecture"),
    "stage": ("crawlscope.tui.lecture.stage_screen:StageScreen", "Stages 1 and 2, live"),
    "stage-code": (
        "crawlscope.tui.lecture.stage_panels:StagePanels",
        "Stages 1 and 2: the code pane and help (live, replayed, watched)",
    ),
    "stage-replay": (
        "crawlscope.tui.lecture.stage_replay:StageReplayScreen",
        "Stages 1 and 2, replayed",
    ),
    "stage3": ("crawlscope.tui.lecture.stage3:AsyncioStage", "Stage 3 in the lecture"),
    "traceback": (
        "crawlscope.tui.lecture.widgets.traceback_screen:TracebackScreen",
        "The traceback (`t`)",
    ),
}
# Keys Textual draws as a symbol, spelled as a reader would type them.
SPELLED = {"enter": "enter", "delete": "delete", "escape": "esc"}
MARKER = re.compile(r"^<!-- keys: ([\w-]+) -->$", re.M)


def _load(where: str) -> Any:
    module, _, name = where.partition(":")
    return getattr(importlib.import_module(module), name)


def rows(screen: str) -> list[tuple[str, str]]:
    """(keys, what they do) for each action of `screen`'s bindings, in their order; keys
    that run one action share a row. A screen's own Key table (tui/keys.py) gives the
    palette's longer words where it has them."""
    if screen not in SCREENS:
        raise KeyError(f"no key table called {screen!r}; known: {', '.join(SCREENS)}")
    cls = _load(SCREENS[screen][0])
    words: dict[str, str] = {}
    for key in getattr(cls, "KEYS", ()):
        if key.command and key.action not in words:
            said = key.explain.partition(": ")[2]
            words[key.action] = f"{key.command} ({said})" if said else key.command
    by_action: dict[str, tuple[list[str], str]] = {}
    taken: set[str] = set()
    # A class's bindings, then those it inherits (as Textual merges them: a key bound
    # nearer the class wins). Within a class one key may run two actions, of which
    # check_action enables one at a time (p: pause or resume): both are listed.
    for base in cls.__mro__:
        if not base.__module__.startswith("crawlscope."):
            break  # Textual's own (focus, copy, the app's ctrl+q): not this screen's keys
        bound_here: set[str] = set()
        for item in base.__dict__.get("BINDINGS", ()):
            binding = item if isinstance(item, Binding) else Binding(*item)
            names = [name.strip() for name in binding.key.split(",")]
            names = [name for name in names if name not in taken]
            if not names:
                continue
            bound_here.update(names)
            keys, _ = by_action.setdefault(
                binding.action, ([], words.get(binding.action) or binding.description)
            )
            keys.extend(SPELLED.get(name, format_key(name)) for name in names)
        taken |= bound_here
        if not getattr(base, "inherit_bindings", True):
            break
    return [(", ".join(f"`{k}`" for k in keys), what) for keys, what in by_action.values()]


def table(screen: str) -> str:
    found = rows(screen)  # first: it names a screen that is not there
    lines = [f"**{SCREENS[screen][1]}**", "", "| key | what it does |", "|---|---|"]
    lines += [f"| {keys} | {what.replace('|', '&#124;')} |" for keys, what in found]
    return "\n".join(lines) + "\n"


def fill(markdown: str) -> str:
    return MARKER.sub(lambda m: table(m.group(1)), markdown)


def on_page_markdown(markdown: str, **_: Any) -> str:
    return fill(markdown)
