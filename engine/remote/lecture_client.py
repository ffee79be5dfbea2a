"""A lecture watched from another process: `RemoteLecture.stage` is the last stage
snapshot a lecture's monitor (lecture_monitor.py) sent, read-only.

The crawl's viewer (client.py) does the connecting, its caps, the reconnecting and the
refusals; this one reads the lecture's hello and its stage frames instead, each through
the checked decoder (StageSnapshot.from_plain): a bad frame is dropped and told in
`bad`, and the last good stage stays on screen. In stage 3 the monitor sends the crawl's
own frames, read by the crawl's viewer: `crawl_shown` then says the lecture is on the crawl,
which this object observes as RemoteCrawl does.
"""

from __future__ import annotations

import json
from typing import Any

from ..exchange.config_json import config_from_plain
from ..exchange.plain import BadMessage
from ..lecture.snapshot import StageSnapshot
from ..lecture.source import sources_of
from ..observe.text import printable
from .client import Link, RemoteCrawl
from .lecture_monitor import LECTURE_VERSION
from .protocol import VERSION, texts_from_plain


class RemoteLecture(RemoteCrawl):
    """The last stage a lecture's monitor sent."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.stage: StageSnapshot | None = None  # None until the first frame
        self.crawl_shown = False  # the last frame was stage 3's crawl, not a stage
        self.sources: dict[str, str] = {}  # the lecturer's stage modules' hashes (hello)

    def _take(self, text: str) -> bool:
        try:
            message = json.loads(text)
        except (ValueError, RecursionError):
            return self._drop("not JSON")
        kind = message.get("kind") if isinstance(message, dict) else None
        if kind == "hello":
            self._lecture_hello(message)  # BadMessage: what answered is not a lecture's
            return False
        if kind == "frame":
            return self._crawl_frame(message, text)
        if kind != "stage":
            return super()._take(text)  # the answers to controls, and what is not known
        try:
            stage = StageSnapshot.from_plain(message.get("snapshot"))
            viewers = texts_from_plain(message.get("viewers"), "viewers")
        except BadMessage as exc:
            return self._drop(str(exc))
        self.stage, self.viewers = stage, viewers
        self.crawl_shown = False
        self.frames += 1
        self.link = Link.CONNECTED
        self.why = ""
        self.ready.set()
        return True

    def _crawl_frame(self, message: dict[str, Any], text: str) -> bool:
        """Stage 3: a crawl's frame; the first of a connection names the crawl."""
        if "config" in message:
            try:
                config = config_from_plain(message["config"])
            except BadMessage as exc:
                return self._drop(str(exc))
            # Another crawl than the one before (the lecture came to stage 3 again); the
            # one before stays if this frame is bad.
            before = self._config, self._snap, list(self._recent)
            self._config, self._snap = config, None
            self._recent.clear()
            if not super()._take(text):
                self._config, self._snap = before[:2]
                self._recent.extend(before[2])
                return False
        elif not super()._take(text):
            return False
        self.crawl_shown = True
        return True

    def _lecture_hello(self, message: dict[str, Any]) -> None:
        if message.get("version") != VERSION or "lecture" not in message:
            raise BadMessage("a crawl's monitor, not a lecture's (attach to its /crawl URL)")
        if message["lecture"] != LECTURE_VERSION:
            shown = printable(repr(message["lecture"]), 40)
            raise BadMessage(f"a lecture of version {shown}, not {LECTURE_VERSION}")
        self.steer = False  # a lecture is steered by the lecturer's keys only
        self.sources = sources_of(message.get("sources"))  # BadMessage if not hashes

    def _lost(self, why: str) -> None:
        super()._lost(why)
        if not self.crawl_shown and self.stage is not None and self.stage.over:
            self.link, self.why = Link.ENDED, "the lecture's stage ended"
