"""The crawl's books: which URLs were seen and what became of each.

This is the chapter's logic that does not depend on how a fetch is done: which URLs
are admitted to the queue, how a redirect is followed and coalesced through
`seen_urls`, how a page's links become new work, and the record of each fetch. Every
engine (asyncio, and the lecture's callback and generator stages) keeps its books here,
so all of them find the same URLs and write the same report.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar
from urllib.parse import unquote

from yarl import URL

from .config import CrawlConfig
from .observe.snapshot import Accounting
from .records import FetchRecord, is_html, is_text, known_charset
from .redirects import Chain, ChainEnd, RedirectLog
from .urls import Scope, normalize

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Unfetched URLs whose depth and referrer are kept for `/` to name: one page can link
# 200,000 URLs past --max-pages, and these books keep the whole crawl.
KEEP_LEFT_FROM = 50_000

RecordListener = Callable[[FetchRecord], None]
Pair = tuple[str, int]  # (url, max_redirect): what the queue holds
Left = tuple[str, int, int, str | None]  # (url, max_redirect, depth, referrer), unfetched
FaultHandler = Callable[[Exception], None]

T = TypeVar("T")


class Listeners(list[Callable[[T], None]], Generic[T]):
    """Callbacks told of each event (a record kept, a worker's new state).

    A listener's trouble is never the engine's: one that raises (a full disk under the
    JSON Lines writer, a closed pipe under -v, a viewer's bug) is detached and its
    exception handed to `on_fault`, so the worker that told it goes on and the books
    stay whole.
    """

    def __init__(self, on_fault: FaultHandler) -> None:
        super().__init__()
        self._on_fault = on_fault

    def tell(self, event: T) -> None:
        for listener in tuple(self):  # a copy: a failing listener leaves the list
            try:
                listener(event)
            except Exception as exc:
                with contextlib.suppress(ValueError):  # it may have left by itself
                    self.remove(listener)
                self._on_fault(exc)


@dataclass(frozen=True, slots=True)
class Answer:
    """What a server said, in the terms the books need."""

    status: int
    content_type: str | None
    charset: str | None
    location: str | None
    body: bytes
    problem: str | None = None  # why the body was not read in full (then it is not parsed)
    parsed: tuple[str, list[str]] | None = None  # (encoding, links) if parsed already


class Ledger:
    def __init__(self, config: CrawlConfig) -> None:
        self.config = config
        self.max_redirect = config.max_redirect
        self.scope = Scope(
            config.root_urls, config.strict, config.compiled_exclude, config.max_url_length
        )
        self.seen_urls: set[str] = set()
        self.done: dict[str, FetchRecord] = {}  # a response came (any status)
        self.failed: dict[str, FetchRecord] = {}  # no response after max_tries
        self.filtered: dict[str, str] = {}  # url -> why it is not fetched
        self.unfetched: set[str] = set()  # in scope, but left by max_pages / max_depth
        self.redirects = RedirectLog()
        self.recent: deque[FetchRecord] = deque(maxlen=256)
        # What went wrong beside the fetches (a listener that failed, a worker that died),
        # in order; `on_fault` is the engine's answer to each (the crawlers stop).
        self.faults: list[Exception] = []
        self.on_fault: FaultHandler | None = None
        self.record_listeners: Listeners[FetchRecord] = Listeners(self.report_fault)
        # Told of each URL the rules leave alone, as a record whose `filtered` says why
        # (the JSON Lines writer listens); record_listeners hear of fetches only.
        self.filtered_listeners: Listeners[FetchRecord] = Listeners(self.report_fault)
        # Told of each URL left unfetched by max_pages or max_depth, as the pair it would
        # have been queued as, with its (depth, referrer): a state file keeps it queued.
        self.unfetched_listeners: Listeners[Left] = Listeners(self.report_fault)
        self._origin: dict[str, tuple[int, str | None]] = {}  # queued url -> (depth, referrer)
        self._left_from: dict[str, tuple[int, str | None]] = {}  # likewise, unfetched ones
        # URLs these books never admitted (from a state file, or another process by way
        # of Redis), until they are fetched or dropped: the crawler checks them
        # (`refusal`). Guests are those another process admitted, under its own max_pages.
        self._foreign: set[str] = set()
        self._guests: set[str] = set()
        # max_pages counts pages fetched: an admitted URL holds a place in it until it is
        # dropped unfetched (robots.txt), and then the first URL left waiting takes it.
        self._admitted = 0
        self._waiting: deque[Left] = deque()

    def add_roots(self) -> list[Pair]:
        """The roots, seen now: the pairs for the queue (those the rules let in)."""
        return [
            (root, self.max_redirect)
            for root in self.config.root_urls
            if root not in self.seen_urls and self.admit(root, self.max_redirect, 0, None)
        ]

    def admit(self, url: str, max_redirect: int, depth: int, referrer: str | None) -> bool:
        """Mark a new URL seen; True if the rules let it in (the caller queues it)."""
        self.seen_urls.add(url)
        reason = self.scope.why_not(url)
        if reason is not None:
            self._filter(url, reason, depth, referrer)
            return False
        return self._takes_a_place(url, max_redirect, depth, referrer)

    def origin(self, url: str) -> tuple[int, str | None]:
        """(depth, referrer) of a URL admitted and not yet recorded."""
        return self._origin[url]

    def left_from(self, url: str) -> tuple[int, str | None] | None:
        """(depth, referrer) of a URL a limit left unfetched, if kept (KEEP_LEFT_FROM)."""
        return self._left_from.get(url)

    def adopt(self, url: str, depth: int, referrer: str | None) -> None:
        """A URL taken from a frontier other processes share: perhaps one of them admitted
        it, and these books learn where it came from before it is fetched here."""
        if url not in self._origin:
            self._foreign.add(url)
            self._guests.add(url)
        self.unfetched.discard(url)  # left by a limit here, it is in this process's hands now
        self.seen_urls.add(url)
        self._origin[url] = (depth, referrer)

    def resume(self, url: str, max_redirect: int, depth: int, referrer: str | None) -> bool:
        """A URL an earlier run of this crawl queued (a state file): seen now, and True if
        it has a place under max_pages (the caller queues it); else it waits as an
        admitted URL over the limit does. Checked by the crawler as it is taken."""
        self.seen_urls.add(url)
        self._foreign.add(url)
        # This run's limits, which need not be the earlier run's.
        return self._takes_a_place(url, max_redirect, depth, referrer)

    def _takes_a_place(self, url: str, max_redirect: int, depth: int, referrer: str | None) -> bool:
        """True if `url` is within --max-depth and has a place under --max-pages (then it
        is admitted); else it is left unfetched, and one over max_pages waits for a place."""
        cfg = self.config
        if cfg.max_depth and depth > cfg.max_depth:
            self._leave((url, max_redirect, depth, referrer), waits=False)
            return False
        if cfg.max_pages and self._admitted >= cfg.max_pages:
            self._leave((url, max_redirect, depth, referrer), waits=True)
            return False
        self._admitted += 1
        self._origin[url] = (depth, referrer)
        return True

    def _leave(self, left: Left, waits: bool) -> None:
        """Unfetched; one that `waits` (max_pages) takes the next place that frees up."""
        self.unfetched.add(left[0])
        if len(self._left_from) < KEEP_LEFT_FROM:
            self._left_from[left[0]] = (left[2], left[3])
        if waits:
            self._waiting.append(left)
        if self.unfetched_listeners:
            self.unfetched_listeners.tell(left)

    def fetched_before(self, pages: int) -> None:
        """Pages earlier runs of this crawl fetched: max_pages counts the whole crawl's."""
        self._admitted += pages

    def checked(self, url: str) -> bool:
        """True if `url` is in these books' hands by their own rules (admitted here, not
        adopted from a file or another process): its form and scope were checked then."""
        return url in self._origin and url not in self._foreign

    def refusal(self, url: str) -> str | None:
        """Why a URL taken from the queue may not be fetched, by the rules a discovered
        one meets before it is admitted (scheme, normal form, scope); None if it may.

        Only an adopted URL can fail them: it came from a file or another process, and
        the text there may be anything (`javascript:alert(1)`, another port's server).
        """
        if url not in self._foreign:
            return None
        return self.form_refusal(url) or self.scope.why_not(normalize(url) or url)

    @staticmethod
    def form_refusal(url: str) -> str | None:
        """Why `url`, from outside, is not a URL this crawler would have queued: not
        http(s), or not in its normal form; None if it is one."""
        canonical = normalize(url) if isinstance(url, str) else None
        if canonical is None:
            return "not an http(s) URL"
        if canonical != url and not _spelled_otherwise(url, canonical):
            return "not a normalised URL"
        return None

    @staticmethod
    def will_parse(answer: Answer) -> bool:
        return (
            answer.problem is None and 200 <= answer.status < 300 and is_html(answer.content_type)
        )

    def answered(
        self, url: str, max_redirect: int, answer: Answer, tries: int, worker: int, t_start: float
    ) -> tuple[FetchRecord, list[Pair]]:
        """Follow the redirect or take the links an answer gives: its record (not yet
        kept) and the new (url, max_redirect) pairs for the queue.

        Synchronous on purpose: between the answer and the record nothing else runs, so
        no other worker can see a half-updated `seen_urls` (the chapter's point about
        coroutines needing no locks).
        """
        depth, referrer = self._origin[url]
        next_url = None
        exception = answer.problem
        # Only a real codec's name: the header's raw text is untrusted and may be anything.
        # A PDF or a PNG is bytes: it has no encoding, whatever charset the header claims.
        encoding = (
            (known_charset(answer.charset) or "utf-8") if is_text(answer.content_type) else None
        )
        links: list[str] = []
        if answer.problem is None and answer.status in REDIRECT_STATUSES:
            location = answer.location
            next_url = normalize(location, url) if location else None
            if next_url is None:
                # The header as the server sent it, not repr()'d: text is escaped once,
                # where it meets a terminal or a report (engine/observe/text.py printable).
                exception = (
                    "BadRedirect: no Location header"
                    if location is None
                    else f"BadRedirect: unusable Location header: {location}"
                )
        elif answer.parsed is not None and self.will_parse(answer):
            encoding, links = answer.parsed
        elif self.will_parse(answer):
            # Imported here: this module also serves processes that never parse a page
            # (a --procs parent), and BeautifulSoup costs them a tenth of a second.
            from .links import parse_links

            encoding, links = parse_links(answer.body, url, answer.charset, self.config.max_links)
        new: list[Pair] = []
        if next_url is not None:
            self.redirects.add(url, next_url, budget_left=max_redirect > 0)
            # The chapter's coalescing: a target already seen is on its way already.
            if (
                max_redirect > 0
                and next_url not in self.seen_urls
                and self.admit(next_url, max_redirect - 1, depth, url)
            ):
                new.append((next_url, max_redirect - 1))
        for link in links:
            if link not in self.seen_urls and self.admit(link, self.max_redirect, depth + 1, url):
                new.append((link, self.max_redirect))
        record = FetchRecord(
            url=url,
            status=answer.status,
            next_url=next_url,
            exception=exception,
            size=len(answer.body),
            content_type=answer.content_type,
            encoding=encoding,
            num_urls=len(links),
            num_new_urls=len(new),
            tries=tries,
            depth=depth,
            referrer=referrer,
            worker=worker,
            t_start=t_start,
            t_end=time.time(),
        )
        return record, new

    def failure(
        self, url: str, exception: str, tries: int, worker: int, t_start: float
    ) -> FetchRecord:
        depth, referrer = self._origin[url]
        return FetchRecord(
            url=url, status=None, next_url=None, exception=exception, size=0,
            content_type=None, encoding=None, num_urls=0, num_new_urls=0, tries=tries,
            depth=depth, referrer=referrer, worker=worker, t_start=t_start, t_end=time.time(),
        )  # fmt: skip

    def keep(self, record: FetchRecord) -> None:
        """The URL's record lands in done or failed; it is no longer in anyone's hands.

        The books are whole before any listener hears of it, and no listener can undo
        that or reach the caller (Listeners).
        """
        (self.failed if record.failed else self.done)[record.url] = record
        del self._origin[record.url]
        self._foreign.discard(record.url)
        self._guests.discard(record.url)
        self.recent.append(record)
        if self.record_listeners:
            self.record_listeners.tell(record)

    def report_fault(self, exc: Exception) -> None:
        self.faults.append(exc)
        if self.on_fault is not None:
            self.on_fault(exc)

    def drop(self, url: str, reason: str, worker: int | None = None) -> None:
        """A URL taken from the queue that may not be fetched after all (robots.txt)."""
        depth, referrer = self._origin.pop(url)
        self._foreign.discard(url)
        if url in self._guests:
            self._guests.discard(url)  # admitted elsewhere: it held no place here
        else:
            self._admitted -= 1
        self._filter(url, reason, depth, referrer, worker)

    def refill(self) -> list[Pair]:
        """The URLs max_pages left waiting that now have a place (a URL before them was
        dropped unfetched): admitted, the pairs for the queue."""
        cfg, pairs = self.config, []
        while cfg.max_pages and self._admitted < cfg.max_pages and self._waiting:
            url, max_redirect, depth, referrer = self._waiting.popleft()
            if url not in self.unfetched:
                continue  # another process's queue brought it here since (adopt)
            self.unfetched.discard(url)
            self._admitted += 1
            self._origin[url] = (depth, referrer)
            pairs.append((url, max_redirect))
        return pairs

    def _filter(
        self, url: str, reason: str, depth: int, referrer: str | None, worker: int | None = None
    ) -> None:
        self.filtered[url] = reason
        if self.filtered_listeners:
            now = time.time()
            record = FetchRecord(
                url=url, status=None, next_url=None, exception=None, size=0, content_type=None,
                encoding=None, num_urls=0, num_new_urls=0, tries=0, depth=depth,
                referrer=referrer, worker=worker, t_start=now, t_end=now, filtered=reason,
            )  # fmt: skip
            self.filtered_listeners.tell(record)

    def accounting(self, queued: int, held: int) -> Accounting:
        return Accounting(
            seen=len(self.seen_urls),
            done=len(self.done),
            failed=len(self.failed),
            filtered=len(self.filtered),
            queued=queued,
            held=held,
            unfetched=len(self.unfetched),
        )

    def outcome(self, url: str) -> tuple[ChainEnd, int | None]:
        if url in self.done:
            return ChainEnd.FETCHED, self.done[url].status
        if url in self.failed:
            return ChainEnd.FAILED, None
        if url in self.filtered:
            return ChainEnd.FILTERED, None
        if url in self.unfetched:
            return ChainEnd.UNFETCHED, None
        return ChainEnd.PENDING, None

    def chains(self) -> list[Chain]:
        return self.redirects.chains(self.outcome)

    def chain_preview(self, limit: int, hops: int) -> tuple[list[Chain], int]:
        """The first `limit` chains cut to `hops` hops, and how many there are (RedirectLog)."""
        return self.redirects.preview(self.outcome, limit, hops)


def _spelled_otherwise(url: str, canonical: str) -> bool:
    """True if `url` is `canonical` but for percent-escapes, and asks the same origin.

    normalize() is not quite idempotent (yarl writes a ":" it escaped in a relative
    path back as ":" when it parses the absolute URL again), so a URL a crawl queued may
    come back from a file or another process spelled unlike its normal form. That is
    all such a URL may differ by: not a password, a host, a dot segment or a control
    character.
    """
    if not (url.isascii() and url.isprintable()) or " " in url:
        return False
    if unquote(url) != unquote(canonical):
        return False
    try:
        # Parsed as the HTTP client will parse it: the server asked is the one in scope.
        return URL(url).origin() == URL(canonical).origin()
    except ValueError:
        return False
