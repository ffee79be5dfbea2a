"""The one loader of a recording of either kind, a crawl's (`--record` on crawl or tui) or
a lecture's (`lecture --record`), for every command that plays one (`replay`, `serve
--replay`).

The file is opened once (engine/exchange/user_files.py: a regular file only), its first line tells
the two kinds apart, and it is read whole under that kind's cap, refused unread over it.
"""

from __future__ import annotations

from pathlib import Path

from ..exchange.user_files import FileRefused, UserFile
from ..lecture.replay import MAX_BYTES as LECTURE_MAX_BYTES
from ..lecture.replay import PEEK, RecordedLecture, is_lecture_start, lecture_from_bytes
from .replay import MAX_BYTES, ReplayedCrawl, ReplayError, events_from_bytes


def load_recording(path: str | Path) -> ReplayedCrawl | RecordedLecture:
    """The recording at `path`, checked whole, as the kind its first line says it is.
    ReplayError (LectureReplayError for a lecture's) says in one line what is wrong."""
    try:
        with UserFile(path) as file:
            if is_lecture_start(file.head(PEEK)):
                lecture = file.read(LECTURE_MAX_BYTES, "a lecture recording")
                return lecture_from_bytes(path, lecture)
            crawl = file.read(MAX_BYTES, "a crawl recording")
    except FileRefused as exc:
        raise ReplayError(str(exc)) from None
    return ReplayedCrawl(*events_from_bytes(path, crawl))
