"""Turning engine values into short, safe text for the widgets.

Every crawled string goes through `crawled()`: escaped by the engine's `printable` and
wrapped in a rich `Text`, which is never parsed as markup.
"""

from __future__ import annotations

from rich.text import Text

from crawlscope.engine.observe.text import printable
from crawlscope.engine.observe.workers import WorkerState

STATE_STYLE: dict[WorkerState, str] = {
    WorkerState.WAITING: "dim",
    WorkerState.ROBOTS: "blue",
    WorkerState.THROTTLED: "dark_khaki",
    WorkerState.CONNECTING: "yellow",
    WorkerState.HEADERS: "cyan",
    WorkerState.BODY: "green",
    WorkerState.PARSING: "bold magenta",
    WorkerState.BACKOFF: "bold dark_orange",
    WorkerState.PAUSED: "bold black on yellow",
    WorkerState.CANCELLED: "bold red",
    WorkerState.STOPPED: "dim italic",
}


def state_style(state: WorkerState) -> str:
    # A state added to the engine later still shows, just without a colour of its own.
    return STATE_STYLE.get(state, "")


# A dash where a figure would depend on the wall clock (frozen screenshots and tests).
NO_FIGURE = "-"
# A task suspended on a Future: drawn in every font, a browser's terminal too ("⏸" and
# "⧗" are in no font Debian's Chromium has: empty boxes in the class's page).
WAITS = "||"


def short_url(url: str, origin: str) -> str:
    """`url` without `origin` when it is on that origin: /page/3 reads better than the whole."""
    if origin and url.startswith(origin) and url[len(origin) : len(origin) + 1] in ("/", ""):
        return url[len(origin) :] or "/"
    return url


def crawled(text: str, limit: int | None = None, style: str = "") -> Text:
    """Untrusted text, escaped and shown literally."""
    return Text(printable(text, limit), style=style, no_wrap=True, overflow="ellipsis")


def size(n: int) -> str:
    if n < 1000:
        return f"{n}B"
    if n < 1_000_000:
        return f"{n / 1000:.1f}k"
    return f"{n / 1_000_000:.1f}M"


def duration(seconds: float) -> str:
    """Compact and of near-constant width: 0.25s, 3.1s, 42s, 5m07s, 2h05m."""
    if seconds < 0.995:
        return f"{seconds:.2f}s"
    if seconds < 9.95:
        return f"{seconds:.1f}s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m"


def clock(seconds: float) -> str:
    """Elapsed time as m:ss.s (or h:mm:ss once past the hour)."""
    if seconds >= 3600:
        return f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:{int(seconds % 60):02d}"
    return f"{int(seconds // 60)}:{seconds % 60:04.1f}"


def count(n: int) -> str:
    return f"{n:,}"
