"""`crawlscope why URL FILE` and `/`: for one URL of a crawl, what became of it and how the
crawl came to it: its record (fetched, failed, or why the rules left it alone), or why it
was left unfetched (--max-depth, --max-pages), or that it is still queued or in a worker's
hands; the discovery path back to a root, each referrer's own record; the redirects that
led to it and the one it gave; the worker, its tries and their error; and its waterfall.

The recorded events answer first (a recording, a flight, the kept past); a crawl's own
books (Books: a live crawl's ledger, a --state file) answer for what they leave out: a
URL fetched before the kept past began, one still queued, one the rules left alone.

Every URL and reason is text from a page or a file: each is shown escaped.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..observe.text import printable
from ..observe.waterfall import waterfall_of
from ..urls import normalize

MAX_PATH = 50  # referrers followed back at most (a loop of referrers cannot be, but a file may)
NEAREST = 5


@dataclass
class Seen:
    """What the recording says of the URLs it names."""

    records: dict[str, dict[str, Any]] = field(default_factory=dict)  # url -> its last record
    unfetched: dict[str, dict[str, Any]] = field(default_factory=dict)  # url -> its event
    redirected_from: dict[str, str] = field(default_factory=dict)  # target -> source


def seen_in(events: Iterable[dict[str, Any]]) -> Seen:
    seen = Seen()
    for event in events:
        kind = event["kind"]
        if kind == "fetch":
            record = event["record"]
            seen.records[record["url"]] = record
            if record.get("next_url"):
                seen.redirected_from.setdefault(record["next_url"], record["url"])
        elif kind == "unfetched":
            seen.unfetched[event["url"]] = event
        elif kind == "filtered":
            seen.records[event["url"]] = {**event, "filtered": event["reason"]}
    return seen


@dataclass(frozen=True, slots=True)
class Entry:
    """What a crawl's books say of one URL."""

    state: str  # one of STATES, or "unfetched" (left by --max-depth or --max-pages)
    depth: int | None = None
    referrer: str | None = None
    detail: str = ""  # the rule that left it alone; who holds it; what came of it
    record: dict[str, Any] | None = None  # its fetch record, plain, if the books keep it


# A state's line, with the entry's detail after it (a --state file keeps no status).
STATES = {
    "done": "  fetched{}",
    "failed": "  failed{}",
    "filtered": "  not fetched: {}",
    "queued": "  still queued: not fetched yet{}",
    "held": "  in a worker's hands: {}",
}


@runtime_checkable
class Books(Protocol):
    """A crawl's own books, asked one URL at a time (never all of them: a crawl may have
    seen millions)."""

    def url_entry(self, url: str) -> Entry | None: ...

    def urls_near(self, url: str, n: int) -> list[str]:
        """Up to `n` URLs it saw that look most like `url`."""
        ...


@runtime_checkable
class KeepsBooks(Protocol):
    """A crawl whose books can be asked (a live crawl in this process)."""

    def url_books(self) -> Books: ...


@dataclass(frozen=True)
class Answer:
    found: bool
    lines: list[str]


def why(
    url: str, events: Sequence[dict[str, Any]], max_depth: int = 0, max_pages: int = 0,
    books: Books | None = None,
) -> Answer:  # fmt: skip
    """The answer for `url` (as typed: normalised as the crawl would have); the crawl's
    --max-depth and --max-pages, to name them (0: not given); its `books`, if at hand."""
    seen = seen_in(events)
    known = {*seen.records, *seen.unfetched}
    entries: dict[str, Entry | None] = {}

    def entry(u: str) -> Entry | None:
        if books is None:
            return None
        if u not in entries:
            entries[u] = books.url_entry(u)
        return entries[u]

    wanted = normalize(url) or url
    if wanted not in known and entry(wanted) is None and (url in known or entry(url)):
        wanted = url
    shown = printable(wanted, 500)
    if wanted not in known and entry(wanted) is None:
        candidates = {*known, *(books.urls_near(wanted, NEAREST * 4) if books else ())}
        near = difflib.get_close_matches(wanted, sorted(candidates), n=NEAREST, cutoff=0.5)
        lines = [f"{printable(url, 500)}: never seen in this crawl"]
        if wanted != url:
            lines.append(f"  (looked for as the crawl writes it: {shown})")
        if near:
            lines.append("nearest seen:")
            lines += [f"  {printable(n, 500)}" for n in near]
        return Answer(False, lines)
    lines = [shown]
    if wanted != url:
        lines.append(f"  as typed, {printable(url, 300)}: the same page once normalised, "
                     "fetched once")  # fmt: skip
    record = seen.records.get(wanted)
    found = entry(wanted) if record is None and wanted not in seen.unfetched else None
    kept = found.record if found is not None else None
    if kept is not None:
        lines += _outcome(kept)
    elif record is not None:
        lines += _outcome(record)
    elif found is not None and found.state != "unfetched":
        lines.append(STATES[found.state].format(printable(found.detail, 300)))
    else:  # left by a limit: the recording says which; the books, the depth it was at
        left = seen.unfetched.get(wanted)
        depth = left["depth"] if left is not None else found.depth if found else None
        deep = (left["why"] == "max-depth") if left is not None else (
            bool(max_depth) and depth is not None and depth > max_depth)  # fmt: skip
        if deep:
            limit = f" {max_depth}" if max_depth else ""
            lines.append(f"  left unfetched: at depth {depth}, deeper than --max-depth{limit}")
        else:
            limit = f" {max_pages}" if max_pages else ""
            lines.append(f"  left unfetched: no place under --max-pages{limit}")
    lines += _redirects(wanted, seen, kept)
    lines += _path(wanted, seen, entry)
    if record is not None and record.get("status") is not None:
        fall = waterfall_of(events, wanted)
        if fall is not None:
            parts = ", ".join(f"{name} {seconds * 1000:.1f} ms" for name, seconds in fall.parts)
            lines.append(f"  its time: {fall.total * 1000:.1f} ms: {parts}")
    return Answer(True, lines)


def _outcome(record: dict[str, Any]) -> list[str]:
    tries = record.get("tries", 0)
    worker = record.get("worker")
    by = f" by worker {worker}" if worker is not None else ""
    if record.get("filtered"):
        return [f"  not fetched: {printable(record['filtered'], 300)}"]
    if record.get("status") is None:
        error = printable(record.get("exception") or "no answer", 300)
        return [f"  failed{by} after {tries} tr{'y' if tries == 1 else 'ies'}: {error}"]
    size = record.get("size", 0)
    found = record.get("num_urls", 0)
    links = f"{found} link{'' if found == 1 else 's'}, {record.get('num_new_urls', 0)} new"
    return [f"  fetched: {record['status']}{by}, {tries} tr{'y' if tries == 1 else 'ies'}, "
            f"{size} bytes, {links}"]  # fmt: skip


def _redirects(url: str, seen: Seen, kept: dict[str, Any] | None) -> list[str]:
    """The redirects that led to `url`, oldest first, and the one it gave."""
    chain = [url]
    while chain[0] in seen.redirected_from and len(chain) <= MAX_PATH:
        source = seen.redirected_from[chain[0]]
        if source in chain:
            break
        chain.insert(0, source)
    lines = []
    if len(chain) > 1:
        hops = len(chain) - 1
        lines.append(f"  reached by {hops} redirect{'s' if hops > 1 else ''}: "
                     + " -> ".join(printable(u, 200) for u in chain))  # fmt: skip
    target = (seen.records.get(url) or kept or {}).get("next_url")
    if target:
        lines.append(f"  redirects to {printable(target, 300)}")
    return lines


def _path(url: str, seen: Seen, books: Callable[[str], Entry | None]) -> list[str]:
    """The discovery path: each referrer back to a root (the first redirect's source,
    when redirects led here: the page that linked to the chain), from the events, else
    the crawl's books."""
    start, chain = url, {url}
    while start in seen.redirected_from and seen.redirected_from[start] not in chain:
        start = seen.redirected_from[start]
        chain.add(start)
    path: list[tuple[str, object]] = []
    current: str | None = start
    visited: set[str] = set()
    while current is not None and current not in visited and len(path) < MAX_PATH:
        visited.add(current)
        entry = seen.records.get(current) or seen.unfetched.get(current)
        if entry is None:
            kept = books(current)
            entry = {"depth": kept.depth, "referrer": kept.referrer} if kept else {}
        path.append((current, entry.get("depth")))
        referrer = entry.get("referrer")
        current = referrer if isinstance(referrer, str) else None
    lines = ["  discovered:"]
    for depth, (page, page_depth) in enumerate(reversed(path)):
        said = f"depth {page_depth}" if page_depth is not None else "?"
        root = " (a root)" if depth == 0 and page_depth == 0 else ""
        lines.append(f"    {'  ' * depth}{printable(page, 300)}  [{said}]{root}")
    return lines
