"""What every panels screen offers of time: `t`, the timeline, over the past its source
keeps (none by default; a live crawl's flight recorder, a recording's events, what an
attached viewer received); a click on a fetch in "recent fetches": its waterfall; and
the status line's word on a saved flight."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from crawlscope.engine.observe.contract import ObservedCrawl
from crawlscope.engine.observe.timeline import Feed
from crawlscope.engine.trace.why import KeepsBooks

from ..widgets.find_url_screen import FindUrlScreen
from ..widgets.recent_fetches import RecentFetches
from ..widgets.timeline_screen import TimelineScreen, clock_of
from ..widgets.waterfall_screen import WaterfallScreen, waterfall_or_why


class TimeViews(Screen[None]):
    source: ObservedCrawl | None
    # The last saved flight, for the status line ("" before any): its file's name.
    flight_note = ""

    def events_feed(self) -> Feed | None:
        """Where the timeline reads the past; None: this source keeps none."""
        return None

    def action_timeline(self) -> None:
        feed, source = self.events_feed(), self.source
        if feed is None or source is None:
            self.notify("no recorded past to draw here", timeout=3)
            return
        # A cluster's lanes are named by process and worker (ClusterCrawl.lane_label).
        label = getattr(source, "lane_label", None)
        self.app.push_screen(TimelineScreen(feed, clock_of(source), label=label))

    def action_find_url(self) -> None:
        """`/`: a URL's fate, asked of the past this source keeps and, for a crawl in this
        process, of its books (what that past leaves out)."""
        feed, source = self.events_feed(), self.source
        books = source.url_books() if isinstance(source, KeepsBooks) else None
        if feed is None and books is None:
            self.notify("no recorded past to ask here", timeout=3)
            return

        def events() -> list[dict[str, Any]]:
            return feed.new_events(0)[0] if feed is not None else []

        where = "the recorded past" + (" and the crawl's books" if books is not None else "")
        limits = (source.config.max_depth, source.config.max_pages) if source else (0, 0)
        self.app.push_screen(FindUrlScreen(events, where, books, limits))

    def on_recent_fetches_picked(self, message: RecentFetches.Picked) -> None:
        """A fetch clicked in "recent fetches": its waterfall, from the recorded past."""
        feed = self.events_feed()
        if feed is None:
            self.notify("no recorded past to draw a waterfall from", timeout=3)
            return
        fall = waterfall_or_why(feed, message.record.url)
        if isinstance(fall, str):
            self.notify(fall, timeout=4)
            return
        self.app.push_screen(WaterfallScreen(fall))
