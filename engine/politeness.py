"""Being a good citizen: robots.txt (RFC 9309) and a per-host limit on concurrency and rate."""

from __future__ import annotations

import asyncio
import math
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from protego import Protego

from .config import DEFAULT_MAX_CRAWL_DELAY
from .observe.snapshot import RobotsState
from .observe.text import printable
from .records import describe_exception

if TYPE_CHECKING:
    import aiohttp

ROBOTS_AGENT = "crawlscope"  # the product token robots.txt rules are matched against
ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 lets a crawler stop parsing after 500 KiB
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 asks to follow at least five


@dataclass(frozen=True, slots=True)
class RobotsRules:
    """What one host's robots.txt says; `parser` None means no rules (allow everything)."""

    parser: Protego | None
    disallow_all: bool = False
    note: str = ""  # why, when it is not a parsed file: "404", "unreachable: ..."
    text: str = ""  # the file as parsed: what a refusal's rule is read from

    def allows(self, url: str) -> bool:
        if self.disallow_all:
            return False
        return self.parser is None or bool(self.parser.can_fetch(url, ROBOTS_AGENT))

    @property
    def refusal(self) -> str:
        """Why a URL these rules do not allow is left alone, for the report."""
        if not self.disallow_all:
            return "disallowed by robots.txt"
        return f"robots.txt {self.note}: all disallowed (RFC 9309)"

    def refusal_of(self, url: str) -> str:
        """`refusal`, naming the rule that refused `url` when the file has one that
        matches ("disallowed by robots.txt (Disallow: /private/)")."""
        rule = refusing_rule(self.text, url) if self.text and not self.disallow_all else None
        return f"{self.refusal} ({rule})" if rule else self.refusal

    @property
    def crawl_delay(self) -> float:
        """The Crawl-delay the file asks for, in seconds (0.0: none)."""
        if self.parser is None:
            return 0.0
        delay = self.parser.crawl_delay(ROBOTS_AGENT)
        if delay is None or not math.isfinite(delay) or delay <= 0:
            return 0.0
        return float(delay)


def robots_text(body: bytes) -> str:
    """What of a robots.txt body is parsed: all of it up to ROBOTS_MAX_BYTES; past that,
    the first ROBOTS_MAX_BYTES cut back to the last whole line, so that a line the limit
    splits ("Disallow: /sec" of "Disallow: /secret") is not read as another rule."""
    if len(body) > ROBOTS_MAX_BYTES:
        head = body[:ROBOTS_MAX_BYTES]
        end = max(head.rfind(b"\n"), head.rfind(b"\r"))
        body = head[: end + 1]
    return body.decode("utf-8", "replace")


def parse_robots(body: bytes) -> RobotsRules:
    """The rules of a robots.txt that answered 2xx (the whole body, as read)."""
    cut = len(body) > ROBOTS_MAX_BYTES
    note = f"parsed its first {ROBOTS_MAX_BYTES // 1024} KiB" if cut else "parsed"
    text = robots_text(body)
    return RobotsRules(Protego.parse(text), note=note, text=text)


def refusing_rule(text: str, url: str) -> str | None:
    """The Disallow line of robots.txt `text` that refuses `url`, as RFC 9309 picks it:
    of the group for every agent ("*"), the longest matching rule, an Allow winning a tie;
    None when none refuses it. For the reason alone: whether `url` is fetched is Protego's
    to say."""
    parts = urlsplit(url)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    rules: list[tuple[str, str]] = []
    agents: list[str] = []
    grouping = False  # reading a group's user-agent lines
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        field, colon, value = line.partition(":")
        if not colon:
            continue
        field, value = field.strip().lower(), value.strip()
        if field == "user-agent":
            if not grouping:
                agents = []
            agents.append(value.lower())
            grouping = True
        elif field in ("allow", "disallow"):
            grouping = False
            if "*" in agents and value:
                rules.append((field, value))
    best: tuple[int, bool, str] | None = None
    for field, value in rules:
        if _matches(value, path):
            key = (len(value), field == "allow", f"{field.capitalize()}: {value}")
            if best is None or key[:2] > best[:2]:
                best = key
    return best[2] if best is not None and not best[1] else None


def _matches(pattern: str, path: str) -> bool:
    """RFC 9309's path match: a prefix, "*" any characters, "$" the end."""
    regex = "".join(".*" if ch == "*" else "$" if ch == "$" else re.escape(ch) for ch in pattern)
    return re.match(regex, path) is not None


async def read_robots_body(content: aiohttp.StreamReader) -> bytes:
    """The body up to one read past ROBOTS_MAX_BYTES (so `robots_text` can tell a file
    that is longer from one that ends at the limit); the rest is never read.

    Read until the end or the limit, however the bytes arrive: one `read(n)` returns
    only what is buffered at that moment, often one TCP segment of a longer file."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in content.iter_any():
        chunks.append(chunk)
        size += len(chunk)
        if size > ROBOTS_MAX_BYTES:
            break
    return b"".join(chunks)


@dataclass(frozen=True, slots=True)
class CrawlDelay:
    """One origin's Crawl-delay: what its robots.txt asked for and what the crawl obeys."""

    origin: str
    asked: float
    used: float

    @property
    def capped(self) -> bool:
        return self.used < self.asked

    def describe(self) -> str:
        """One line for the report and the screens, safe to print."""
        origin = printable(self.origin)
        if self.capped:
            return (
                f"{origin} asked for Crawl-delay {self.asked:g} s;"
                f" {self.used:g} s used (--max-crawl-delay)"
            )
        return f"{origin} asked for Crawl-delay {self.asked:g} s; obeyed"


class RobotsCache:
    """Fetches each origin's robots.txt once; workers asking at the same time share the fetch.

    It also keeps each origin's Crawl-delay, asked and used (capped at `max_crawl_delay`),
    for the crawler to obey and for a report or a screen to show."""

    def __init__(
        self,
        session: Callable[[], aiohttp.ClientSession],
        max_crawl_delay: float = DEFAULT_MAX_CRAWL_DELAY,
    ) -> None:
        self._session = session
        self._rules: dict[str, asyncio.Task[RobotsRules]] = {}
        self.max_crawl_delay = max_crawl_delay
        self.crawl_delays: dict[str, CrawlDelay] = {}  # origins whose robots.txt asks for one

    def known(self, origin: str) -> RobotsRules | None:
        task = self._rules.get(origin)
        return task.result() if task is not None and task.done() else None

    def state(self, origin: str) -> RobotsState:
        """Where `origin`'s robots.txt stands, for the hosts panel."""
        task = self._rules.get(origin)
        if task is None:
            return RobotsState.UNKNOWN
        if not task.done():
            return RobotsState.FETCHING
        if task.cancelled() or task.exception() is not None:
            return RobotsState.UNKNOWN
        rules = task.result()
        if rules.disallow_all:
            return RobotsState.REFUSED
        return RobotsState.MISSING if rules.parser is None else RobotsState.ALLOWED

    def crawl_delay(self, origin: str) -> float:
        """Seconds between request starts that `origin`'s robots.txt gets (0.0: none)."""
        delay = self.crawl_delays.get(origin)
        return delay.used if delay is not None else 0.0

    async def rules(self, origin: str) -> RobotsRules:
        task = self._rules.get(origin)
        if task is None:
            # A task of its own, not the asking worker's: cancelling that worker must not
            # cancel a fetch other workers are waiting on.
            task = asyncio.create_task(self._fetch(origin), name=f"robots {origin}")
            self._rules[origin] = task
        return await asyncio.shield(task)

    async def close(self) -> None:
        pending = [task for task in self._rules.values() if not task.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _fetch(self, origin: str) -> RobotsRules:
        rules = await self._fetch_rules(origin)
        asked = rules.crawl_delay
        if asked:
            used = min(asked, self.max_crawl_delay)
            self.crawl_delays[origin] = CrawlDelay(origin, asked, used)
        return rules

    async def _fetch_rules(self, origin: str) -> RobotsRules:
        # Imported here, once a host: the progress line reads this module's notes in a
        # --procs parent, which never fetches and need not load aiohttp.
        import aiohttp

        url = origin + "/robots.txt"
        try:
            async with self._session().get(url, max_redirects=ROBOTS_MAX_REDIRECTS) as response:
                if response.status >= 500:
                    # RFC 9309 2.3.1.4: a server error means assume complete disallow.
                    note = f"answered {response.status}"
                    return RobotsRules(None, disallow_all=True, note=note)
                if response.status >= 400:
                    # 2.3.1.3: "unavailable" (4xx) means the crawler may access anything.
                    return RobotsRules(None, note=f"answered {response.status}")
                body = await read_robots_body(response.content)
                if len(body) > ROBOTS_MAX_BYTES:
                    response.close()  # the rest is never read: do not reuse the connection
        except (aiohttp.ClientError, TimeoutError) as exc:
            # 2.3.1.4: unreachable is treated like a server error.
            note = f"unreachable ({describe_exception(exc)})"
            return RobotsRules(None, disallow_all=True, note=note)
        return parse_robots(body)


class HostGate:
    """At most `limit` requests in flight per origin (0: no limit), starting at least
    `delay` seconds apart (the larger of ours and the site's Crawl-delay).

    A host may have a limit and a delay of its own (`set_limit`, `set_delay`), changed
    while the crawl runs: a semaphore cannot change its size, so the slots are counted
    here, and each freed slot is handed to the first waiter, in turn (waking them all
    would cost every waiter a turn of the loop per request)."""

    def __init__(self, limit: int, delay: float) -> None:
        self.limit = limit
        self.delay = delay
        self.limits: dict[str, int] = {}  # set on one host, in place of `limit`
        self.delays: dict[str, float] = {}  # set on one host, in place of `delay`
        self._taken: dict[str, int] = {}  # slots held: waiting out the delay, or in flight
        self._waiters: dict[str, deque[asyncio.Future[None]]] = {}
        self._next_start: dict[str, float] = {}
        self.in_flight: dict[str, int] = {}
        self.waiting: dict[str, int] = {}  # workers inside enter(), for a slot or the delay

    def limit_of(self, origin: str) -> int:
        return self.limits.get(origin, self.limit)

    def delay_of(self, origin: str) -> float:
        return self.delays.get(origin, self.delay)

    def next_start(self, origin: str) -> float:
        """The monotonic time before which no request to `origin` starts (0.0: none)."""
        return self._next_start.get(origin, 0.0)

    def _full(self, origin: str) -> bool:
        limit = self.limit_of(origin)
        return bool(limit) and self._taken.get(origin, 0) >= limit

    def enter_now(self, origin: str, delay: float = 0.0) -> bool:
        """`enter` when it would not suspend, without a coroutine (one a page costs more
        than the bookkeeping): True with the slot taken (`leave` it after), else False
        with nothing changed, and `enter` is the way in."""
        if self._full(origin) or self._waiters.get(origin):
            return False
        gap = max(self.delay_of(origin), delay)
        if gap:
            now = time.monotonic()
            if self._next_start.get(origin, 0.0) > now:
                return False
            self._next_start[origin] = now + gap
        self._taken[origin] = self._taken.get(origin, 0) + 1
        self.in_flight[origin] = self.in_flight.get(origin, 0) + 1
        return True

    async def enter(self, origin: str, delay: float = 0.0) -> None:
        self.waiting[origin] = self.waiting.get(origin, 0) + 1
        try:
            # First come, first served, as asyncio.Semaphore: a newcomer queues behind
            # the waiters even when a slot is free, since a freed slot is handed to the
            # first of them (_release) and waking it takes a pass of the loop.
            if self._full(origin) or self._waiters.get(origin):
                await self._wait_for_slot(origin)  # returns holding the slot handed over
            else:
                self._taken[origin] = self._taken.get(origin, 0) + 1
            try:
                gap = max(self.delay_of(origin), delay)
                if gap:
                    now = time.monotonic()
                    # Reserve a start time before sleeping, so concurrent waiters queue up
                    # one gap apart instead of all waking at once.
                    start = max(now, self._next_start.get(origin, 0.0))
                    self._next_start[origin] = start + gap
                    if start > now:
                        await asyncio.sleep(start - now)
            except BaseException:
                self._release(origin)
                raise
        finally:
            self.waiting[origin] -= 1
        self.in_flight[origin] = self.in_flight.get(origin, 0) + 1

    async def _wait_for_slot(self, origin: str) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(origin, deque()).append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            # Handed a slot, then cancelled: the slot goes on to the next one. A waiter
            # cancelled before stays in the queue, done, and _release passes over it (a
            # search of the queue for each would cost a crawl of 10,000 workers seconds).
            if not waiter.cancelled():
                self._release(origin)
            raise

    def _hand_over(self, origin: str) -> bool:
        """Give a slot to the first waiter still waiting; False if there is none."""
        waiters = self._waiters.get(origin)
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return True
        return False

    def leave(self, origin: str) -> None:
        self.in_flight[origin] -= 1
        self._release(origin)

    def _release(self, origin: str) -> None:
        limit = self.limit_of(origin)
        # Over a limit lowered meanwhile, the slot is given up, not handed over.
        if (not limit or self._taken[origin] <= limit) and self._hand_over(origin):
            return
        self._taken[origin] -= 1

    def set_limit(self, origin: str, limit: int) -> None:
        """A limit for `origin` alone (0: none); waiters it lets in go at once."""
        self.limits[origin] = limit = max(0, limit)
        while (not limit or self._taken.get(origin, 0) < limit) and self._hand_over(origin):
            self._taken[origin] = self._taken.get(origin, 0) + 1

    def set_delay(self, origin: str, seconds: float) -> None:
        """Our delay for `origin` alone; a start already reserved keeps its time."""
        self.delays[origin] = max(0.0, seconds)


def crawl_delays_of(crawl: object) -> list[CrawlDelay]:
    """Every Crawl-delay a crawl met, when its engine keeps them (the asyncio engine's
    Crawler does; the lecture engines obey none), for a report or a screen."""
    robots = getattr(crawl, "robots", None)
    return list(robots.crawl_delays.values()) if isinstance(robots, RobotsCache) else []


def crawl_delay_note(crawl: object) -> str:
    """A few words for a live screen on the Crawl-delay that slows the crawl most (or "").

    A delay a host asked for, capped or not, is why its pages come slowly; said here,
    nobody has to guess."""
    delays = crawl_delays_of(crawl)
    if not delays:
        return ""
    top = max(delays, key=lambda delay: delay.asked)
    origin = printable(top.origin)
    if top.capped:
        note = f"Crawl-delay: {origin} asked {top.asked:g} s, {top.used:g} s used"
    else:
        note = f"Crawl-delay: {origin} {top.used:g} s"
    return note + (f" (+{len(delays) - 1} more)" if len(delays) > 1 else "")
