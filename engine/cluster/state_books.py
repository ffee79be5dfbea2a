"""A --state file's books, read and left as they are: what `crawlscope why URL FILE` asks
of a crawl kept in SQLite (engine/trace/why.py's Books). The file keeps each URL's depth,
referrer and state, not its status or the rule that left it alone: the answers say so."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..trace.why import Entry
from .sqlite_state import LOCK_WAIT, QUEUED, StateError, _problem, _state_error

SQLITE_HEADER = b"SQLite format 3\x00"

# What the file cannot tell, after each state's line.
UNSAID = {
    "done": " (a state file keeps no status: a --record of the crawl does)",
    "failed": " (a state file keeps no error: a --record of the crawl does)",
    "filtered": "left alone by the crawl's rules (a state file keeps no reason: a --record "
    "of the crawl does)",
    QUEUED: " (or left by --max-depth or --max-pages: the file does not say which); the same "
    "command goes on with it",
}


def is_state_file(path: str | Path) -> bool:
    """Whether `path` is a SQLite database (a --state file, or meant as one)."""
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


class StateBooks:
    def __init__(self, path: str | Path) -> None:
        """Open `path` read-only; StateError, in one line, if it is not a crawl state."""
        shown = str(path)
        try:
            uri = f"file:{Path(path).resolve()}?mode=ro"
            self._db = sqlite3.connect(uri, uri=True, timeout=LOCK_WAIT)
        except sqlite3.Error as exc:
            raise _state_error(shown, exc) from None
        try:
            problem = _problem(self._db)
        except sqlite3.Error as exc:
            self._db.close()
            raise _state_error(shown, exc) from None
        if problem is not None:
            self._db.close()
            raise StateError(f"cannot read {shown} as a crawl state: {problem}")

    def url_entry(self, url: str) -> Entry | None:
        row = self._db.execute(
            "SELECT depth, referrer, state FROM urls WHERE url = ?", (url,)
        ).fetchone()
        if row is None:
            return None
        depth, referrer, state = row
        return Entry(state, depth, referrer, UNSAID.get(state, ""))

    def urls_near(self, url: str, n: int) -> list[str]:
        # The URLs sorted on either side of it: those that share the most of its start.
        after = self._db.execute("SELECT url FROM urls WHERE url >= ? ORDER BY url LIMIT ?",
                                 (url, n)).fetchall()  # fmt: skip
        before = self._db.execute("SELECT url FROM urls WHERE url < ? ORDER BY url DESC LIMIT ?",
                                  (url, n)).fetchall()  # fmt: skip
        return [row[0] for row in (*before, *after)]

    def close(self) -> None:
        self._db.close()
