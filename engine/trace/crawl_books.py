"""A live crawl's books as `/` asks them (engine/trace/why.py's Books): what the ledger and
the workers say of one URL the flight recorder's kept past leaves out: fetched before
that past began, left alone by the crawl's rules, queued, or in a worker's hands."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Mapping

from ..ledger import Ledger
from ..observe.workers import Worker
from .why import Entry

# URLs sorted to find the nearest of one never seen: a crawl of millions is asked about
# the first this many (some 0.2 s to sort), not all of them.
NEAR_SCAN = 200_000


class CrawlBooks:
    def __init__(
        self, ledger: Ledger, workers: Mapping[int, Worker], queued: Callable[[], int]
    ) -> None:
        self.ledger = ledger
        self.workers = workers
        self.queued = queued

    def url_entry(self, url: str) -> Entry | None:
        books = self.ledger
        record = books.done.get(url) or books.failed.get(url)
        if record is not None:
            state = "failed" if record.failed else "done"
            return Entry(state, record.depth, record.referrer, record=record.to_dict())
        if url in books.filtered:
            return Entry("filtered", detail=books.filtered[url])
        if url in books.unfetched:
            depth, referrer = books.left_from(url) or (None, None)
            return Entry("unfetched", depth, referrer)
        if url not in books.seen_urls:
            return None
        try:
            depth, referrer = books.origin(url)
        except KeyError:  # seen, and with no origin kept: a root being admitted
            depth, referrer = 0, None
        holder = next((w for w in self.workers.values() if w.url == url), None)
        if holder is not None:
            return Entry("held", depth, referrer, f"worker {holder.id}, {holder.state}")
        return Entry("queued", depth, referrer, f" (one of {self.queued():,} queued)")

    def urls_near(self, url: str, n: int) -> list[str]:
        books = self.ledger
        seen = itertools.chain(books.seen_urls, books.filtered)
        ordered = sorted(itertools.islice(seen, NEAR_SCAN))
        at = bisect.bisect_left(ordered, url)
        return ordered[max(at - n, 0) : at + n]
