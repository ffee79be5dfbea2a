"""Every redirect hop the crawl saw, and the chains they form.

The crawler records hops (source -> target) and which sources ran out of redirect budget.
Chains are kept up to date as hops come, at a cost per hop that does not depend on how
long the chains are or how many there are, so that a site of thousands of redirects into
one long chain (engine/sites/hostile_comb.py) costs what its hops cost, not their square:

- a chain runs from a URL no redirect leads to (or, for a loop nothing leads into, from
  its first URL), along each hop into a URL no earlier hop led to;
- a hop into a URL an earlier hop led to (coalesced by `seen_urls`: fetched once) stops
  its chain there: the chain *meets* the one that goes on from that URL, and says so,
  instead of repeating its tail. It ends as that URL did if the other chain ends there
  too, else as `MEETS`. So each hop is on one chain only, and all the chains together
  hold one URL per hop plus one per chain;
- a hop back onto its own chain ends it in a loop, and a hop with no budget left ends
  it as cut by max_redirect.

The chapter's cases come out as they always did: foo -> baz and bar -> baz meet at baz
(each ends as baz did), a loop ends on its first URL again, and a chain cut by
max_redirect shows the hop it did not follow. Chains are listed in the order they began.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

# What a screen shows of the chains (the redirect panel draws them, a monitor sends them
# to its viewers, once for all): the first MAX_CHAINS chains, each cut to MAX_HOPS hops;
# the rest are counted, and the report lists them all.
MAX_CHAINS = 300
MAX_HOPS = 20


class ChainEnd(StrEnum):
    FETCHED = "fetched"  # the last URL answered (any status but a redirect)
    FAILED = "failed"  # the last URL gave no response
    PENDING = "pending"  # the last URL is queued or being fetched
    LOOP = "loop"  # the chain comes back to a URL already on it
    LIMIT = "limit"  # max_redirect ran out before the target was fetched
    FILTERED = "filtered"  # the target is out of scope or excluded
    UNFETCHED = "unfetched"  # the target was left by a page limit or stop()
    MEETS = "meets"  # the last URL is on another chain, which goes on from it


# What became of the URL at the end of a chain; the crawler answers this.
OutcomeLookup = Callable[[str], tuple[ChainEnd, int | None]]


@dataclass(frozen=True, slots=True)
class Chain:
    urls: tuple[str, ...]  # source, hop, ..., last (for a loop, the repeated URL again)
    end: ChainEnd
    status: int | None  # the final status when end is FETCHED
    meets: bool  # it stops on a URL of another chain, or another chain stops on it
    hidden: int = 0  # URLs left out between urls[-2] and urls[-1] (a preview of a long one)

    @property
    def hops(self) -> int:
        return len(self.urls) - 1 + self.hidden


@dataclass(slots=True, eq=False)
class _Run:
    """A chain as the hops build it: the path from `start` to `last`, and its stop."""

    start: str
    last: str  # the last URL of its own path
    hops: int = 0  # along its own path
    stop: ChainEnd | None = None  # LOOP, LIMIT or MEETS once last's hop ends it; None: open
    stop_at: str | None = None  # where that hop leads
    met: bool = False  # another chain stops on a URL of this one
    onto: bool = False  # this one stops on a URL of another chain
    revision: int = 0  # bumps on every change above, so a preview is cut again only then
    merged_into: _Run | None = None  # set when a hop into its start made it part of another
    preview: tuple[int, int, tuple[str, ...], int] | None = None  # revision, hops, urls, hidden


class RedirectLog:
    def __init__(self) -> None:
        self.hops: dict[str, str] = {}
        self.limited: set[str] = set()
        self.version = 0  # bumps on every change, so a UI redraws only when it moves
        self._runs: dict[str, _Run] = {}  # start -> chain, in the order chains began
        self._open: dict[str, _Run] = {}  # last URL -> chain, for the chains still open
        self._run_of: dict[str, _Run] = {}  # URL on a path -> the chain it joined first
        self._entered: set[str] = set()  # URLs a path leads into (so never a start)

    def add(self, source: str, target: str, *, budget_left: bool) -> None:
        if source in self.hops:
            return  # a URL is fetched once, so it has one hop; a second is not news
        self.hops[source] = target
        if not budget_left:
            self.limited.add(source)
        self.version += 1
        run = self._open.pop(source, None)
        if run is None:  # no chain leads here: a new one starts
            run = self._runs[source] = self._run_of[source] = _Run(source, source)
        self._follow(run, target, cut=not budget_left)
        run.revision += 1

    def _follow(self, run: _Run, target: str, *, cut: bool) -> None:
        """Extend `run`, open and ending at the hop's source, by the hop to `target`."""
        owner = self._owner(target)
        if cut or owner is run or target in self._entered:
            run.stop = ChainEnd.LIMIT if cut else ChainEnd.LOOP if owner is run else ChainEnd.MEETS
            run.stop_at = target
            if owner is not None and owner is not run:
                run.onto = owner.met = True
                owner.revision += 1
        elif owner is not None:  # target starts another chain: this one takes it over
            self._take_over(run, owner)
        else:
            self._run_of[target] = run
            self._entered.add(target)
            self._open[target] = run
            run.last = target
            run.hops += 1

    def _take_over(self, run: _Run, other: _Run) -> None:
        del self._runs[other.start]
        other.merged_into = run
        self._entered.add(other.start)
        run.last, run.hops = other.last, run.hops + 1 + other.hops
        run.stop, run.stop_at = other.stop, other.stop_at
        run.met, run.onto = run.met or other.met, run.onto or other.onto
        if other.stop is None:
            self._open[other.last] = run

    def _owner(self, url: str) -> _Run | None:
        """The chain whose path holds `url` now: the one it joined, or the one that took
        that over (and so on; the links are shortened on the way, as in union-find)."""
        run = self._run_of.get(url)
        if run is None:
            return None
        root = run
        while root.merged_into is not None:
            root = root.merged_into
        while run is not root:
            parent = run.merged_into
            assert parent is not None
            run.merged_into = root
            run = parent
        return root

    def __len__(self) -> int:
        return len(self.hops)

    @property
    def chain_count(self) -> int:
        return len(self._runs)

    def chains(self, outcome: OutcomeLookup) -> list[Chain]:
        """All chains, whole, in the order they began; together about as long as the hops."""
        return [self._chain(run, outcome, *self._cut(run, None)) for run in self._runs.values()]

    def preview(self, outcome: OutcomeLookup, limit: int, hops: int) -> tuple[list[Chain], int]:
        """The first `limit` chains, each longer than `hops` hops cut to its first
        `hops` - 1 and its last, and how many chains there are. The cost depends on
        `limit` and `hops` and on which chains changed since the last call; never on how
        many chains there are or how long they are."""
        shown = []
        for run in itertools.islice(self._runs.values(), limit):
            cut = run.preview
            if cut is None or cut[0] != run.revision or cut[1] != hops:
                cut = run.preview = (run.revision, hops, *self._cut(run, hops))
            shown.append(self._chain(run, outcome, cut[2], cut[3]))
        return shown, len(self._runs)

    def _cut(self, run: _Run, hops: int | None) -> tuple[tuple[str, ...], int]:
        """The chain's URLs (all, or the first `hops` and the last) and how many are left out."""
        last = run.last if run.stop_at is None else run.stop_at
        total = run.hops + (2 if run.stop_at is not None else 1)
        keep = total if hops is None or total <= hops + 1 else hops
        urls = [run.start]
        url = run.start
        for _ in range(min(keep, run.hops + 1) - 1):
            url = self.hops[url]
            urls.append(url)
        if len(urls) < keep or keep < total:
            urls.append(last)
        return tuple(urls), total - len(urls)

    def _chain(
        self, run: _Run, outcome: OutcomeLookup, urls: tuple[str, ...], hidden: int
    ) -> Chain:
        if run.stop is None:
            end, status = outcome(run.last)
        elif run.stop is ChainEnd.MEETS and run.stop_at not in self.hops:
            # The chain it meets ends right there, so this one ends as that URL did.
            end, status = outcome(urls[-1])
        else:
            end, status = run.stop, None
        return Chain(urls, end, status, run.met or run.onto, hidden)
