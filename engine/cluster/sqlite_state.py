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

import contextlib
import datetime
import os
import sqlite3
import stat
from collections.abc import Callable
from pathlib import Path

from ..crawler import Crawler
from ..frontier import Lease, MemoryFrontier, Pair
from ..ledger import Ledger, Left
from ..observe.snapshot import Accounting
from ..observe.text import printable
from ..records import FetchRecord
from .file_lock import FileLock, LockedError

QUEUED = "queued"  # the other states are outcomes: done, failed, filtered
OUTCOMES = ("done", "failed", "filtered")
STATES = (QUEUED, *OUTCOMES)
# The urls table's columns as SCHEMA declares them: a file with others was written by
# something else, and is left alone.
COLUMNS = (
    ("url", "TEXT"), ("max_redirect", "INTEGER"), ("depth", "INTEGER"),
    ("referrer", "TEXT"), ("state", "TEXT"),
)  # fmt: skip

SCHEMA = """
CREATE TABLE IF NOT EXISTS urls (
    url TEXT PRIMARY KEY,
    max_redirect INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    referrer TEXT,
    state TEXT NOT NULL
) WITHOUT ROWID
"""


# Seconds to wait for another program's lock on the state file before saying so.
LOCK_WAIT = 2.0
LOCKED_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


class StateError(Exception):
    """FILE is not a crawl state that can be opened (not SQLite, or another schema)."""


class StateFinished(StateError):
    """The crawl the state file keeps ran to its end: nothing to do; the line says so."""


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
        self._lock = _lock(self.path)
        try:
            self._db = _open(self.path, create=True)
            try:
                # The write lock now, held from commit to commit for the whole crawl: a
                # file another program holds is one line here, not a worker's death at
                # its first write.
                self._db.execute("BEGIN IMMEDIATE")
                ended = finished_line(self._db, self.path, ledger.config.root_urls)
                if ended is None:
                    self._resume()
            except sqlite3.Error as exc:
                self._db.close()
                raise _state_error(self.path, exc) from None
            if ended is not None:
                self._db.close()
                raise StateFinished(ended)
        except BaseException:
            self._lock.release()
            raise
        ledger.filtered_listeners.append(self._note_filtered)
        ledger.unfetched_listeners.append(self._note_unfetched)

    def _resume(self) -> None:
        """What an earlier run left: done URLs are seen (never admitted again); queued
        ones, and those that were in a worker's hands, are queued again. They came from
        a file, not from this crawl's rules: the crawler checks them as it takes them."""
        rows = self._db.execute("SELECT url, max_redirect, depth, referrer, state FROM urls")
        # A budget bigger than this run's would let a file stretch a redirect chain.
        budget = self.ledger.max_redirect
        queued = []
        for url, max_redirect, depth, referrer, state in rows:
            if state == QUEUED:
                queued.append((url, min(max_redirect, budget), depth, referrer))
            else:
                self.ledger.seen_urls.add(url)
                self._prior[state] += 1
        self.ledger.fetched_before(self._prior["done"] + self._prior["failed"])
        for url, max_redirect, depth, referrer in queued:
            if self.ledger.resume(url, max_redirect, depth, referrer):
                super().put_nowait((url, max_redirect))

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

    def _note_unfetched(self, left: Left) -> None:
        # Queued in the file: a run with a higher limit (or the same limit, once a place
        # frees) takes it up, and nothing found is lost between runs.
        self._db.execute("INSERT OR IGNORE INTO urls VALUES (?, ?, ?, ?, 'queued')", left)

    def _commit(self) -> None:
        for flush in self.before_send:
            flush()
        self._db.execute("COMMIT")
        self._db.execute("BEGIN IMMEDIATE")

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
            self._lock.release()


def keep_state(crawler: Crawler, path: str | Path) -> Crawler:
    """The crawler, its queue kept in the state file at `path` (resumed if it exists);
    StateError if that file cannot be used, or another process has it."""
    crawler.q = SqliteFrontier(path, crawler.ledger)
    return crawler


def finished_line(db: sqlite3.Connection, path: str, roots: list[str]) -> str | None:
    """The line for a state file whose crawl ran to its end (URLs done, none queued,
    every root among them): nothing to do; None if there is a crawl to run or resume."""
    counts = dict(db.execute("SELECT state, count(*) FROM urls GROUP BY state").fetchall())
    if counts.get(QUEUED) or not any(counts.get(state) for state in OUTCOMES):
        return None
    for root in roots:
        if db.execute("SELECT 1 FROM urls WHERE url = ?", (root,)).fetchone() is None:
            return None  # a root the file has not met: a crawl to run
    when = ""
    with contextlib.suppress(OSError, ValueError, OverflowError):
        at = datetime.datetime.fromtimestamp(os.stat(path).st_mtime, datetime.UTC)
        when = f" at {at:%Y-%m-%d %H:%M:%S} UTC"
    return (
        f"the crawl kept in {printable(path)} finished{when} ({sum(counts.values())} urls); "
        "remove that file, or give another --state FILE, to crawl again from the start"
    )


def state_finished(path: str | Path, roots: list[str]) -> str | None:
    """finished_line of the file at `path`, read and left as it is (None if there is
    none yet, or it cannot be read: opening it says why)."""
    if not os.path.isfile(path):
        return None
    try:
        db = sqlite3.connect(f"file:{Path(path).resolve()}?mode=ro", uri=True, timeout=LOCK_WAIT)
        try:
            return finished_line(db, str(path), roots) if _problem(db) is None else None
        finally:
            db.close()
    except sqlite3.Error:
        return None


def check_state_file(path: str | Path) -> None:
    """StateError, in one line, if `path` cannot be a crawl state (or another process has
    it); else nothing. A file that does not exist yet is fine: the crawl makes it."""
    lock = _lock(str(path))
    try:
        _open(str(path), create=False).close()
    finally:
        lock.release()


def _lock(path: str) -> FileLock:
    lock = FileLock(path)
    try:
        lock.acquire()
    except LockedError as exc:
        raise StateError(f"{exc}: let it finish, or keep this crawl in another file") from None
    except OSError as exc:
        raise StateError(f"cannot lock {path} ({lock.path}): {exc.strerror or exc}") from None
    return lock


# The first row whose values SCHEMA's types do not hold (SQLite keeps whatever it is given).
BAD_ROW = f"""
SELECT url, max_redirect, depth, referrer, state FROM urls
WHERE typeof(url) != 'text' OR typeof(max_redirect) != 'integer' OR max_redirect < 0
    OR typeof(depth) != 'integer' OR depth < 0
    OR (referrer IS NOT NULL AND typeof(referrer) != 'text')
    OR typeof(state) != 'text' OR state NOT IN ({", ".join(repr(s) for s in STATES)})
LIMIT 1
"""


def _open(path: str, create: bool) -> sqlite3.Connection:
    """The state file, its schema and rows checked, in WAL mode; StateError if it is not
    a crawl state. An empty file (a new one) gets the schema when `create`."""
    with contextlib.suppress(OSError):  # none yet: it is made
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise StateError(f"cannot use {path} as a crawl state: it is not a regular file")
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=LOCK_WAIT)
    except sqlite3.Error as exc:
        raise _state_error(path, exc) from None
    try:
        problem = _problem(db)
        if problem is not None:
            raise StateError(f"cannot use {path} as a crawl state: {problem}")
        if create:
            # Only now: a file written by something else is not changed in any way.
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute(SCHEMA)
    except sqlite3.Error as exc:
        db.close()
        raise _state_error(path, exc) from None
    except BaseException:
        db.close()
        raise
    return db


def _state_error(path: str, exc: sqlite3.Error) -> StateError:
    """The one line for a state file SQLite would not let this crawl use."""
    if getattr(exc, "sqlite_errorcode", None) in LOCKED_CODES or "locked" in str(exc):
        return StateError(
            f"{path} is locked by another program (SQLite: {exc}): let it finish, or keep "
            "this crawl in another file"
        )
    return StateError(f"cannot use {path} as a crawl state: {exc}")


def _problem(db: sqlite3.Connection) -> str | None:
    """Why this database is not a crawl state, or None (an empty one is one to be)."""
    tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    if not tables:
        return None
    if "urls" not in tables:
        return f"it is a SQLite database with no urls table (its tables: {_listed(tables)})"
    info = list(db.execute("PRAGMA table_info(urls)"))
    columns = tuple((str(row[1]), str(row[2]).upper()) for row in info)
    if columns != COLUMNS:
        found = ", ".join(f"{name} {kind}".strip() for name, kind in columns)
        want = ", ".join(f"{name} {kind}" for name, kind in COLUMNS)
        return f"its urls table has columns ({_clip(found)}), not ({want})"
    if [str(row[1]) for row in info if row[5]] != ["url"]:
        # Without it, a URL could be in two rows, and come back twice.
        return "its urls table does not have url as its primary key"
    triggers = [
        row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
    ]
    if triggers:
        # They would run with every write of the crawl's: a crawl state has none.
        return f"it has triggers ({_listed(triggers)})"
    bad = db.execute(BAD_ROW).fetchone()
    if bad is not None:
        return f"a row of urls is not a crawl's: {_row(bad)}"
    return None


def _row(row: tuple[object, ...]) -> str:
    """A bad row, named by what is wrong with it; the file's text shown as repr() shows
    it (control characters escaped), and cut short."""
    url, max_redirect, depth, referrer, state = row
    name = f"url {_clip(repr(url))}"
    if not isinstance(url, str):
        return f"{name} is not text"
    if state not in STATES:
        known = ", ".join(STATES)
        return f"{name} has an unknown state {_clip(repr(state))} (known: {known})"
    for column, value in (("max_redirect", max_redirect), ("depth", depth)):
        if not isinstance(value, int) or value < 0:
            return f"{name} has {column} {_clip(repr(value))}, not a whole number"
    return f"{name} has referrer {_clip(repr(referrer))}, not text"


def _listed(names: list[str]) -> str:
    return _clip(", ".join(repr(name) for name in names))


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
