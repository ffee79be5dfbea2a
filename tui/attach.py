"""Watching a crawl that runs elsewhere (`crawlscope attach URL`), and showing who watches.

`Attached` is the third kind of thing the app opens, beside a live crawl and a
recording: a monitor's URL. Its screen is the live screen, steering through the
monitor when the URL carried the token, and with one line more above the footer: the
connection's state, whether the view is read-only, and who else is watching. The crawl's
own TUI, when it serves a monitor (`tui --monitor`), shows the same line for the lecturer.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.text import Text
from textual.widget import Widget

from crawlscope.engine.observe.contract import CrawlControls, ObservedCrawl
from crawlscope.engine.observe.snapshot import Snapshot
from crawlscope.engine.observe.text import printable
from crawlscope.engine.remote.client import Link, RemoteControls, RemoteCrawl

from .screens.panels import FRAMES_PER_SECOND
from .watched_base import WatchedBase

VIEWERS_NAMED = 6  # addresses named on the line; the rest are counted

# Told at the first frame: what to draw, how to steer it (None: read-only), what it crawls.
AttachStarted = Callable[[ObservedCrawl, CrawlControls | None, str], None]


@dataclass
class Attached:
    """A crawl in another process, reached through its monitor's URL."""

    url: str
    remote: RemoteCrawl = field(init=False)

    def __post_init__(self) -> None:
        self.remote = RemoteCrawl(self.url)

    async def run(self, started: AttachStarted) -> None:
        """Connect (and again whenever the connection is lost); tell `started` at the
        first frame. Runs until cancelled."""
        remote = self.remote
        connection = asyncio.create_task(remote.run(), name="attach")
        try:
            await remote.ready.wait()
            started(remote, RemoteControls(remote) if remote.steer else None, self.site)
            await connection
        finally:
            connection.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await connection

    @property
    def site(self) -> str:
        roots = self.remote.config.roots if self.remote.ready.is_set() else ()
        return " ".join(roots)


@dataclass(frozen=True, slots=True)
class WatchView:
    """What the line above the footer says."""

    role: str  # "attached" or "monitor"
    link: str  # connecting, connected, ended, dropped; or the monitor's URL
    why: str  # what ended or dropped the connection
    read_only: bool
    viewers: tuple[str, ...]
    bad: str = ""  # what was wrong with the last message dropped, if one was


def attached_view(remote: RemoteCrawl) -> WatchView:
    return WatchView(
        "attached",
        remote.link.value,
        remote.why,
        remote.ready.is_set() and not remote.steer,
        remote.viewers,
        remote.bad,
    )


def viewers_words(viewers: tuple[str, ...]) -> str:
    """'3 viewers: 10.0.0.5 x2, 127.0.0.1': the count, then each address once."""
    noun = "viewer" if len(viewers) == 1 else "viewers"
    counts = Counter(viewers)
    named = [f"{a} x{n}" if n > 1 else a for a, n in counts.most_common(VIEWERS_NAMED)]
    more = len(counts) - len(named)
    tail = f", +{more} more" if more > 0 else ""
    return f"{len(viewers)} {noun}" + (f": {', '.join(named)}{tail}" if viewers else "")


LINK_STYLE = {
    Link.CONNECTING.value: "bold black on grey70",
    Link.CONNECTED.value: "bold black on green",
    Link.ENDED.value: "bold white on blue",
    Link.DROPPED.value: "bold white on red",
}


class WatchBar(Widget):
    """One line: how this screen reaches the crawl, and who is watching it."""

    DEFAULT_CSS = """
    WatchBar {
        height: 1;
        background: $panel;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._view: WatchView | None = None

    def show(self, view: WatchView) -> None:
        if view != self._view:
            self._view = view
            self.refresh()

    def render(self) -> Text:
        view = self._view
        line = Text(no_wrap=True, overflow="ellipsis")
        if view is None:
            return line
        line.append(f" {view.role.upper()} ", "bold black on cyan")
        if view.role == "attached":
            line.append(f" {view.link} ", LINK_STYLE.get(view.link, "bold"))
            if view.why:
                line.append(f" {printable(view.why, 120)}", "bold red")
            if view.bad:  # first, so that a narrow terminal still shows it
                line.append(f" {printable(view.bad, 160)} ", "bold red")
        else:
            line.append(f" {printable(view.link, 200)}", "dim")
        if view.read_only:
            line.append("  read-only", "bold yellow")
        line.append(f"   {printable(viewers_words(view.viewers), 300)}", "bold")
        return line


class WatchedScreen(WatchedBase):
    """The live screen with the watch line; `who_watches()` tells it what the line says."""

    def __init__(
        self,
        who_watches: Callable[[], WatchView],
        *,
        fps: float = FRAMES_PER_SECOND,
        reproducible: bool = False,
    ) -> None:
        self._watch_bar = WatchBar(id="watch-bar")
        super().__init__(self._watch_bar, fps=fps, reproducible=reproducible)
        self.who_watches = who_watches
        self._errors_seen = 0

    def show_bar(self) -> None:
        self._watch_bar.show(self.who_watches())

    def observe(self, source: ObservedCrawl, site: str) -> None:
        super().observe(source, site)
        if isinstance(source, RemoteCrawl):
            # The crawl steered from anywhere: drawn now, not at the next of a few frames
            # a second (serve's class screen draws 5).
            source.steered = self.redraw

    def read_only(self) -> bool:
        return self.who_watches().read_only

    def redraw(self, table: bool = True, pulse: bool = False, rows: bool = False) -> None:
        super().redraw(table, pulse, rows)
        if self._widgets_found:
            self._tell_refusals()

    def bindings_state(self, snap: Snapshot) -> tuple[object, ...]:
        view = self.who_watches()
        return (*super().bindings_state(snap), view.read_only, view.link)

    def _tell_refusals(self) -> None:
        # What the monitor refused (a worker that has just gone, say), once each.
        remote = self.source
        if not isinstance(remote, RemoteCrawl):
            return
        fresh = min(remote.refused - self._errors_seen, len(remote.errors))
        self._errors_seen = remote.refused
        for error in list(remote.errors)[len(remote.errors) - fresh :]:
            self.notify(printable(error, 200), title="the monitor refused", markup=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("pause_all", "pause_worker", "cancel_worker", "add_worker"):
            view = self.who_watches()
            if view.role == "attached" and view.link != Link.CONNECTED.value:
                return None  # nothing to send it to
        return super().check_action(action, parameters)
