"""Every redirect hop the crawl saw, and the chains they form.

The crawler only records hops (source -> target) and which sources ran out of redirect
budget; chains are rebuilt from that on demand, so recording costs one dict write.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum


class ChainEnd(StrEnum):
    FETCHED = "fetched"  # the last URL answered (any status but a redirect)
    FAILED = "failed"  # the last URL gave no response
    PENDING = "pending"  # the last URL is queued or being fetched
    LOOP = "loop"  # the chain comes back to a URL already on it
    LIMIT = "limit"  # max_redirect ran out before the target was fetched
    FILTERED = "filtered"  # the target is out of scope or excluded
    UNFETCHED = "unfetched"  # the target was left by a page limit or stop()


# What became of the URL at the end of a chain; the crawler answers this.
OutcomeLookup = Callable[[str], tuple[ChainEnd, int | None]]


@dataclass(frozen=True, slots=True)
class Chain:
    urls: tuple[str, ...]  # source, hop, ..., last (for a loop, the repeated URL again)
    end: ChainEnd
    status: int | None  # the final status when end is FETCHED
    meets: bool  # another chain redirects to a URL on this one (coalesced by seen_urls)


class RedirectLog:
    def __init__(self) -> None:
        self.hops: dict[str, str] = {}
        self.limited: set[str] = set()
        self.version = 0  # bumps on every change, so a UI redraws only when it moves

    def add(self, source: str, target: str, *, budget_left: bool) -> None:
        self.hops[source] = target
        if not budget_left:
            self.limited.add(source)
        self.version += 1

    def __len__(self) -> int:
        return len(self.hops)

    def chains(self, outcome: OutcomeLookup) -> list[Chain]:
        """All chains, each from a URL no redirect points at (or, for a pure cycle, its
        first-recorded URL), in the order their first hop was recorded."""
        incoming: dict[str, int] = {}
        for target in self.hops.values():
            incoming[target] = incoming.get(target, 0) + 1
        starts = [source for source in self.hops if source not in incoming]
        visited: set[str] = set()
        chains: list[Chain] = []
        for start in starts:
            chains.append(self._walk(start, incoming, visited, outcome))
        for source in self.hops:  # whatever is left sits on a cycle nobody enters from outside
            if source not in visited:
                chains.append(self._walk(source, incoming, visited, outcome))
        return chains

    def _walk(
        self, start: str, incoming: dict[str, int], visited: set[str], outcome: OutcomeLookup
    ) -> Chain:
        urls = [start]
        on_chain = {start}
        current = start
        end: ChainEnd | None = None
        while current in self.hops:
            visited.add(current)
            if current in self.limited:
                urls.append(self.hops[current])
                end = ChainEnd.LIMIT
                break
            nxt = self.hops[current]
            urls.append(nxt)
            if nxt in on_chain:
                end = ChainEnd.LOOP
                break
            on_chain.add(nxt)
            current = nxt
        status = None
        if end is None:
            end, status = outcome(urls[-1])
        meets = any(incoming.get(url, 0) > 1 for url in urls[1:])
        return Chain(tuple(urls), end, status, meets)
