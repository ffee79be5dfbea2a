"""Every key of the panels screens, in one table: the footer, the bindings and the command
palette are all made from it, so they cannot disagree."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from textual.binding import Binding, BindingType


@dataclass(frozen=True, slots=True)
class Key:
    keys: str  # Textual key names, comma-separated
    action: str  # the action it runs, with its arguments
    label: str  # the footer's word for it
    command: str = ""  # its title in the command palette ("": not offered there)
    explain: str = ""  # the palette's line under the title
    show: bool = True  # in the footer
    display: str | None = None  # how the footer writes the key
    # Priority: the key wins over the focused widget's own use of it (the workers
    # table's arrows, home/end and page keys, in a replay).
    priority: bool = False

    def binding(self) -> Binding:
        return Binding(
            self.keys,
            self.action,
            self.label,
            show=self.show,
            key_display=self.display,
            priority=self.priority,
        )


# p and space each have two keys; check_action shows the one that applies, so the footer
# says "Resume" while paused.
STEERING = (
    Key("p", "pause_all", "Pause", "Pause the crawl", "p: every worker stops before its next step"),
    Key("p", "resume_all", "Resume", "Resume the crawl", "p"),
    Key("space", "pause_worker", "Pause one", "Pause the selected worker",
        "space: after the fetch in hand"),
    Key("space", "resume_worker", "Resume one", "Resume the selected worker", "space"),
    Key("c", "cancel_worker", "Cancel", "Cancel the selected worker",
        "c: its URL goes back on the queue"),
    Key("delete", "cancel_worker", "Cancel", show=False),
    Key("a", "add_worker", "Add", "Add a worker", "a: one more task looping on q.get()"),
    Key("plus", "add_worker", "Add", show=False),
    Key("minus", "remove_worker", "Remove", "Remove a worker",
        "-: an idle one at once, else after its fetch", display="-"),
    # Not in the footer since the timeline's `t` is: with the crawl and a worker paused
    # ("Resume", "Resume one"), the longest the footer gets, "? Help q Quit" must still
    # end within 80 columns. The help, the palette and the docs list it.
    Key("s", "slowmo(1)", "Slow", "Slow motion: next step", "s: linger at each state change",
        show=False),
    Key("S", "slowmo(-1)", "Slow back", "Slow motion: previous step", "S", show=False),
)  # fmt: skip

TRANSPORT = (
    Key("p,space", "toggle_play", "Play/Pause", "Play or pause the recording", "p",
        display="p", priority=True),
    Key("full_stop,right", "step_event(1)", "Step", "Step one event forward", ".",
        display=".", priority=True),
    Key("comma,left", "step_event(-1)", "Back", "Step one event back", ",",
        display=",", priority=True),
    Key("right_square_bracket", "speed(1)", "Faster", "Play faster", "]",
        display="]", priority=True),
    Key("left_square_bracket", "speed(-1)", "Slower", "Play slower", "[",
        display="[", priority=True),
    Key("pagedown", "jump(0.1)", "+10%", "Jump 10% forward", "pgdn", show=False, priority=True),
    Key("pageup", "jump(-0.1)", "-10%", "Jump 10% back", "pgup", show=False, priority=True),
    Key("home", "jump_to(0)", "Start", "Go to the start", "home", show=False, priority=True),
    Key("end", "jump_to(1)", "End", "Go to the end", "end", show=False, priority=True),
)  # fmt: skip

# h opens the hosts screen, with its own keys on a host where the crawl can be steered.
# q runs the app's quit, which stops a live crawl gracefully before it exits.
COMMON = (
    # enter is the row's own action, as in any table: in the help and the palette, not
    # the footer, whose every key must fit at 80 columns. So is w: the status line says
    # "⚠ N warnings (w)" as soon as there is one, which is when it is wanted.
    Key("enter", "worker_detail", "Detail", "Show the selected worker in full",
        "enter: its await chain, step times, states and fetches", show=False),
    Key("w", "warnings", "Warn", "Show the warnings and loop health",
        "w: loop-blocked, stuck, join-stalled, politeness-bound, retry storm", show=False),
    Key("t", "timeline", "Time", "Show the timeline",
        "t: a lane per worker over time; enter on a fetch: its waterfall"),
    Key(
        "h",
        "hosts",
        "Hosts",
        "Show the hosts",
        "h: each host's queue, latency and politeness; block it, set its delay or limit",
    ),
    Key("slash", "find_url", "Find", "Why was a URL (not) fetched?",
        "/: its status or why not, its redirects, discovery path and time", show=False,
        display="/"),
    Key("f", "filter_workers", "Filter", "Filter the workers",
        "f: only those whose state, host or URL holds the text typed", show=False),
    Key("o", "sort_workers", "Sort", "Sort the workers by time in state",
        "o: the longest in their state first; o again: by worker", show=False),
    Key("v", "code_pane", "Code", "Show the code beside the workers",
        "v: the line of the engine where each worker's own code waits", show=False),
    Key("question_mark", "help", "Help", "Show what the states mean", "?", display="?"),
    Key("q", "app.quit", "Quit", "Quit", "q: stops the crawl gracefully, then the report"),
)  # fmt: skip


# The flight recorder's keys on a live crawl: look back while it runs, keep the last minute.
PAST = (
    Key(
        "r",
        "rewind",
        "Rewind",
        "Rewind: look back while the crawl runs",
        "r: the replay's keys over the recorded past; r or escape: back to now",
        show=False,
    ),
    Key(
        "F",
        "save_flight",
        "Save flight",
        "Save the last minute (a flight file)",
        "F: for crawlscope replay; the status line names the file",
        show=False,
    ),
)

# A rewind's own key, before the replay's.
REWIND = (
    Key("r,escape", "back_to_now", "Now", "Back to now", "r or escape: the live crawl again",
        display="r", priority=True),
)  # fmt: skip


@functools.cache
def screen_actions(keys: tuple[Key, ...]) -> tuple[str, ...]:
    """The actions of `keys` a screen checks (the app's own, quit and help, are the app's
    to check): worked out once, not on each frame."""
    names = (key.action.split("(")[0] for key in keys)
    return tuple(dict.fromkeys(n for n in names if not n.startswith("app.")))


def bindings(*tables: tuple[Key, ...]) -> list[BindingType]:
    return [key.binding() for table in tables for key in table]


def commands(*tables: tuple[Key, ...]) -> list[Key]:
    """The palette's entries: each titled action once, in table order."""
    return [key for table in tables for key in table if key.command]
