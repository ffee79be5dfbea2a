"""A frontier that survives a crash on one machine: the queue in memory, its state in SQLite.

`crawlscope crawl ROOT... --state FILE` (and `crawlscope tui ... --state FILE`): every
URL seen goes into FILE with what became of it. Run the same command after a kill and
the crawl goes on where it was: what was done is not fetched again, what was queued or
in a worker's hands is queued again.

Each lease is written down as it ends, in the transaction that also holds the URLs its
page found (new URLs first, so no moment of the file has a page done whose links are
missing). A commit in WAL mode with synchronous=NORMAL is a write to the OS, not to the
disk: cheap enough to make on the loop (tens of microseconds), and a killed process
loses none of it; only a crash of the machine can take the last commits back, and then
those pages are fetched again.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from ..crawler import Crawler
from ..frontier import Lease, MemoryFrontier, Pair
from ..ledger import Ledger
from ..records import FetchRecord
from ..snapshot import Accounting

QUEUED = "queued"  # the other states are outcomes: done, failed, filtered
OUTCOMES = ("done", "failed", "filtered")

SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    url TEXT PRIMARY KEY,
    max_redirect INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    referrer TEXT,
    state TEXT NOT NULL
) WITHOUT ROWID
"""


class StateError(Exception):
    """FILE is not a crawl state that can be opened (not SQLite, or another schema)."""


class SqliteFrontier(MemoryFrontier):
    """The chapter's queue in memory, every change to it written to a SQLite file."""

    def __init__(self, path: str | Path, ledger: Ledger) -> None:
        super().__init__()
        self.path = str(path)
        self.ledger = ledger
        # Called before each commit: outputs flush, so that a page the file counts
        # done has its record on disk too, even if the process is killed next.
        self.before_send: list[Callable[[], None]] = []
        self._prior = dict.fromkeys(OUTCOMES, 0)  # done in earlier runs, by outcome
        try:
            self._db = sqlite3.connect(self.path, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(SCHEMA)
            self._db.execute("BEGIN")
            self._resume()
        except sqlite3.Error as exc:
            raise StateError(f"cannot use {self.path} as a crawl state: {exc}") from None
        ledger.filtered_listeners.append(self._note_filtered)

    def _resume(self) -> None:
        """What an earlier run left: done URLs are seen (never admitted again); queued
        ones, and those that were in a worker's hands, are queued again."""
        rows = self._db.execute("SELECT url, max_redirect, depth, referrer, state FROM urls")
        for url, max_redirect, depth, referrer, state in rows:
            if state == QUEUED:
                self.ledger.adopt(url, depth, referrer)
                super().put_nowait((url, max_redirect))
            else:
                self.ledger.seen_urls.add(url)
                self._prior[state] += 1

    # ---- the chapter's calls, written down -------------------------------------------

    def put_nowait(self, pair: Pair) -> None:
        url, max_redirect = pair
        depth, referrer = self.ledger.origin(url)
        self._db.execute(
            "INSERT OR IGNORE INTO urls VALUES (?, ?, ?, ?, ?)",
            (url, max_redirect, depth, referrer, QUEUED),
        )
        super().put_nowait(pair)

    def put_back(self, lease: Lease) -> None:
        super().put_nowait(lease.pair)  # its row still says queued

    def task_done(self, lease: Lease) -> None:  # type: ignore[override]
        if lease.done:
            return
        if self._recorded(lease.url):
            self._db.execute(
                "UPDATE urls SET state = ? WHERE url = ?", (self._outcome(lease.url), lease.url)
            )
        self._commit()
        super().task_done(lease)

    def _recorded(self, url: str) -> bool:
        # Not so for a lease put back: it is queued again, and so is its row.
        books = self.ledger
        return url in books.done or url in books.failed or url in books.filtered

    def _outcome(self, url: str) -> str:
        books = self.ledger
        if url in books.done:
            return "done"
        return "failed" if url in books.failed else "filtered"

    def _note_filtered(self, record: FetchRecord) -> None:
        if record.worker is None:  # left by the rules, never queued
            self._db.execute(
                "INSERT OR IGNORE INTO urls VALUES (?, 0, ?, ?, 'filtered')",
                (record.url, record.depth, record.referrer),
            )

    def _commit(self) -> None:
        for flush in self.before_send:
            flush()
        self._db.execute("COMMIT")
        self._db.execute("BEGIN")

    def accounting(self) -> Accounting | None:
        """This run's books plus what earlier runs finished (seen in the ledger already)."""
        held = self.unfinished - self.qsize()
        now = self.ledger.accounting(self.qsize(), held)
        prior = self._prior
        return Accounting(
            seen=now.seen, done=now.done + prior["done"], failed=now.failed + prior["failed"],
            filtered=now.filtered + prior["filtered"], queued=now.queued, held=now.held,
            unfetched=now.unfetched,
        )  # fmt: skip

    async def close(self) -> None:
        try:
            self._db.execute("COMMIT")
        finally:
            self._db.close()


def keep_state(crawler: Crawler, path: str | Path) -> Crawler:
    """The crawler, its queue kept in the state file at `path` (resumed if it exists);
    StateError if that file cannot be used."""
    crawler.q = SqliteFrontier(path, crawler.ledger)
    return crawler


def check_state_file(path: str | Path) -> None:
    """StateError, in one line, if `path` cannot be a crawl state; else nothing."""
    try:
        db = sqlite3.connect(str(path))
    except sqlite3.Error as exc:
        raise StateError(f"cannot use {path} as a crawl state: {exc}") from None
    try:
        db.execute(SCHEMA)
        db.execute("SELECT url, max_redirect, depth, referrer, state FROM urls LIMIT 1")
    except sqlite3.Error as exc:
        raise StateError(f"cannot use {path} as a crawl state: {exc}") from None
    finally:
        db.close()
