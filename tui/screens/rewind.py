"""`r` on a live crawl: the recorded past, played back while the crawl goes on.

The flight recorder's ring as a recording (engine/trace/flight.py), on the replay's screen
with the replay's keys and scrubber; every panel shows the moment chosen. The crawl is not
touched: this screen only reads the ring, and takes the events the crawl adds meanwhile so
the scrubber's end keeps up with "now". `r` or escape returns to the live screen.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import BindingType

from crawlscope.engine.observe.timeline import Feed
from crawlscope.engine.trace.flight import FlightRing

from ..frame_budget import FRAMES_PER_SECOND
from ..keys import COMMON, REWIND, TRANSPORT, Key, bindings
from .replay import ReplayScreen

# Seconds back from "now" where a rewind opens: the moment just gone, not the present.
OPEN_BACK = 5.0


class RewindScreen(ReplayScreen):
    KEYS: ClassVar[tuple[Key, ...]] = (*REWIND, *TRANSPORT, *COMMON)
    BINDINGS: ClassVar[list[BindingType]] = bindings(REWIND, TRANSPORT, COMMON)

    def __init__(
        self, ring: FlightRing, *, fps: float = FRAMES_PER_SECOND, reproducible: bool = False
    ) -> None:
        self.ring = ring
        self._seen = ring.added
        self.past = replay = ring.replay()
        super().__init__(replay, "rewind", paused=True, fps=fps, reproducible=reproducible)
        replay.seek(replay.duration - OPEN_BACK)
        self.observe(replay, "rewind: the recorded past, while the crawl goes on (r: back to now)")

    def advance(self) -> None:
        # The crawl's new events, so that playing on runs into the present.
        self.past.extend_items(self.ring.items(since=self._seen))
        self._seen = self.ring.added
        super().advance()

    def events_feed(self) -> Feed | None:
        return self.ring

    def action_back_to_now(self) -> None:
        self.dismiss()
