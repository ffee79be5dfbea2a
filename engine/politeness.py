"""Being a good citizen: robots.txt (RFC 9309) and a per-host limit on concurrency and rate."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

import aiohttp
from protego import Protego
from yarl import URL

from .records import describe_exception

ROBOTS_AGENT = "crawlscope"  # the product token robots.txt rules are matched against
ROBOTS_MAX_BYTES = 500 * 1024  # RFC 9309 lets a crawler stop parsing after 500 KiB
ROBOTS_MAX_REDIRECTS = 5  # RFC 9309 asks to follow at least five


@dataclass(frozen=True, slots=True)
class RobotsRules:
    """What one host's robots.txt says; `parser` None means no rules (allow everything)."""

    parser: Protego | None
    disallow_all: bool = False
    note: str = ""  # why, when it is not a parsed file: "404", "unreachable: ..."

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

    @property
    def crawl_delay(self) -> float:
        if self.parser is None:
            return 0.0
        delay = self.parser.crawl_delay(ROBOTS_AGENT)
        return float(delay) if delay else 0.0


class RobotsCache:
    """Fetches each origin's robots.txt once; workers asking at the same time share the fetch."""

    def __init__(self, session: Callable[[], aiohttp.ClientSession]) -> None:
        self._session = session
        self._rules: dict[str, asyncio.Task[RobotsRules]] = {}

    def known(self, origin: str) -> RobotsRules | None:
        task = self._rules.get(origin)
        return task.result() if task is not None and task.done() else None

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
                body = await response.content.read(ROBOTS_MAX_BYTES)
        except (aiohttp.ClientError, TimeoutError) as exc:
            # 2.3.1.4: unreachable is treated like a server error.
            note = f"unreachable ({describe_exception(exc)})"
            return RobotsRules(None, disallow_all=True, note=note)
        return RobotsRules(Protego.parse(body.decode("utf-8", "replace")), note="parsed")


def origin_of(url: str) -> str:
    """scheme://host[:port], the unit robots.txt and the per-host limit apply to."""
    return str(URL(url).origin())


class HostGate:
    """At most `limit` requests in flight per origin (0: no limit), starting at least
    `delay` seconds apart (the larger of ours and the site's Crawl-delay)."""

    def __init__(self, limit: int, delay: float) -> None:
        self.limit = limit
        self.delay = delay
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._next_start: dict[str, float] = {}
        self.in_flight: dict[str, int] = {}

    def must_wait(self, origin: str, delay: float = 0.0) -> bool:
        """Would `enter` suspend right now? (So a worker shows "throttled" only when it is.)"""
        slot = self._slots.get(origin)
        if slot is not None and slot.locked():
            return True
        gap = max(self.delay, delay)
        return bool(gap) and self._next_start.get(origin, 0.0) > time.monotonic()

    async def enter(self, origin: str, delay: float = 0.0) -> None:
        if self.limit:
            slot = self._slots.get(origin)
            if slot is None:
                slot = self._slots[origin] = asyncio.Semaphore(self.limit)
            await slot.acquire()
        try:
            gap = max(self.delay, delay)
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
        self.in_flight[origin] = self.in_flight.get(origin, 0) + 1

    def leave(self, origin: str) -> None:
        self.in_flight[origin] -= 1
        self._release(origin)

    def _release(self, origin: str) -> None:
        if self.limit:
            self._slots[origin].release()
