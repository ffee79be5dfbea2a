"""A fetch's waterfall over the screen: where the URL's time went, part by part, from
being queued to its record (engine/trace/waterfall.py). Crawled text drawn as Text."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from crawlscope.engine.observe.text import printable
from crawlscope.engine.observe.timeline import Feed
from crawlscope.engine.observe.waterfall import PARTS, Waterfall, bar, waterfall_of

from .timing_text import millis

BAR = 60
WORDS = dict(PARTS)
PART_STYLE = {
    "queue": "grey50",
    "robots": "blue",
    "throttled": "dark_khaki",
    "connecting": "yellow",
    "headers": "cyan",
    "body": "green",
    "parsing": "magenta",
    "backoff": "dark_orange",
    "paused": "black on yellow",
}


def waterfall_or_why(feed: Feed, url: str) -> Waterfall | str:
    """`url`'s waterfall from the recorded past, or why there is none, in words."""
    # The flight recorder's ring finds the few events a waterfall is cut from; a list
    # (a recording's events) is read whole.
    finder = getattr(feed, "events_for", None)
    events = finder(url) if finder is not None else feed.new_events(0)[0]
    fall = waterfall_of(events, url)
    if fall is not None:
        return fall
    if not events and finder is None:
        return "no fetches recorded here to draw a waterfall of"
    return "that fetch has not finished yet, or began before the kept past"


def waterfall_text(fall: Waterfall, width: int = BAR) -> Text:
    out = Text(no_wrap=True, overflow="ellipsis")
    out.append(printable(fall.url, 300), "bold")
    status = fall.status if fall.status is not None else printable(fall.exception or "failed", 80)
    out.append(f"\nworker {fall.worker}  status {status}  whole {millis(fall.total)}")
    out.append(f"  from {fall.started_at:.3f} s to {fall.ended_at:.3f} s of the crawl\n\n")
    line = Text()
    for name, col, cols in bar(fall, width):
        line.append(" " * (col - len(line.plain)))
        line.append("█" * cols, PART_STYLE.get(name, "white"))
    out.append(line)
    out.append("\n\n")
    for name, seconds in fall.parts:
        share = seconds / fall.total * 100 if fall.total else 0.0
        out.append("██ ", PART_STYLE.get(name, "white"))
        out.append(f"{millis(seconds):>8}  {share:5.1f}%  {WORDS.get(name, name)}\n")
    if fall.queued_at is None:
        out.append("\nwhen it was queued is older than the kept past: its queue time is left out\n",
                   "dim")  # fmt: skip
    out.append("\nthe parts add up to the whole; waiting for the loop is inside each part\n", "dim")
    return out


class WaterfallScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,enter,q", "dismiss", "Close", show=True),
    ]

    def __init__(self, fall: Waterfall) -> None:
        super().__init__()
        self.fall = fall

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="waterfall-body") as body:
            body.border_title = "waterfall"
            yield Static(waterfall_text(self.fall), id="waterfall-text")
