"""`crawlscope lecture --monitor`: the lecture's stage snapshots served to viewers.

The crawl's monitor (monitor.py) with its door, caps, Origin check, token rule and
dropping of slow viewers, serving one more kind of frame at its own path:

    {"kind": "hello", "version", "lecture": LECTURE_VERSION, "steer": false, "you"}
    {"kind": "stage", "snapshot": StageSnapshot.to_plain(), "viewers": [...]}

and in stage 3 (the main TUI's asyncio crawl) the crawl monitor's own frames, the first
to each viewer naming the crawl's config as a crawl's hello does:

    {"kind": "frame", "config": {...}, "snapshot": ..., "recent": [...], ...}

A lecture is steered by the lecturer's keys only: no viewer controls it, token or not
(the monitor answers every control with an error).
"""

from __future__ import annotations

import json
import socket
from typing import Any

from ..exchange.config_json import config_to_plain
from ..lecture.observe import ObservedStage
from ..lecture.source import digests
from ..observe.contract import ObservedCrawl
from .limits import DEFAULT_LIMITS, ViewerLimits
from .monitor import Monitor, Viewer
from .protocol import VERSION

LECTURE_PATH = "/lecture"
LECTURE_VERSION = 1  # of the stage snapshot's plain form


class StageRelay:
    """What the lecture shows now: a stage, told of each as it opens (`follow`), or stage
    3's crawl (`follow_crawl`); neither while a screen is starting (`clear`)."""

    def __init__(self) -> None:
        self.stage: ObservedStage | None = None
        self.crawl: ObservedCrawl | None = None

    def follow(self, stage: ObservedStage) -> None:
        self.stage, self.crawl = stage, None

    def follow_crawl(self, crawl: ObservedCrawl) -> None:
        self.stage, self.crawl = None, crawl

    def clear(self) -> None:
        self.stage = self.crawl = None


class LectureMonitor(Monitor):
    path = LECTURE_PATH

    def __init__(
        self,
        relay: StageRelay,
        sock: socket.socket,
        *,
        token: str | None = None,
        limits: ViewerLimits = DEFAULT_LIMITS,
    ) -> None:
        super().__init__(None, None, sock, token=token, limits=limits)
        self.relay = relay
        self._last = ""  # the last frame sent

    def _hello(self, viewer: Viewer) -> dict[str, Any]:
        # The stage modules' hashes: a viewer on another version says if its code (the
        # code pane's) differs from what the lecturer runs.
        return {"kind": "hello", "version": VERSION, "lecture": LECTURE_VERSION,
                "steer": False, "you": viewer.address, "sources": digests()}  # fmt: skip

    def _introduce(self) -> dict[str, Any]:
        return {"config": config_to_plain(self.observed.config)}

    def _sample(self, rows: bool) -> None:
        crawl = self.relay.crawl
        if crawl is not None:
            # Stage 3: the crawl's frames, as its own monitor sends them (and no control).
            self._observed = crawl
            super()._sample(rows)
            return
        stage = self.relay.stage
        if stage is None:
            return  # no stage open yet (the demo site is starting): nothing to show
        frame = {"kind": "stage", "snapshot": stage.snapshot().to_plain(), "viewers": self.viewers}
        text = json.dumps(frame, ensure_ascii=True)
        # A frozen stage (step mode, between keys) changes nothing for minutes: only a
        # viewer that has no frame yet is sent one then.
        changed, self._last = text != self._last, text
        if changed:
            self.frames += 1
        self._send_all(text if changed else None, lambda: text)
