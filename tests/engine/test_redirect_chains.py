"""Redirect chains (issue 10, item 5): linear in hops, in the engine, the report and the TUI.

The comb (engine/sites/hostile_comb.py): N URLs redirect into one N-hop chain. Listing
the chain once per tooth is N^2 / 2 URLs; a chain that meets another stops there, so
the chains hold each hop once. Work is counted (lookups, URLs, tree nodes), never timed.
"""

from __future__ import annotations

import asyncio
import io
import itertools
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import pytest
from aiohttp import web
from tui_support import config, crawler_of, frames, until

from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.observe.snapshot import Phase
from crawlscope.engine.redirects import MAX_CHAINS, MAX_HOPS, Chain, ChainEnd, RedirectLog
from crawlscope.engine.remote.client import RemoteCrawl
from crawlscope.engine.remote.monitor import Monitor, listen
from crawlscope.engine.report import chain_line, write_report
from crawlscope.engine.sites.hostile import build_hostile_app
from crawlscope.engine.sites.hostile_comb import COMB, TEETH, comb_url
from crawlscope.engine.trace.recording import Recorder
from crawlscope.engine.trace.replay import ReplayedCrawl
from crawlscope.tui.app import CrawlScopeApp
from crawlscope.tui.startup import LiveCrawl
from crawlscope.tui.waiting import wait_until
from crawlscope.tui.widgets.redirect_tree import RedirectTree
from helpers import Handler, assert_accounted, html

Serve = Callable[[dict[str, Handler]], Awaitable[str]]


class CountingDict(dict[str, str]):
    """A dict that counts the lookups made in it: the steps of a walk along the hops."""

    lookups = 0

    def __getitem__(self, key: str) -> str:
        self.lookups += 1
        return super().__getitem__(key)

    def __contains__(self, key: object) -> bool:
        self.lookups += 1
        return super().__contains__(key)


def counted_log() -> tuple[RedirectLog, CountingDict]:
    log = RedirectLog()
    hops = log.hops = CountingDict()
    return log, hops


def pending(_url: str) -> tuple[ChainEnd, int | None]:
    return ChainEnd.PENDING, None


def fetched(_url: str) -> tuple[ChainEnd, int | None]:
    return ChainEnd.FETCHED, 200


def comb_hops(teeth: int, order: str) -> list[tuple[str, str]]:
    chain = [(f"h{i}", f"h{i + 1}") for i in range(teeth)]
    teeth_hops = [(f"s{i}", f"h{i}") for i in range(teeth)]
    if order == "chain first":
        return chain + teeth_hops
    if order == "teeth first":
        return teeth_hops + chain
    if order == "chain backwards":
        return chain[::-1] + teeth_hops[::-1]
    return [hop for pair in zip(teeth_hops, chain, strict=True) for hop in pair]


def add_all(log: RedirectLog, hops: Iterable[tuple[str, str]]) -> None:
    for source, target in hops:
        log.add(source, target, budget_left=True)


def pairs(chains: list[Chain]) -> list[tuple[str, str]]:
    return [(c.urls[i], c.urls[i + 1]) for c in chains for i in range(len(c.urls) - 1)]


# ---- the chapter's cases, as they always were -------------------------------------------------


def summary(log: RedirectLog, outcome: object = fetched) -> list[tuple[object, ...]]:
    return [(c.urls, c.end, c.status, c.meets) for c in log.chains(outcome)]  # type: ignore[arg-type]


def test_two_chains_meeting_at_their_target_each_end_as_it_did() -> None:
    log = RedirectLog()
    add_all(log, [("/foo", "/baz"), ("/bar", "/baz")])
    assert summary(log) == [
        (("/foo", "/baz"), ChainEnd.FETCHED, 200, True),
        (("/bar", "/baz"), ChainEnd.FETCHED, 200, True),
    ]


def test_loops_and_the_max_redirect_cut() -> None:
    log = RedirectLog()
    add_all(log, [("/loop/a", "/loop/b"), ("/loop/b", "/loop/a"), ("/x", "/y"), ("/y", "/x")])
    add_all(log, [("/in", "/c/a"), ("/c/a", "/c/b"), ("/c/b", "/c/a")])
    for i in range(10):
        log.add(f"/chain/{i}", f"/chain/{i + 1}", budget_left=True)
    log.add("/chain/10", "/chain/11", budget_left=False)
    assert summary(log) == [
        (("/loop/a", "/loop/b", "/loop/a"), ChainEnd.LOOP, None, False),
        (("/x", "/y", "/x"), ChainEnd.LOOP, None, False),
        (("/in", "/c/a", "/c/b", "/c/a"), ChainEnd.LOOP, None, False),
        (tuple(f"/chain/{i}" for i in range(12)), ChainEnd.LIMIT, None, False),
    ]


def test_a_hop_into_the_start_of_a_chain_makes_one_longer_chain() -> None:
    log = RedirectLog()
    add_all(log, [("/foo", "/baz"), ("/x", "/foo"), ("/w", "/x")])
    assert summary(log) == [(("/w", "/x", "/foo", "/baz"), ChainEnd.FETCHED, 200, False)]


def test_a_chain_that_meets_another_part_way_stops_there_and_says_so() -> None:
    log = RedirectLog()
    add_all(log, [("/a", "/b"), ("/b", "/c"), ("/c", "/d"), ("/s", "/c")])
    assert summary(log) == [
        (("/a", "/b", "/c", "/d"), ChainEnd.FETCHED, 200, True),
        (("/s", "/c"), ChainEnd.MEETS, None, True),
    ]
    lines = [chain_line(chain) for chain in log.chains(fetched)]
    assert lines == [
        "  /a -> /b -> /c -> /d [200] (meets another chain)",
        "  /s -> /c [meets another chain]",
    ]


# ---- linear in hops --------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["chain first", "teeth first", "chain backwards", "mixed"])
def test_the_chains_of_a_comb_hold_each_hop_once(order: str) -> None:
    teeth = TEETH
    log, hops = counted_log()
    add_all(log, comb_hops(teeth, order))
    recording = hops.lookups
    hops.lookups = 0
    chains = log.chains(pending)
    # Every hop is on exactly one chain, once; each chain adds its start: about 3 N URLs,
    # where a chain per tooth with the whole tail would be N^2 / 2 (2.9 million).
    assert sorted(pairs(chains)) == sorted(comb_hops(teeth, "chain first"))
    assert sum(len(c.urls) for c in chains) == len(log) + len(chains) <= 3 * teeth + 1
    # The work is as linear as the answer: a lookup or two per hop, recording included.
    assert hops.lookups <= 2 * len(log) + len(chains)
    assert recording <= 2 * len(log)


def test_a_preview_costs_what_it_shows_and_nothing_when_nothing_changed() -> None:
    costs = []
    for teeth in (TEETH, 4 * TEETH):
        log, hops = counted_log()
        add_all(log, comb_hops(teeth, "mixed"))
        hops.lookups = 0
        shown, total = log.preview(pending, MAX_CHAINS, MAX_HOPS)
        costs.append(hops.lookups)
        assert total == log.chain_count >= teeth and len(shown) == MAX_CHAINS
        assert all(c.hops == w.hops for c, w in zip(shown, log.chains(pending), strict=False))
        # Nothing new: no chain is cut again; only each shown chain's end is looked at.
        hops.lookups = 0
        assert log.preview(pending, MAX_CHAINS, MAX_HOPS) == (shown, total)
        assert hops.lookups <= MAX_CHAINS
    # The same work for a comb four times the size: it depends on what is shown only.
    assert costs[0] == costs[1] <= MAX_CHAINS * (MAX_HOPS + 2)


def test_a_long_chain_is_previewed_as_its_first_hops_a_count_and_its_last() -> None:
    log = RedirectLog()
    add_all(log, [(f"/{i}", f"/{i + 1}") for i in range(1000)])
    (whole,) = log.chains(fetched)
    (cut,), total = log.preview(fetched, MAX_CHAINS, MAX_HOPS)
    assert total == 1 and whole.hops == cut.hops == 1000
    assert cut.urls == (*whole.urls[:MAX_HOPS], "/1000")
    assert cut.hidden == 1000 - MAX_HOPS and (cut.end, cut.status) == (ChainEnd.FETCHED, 200)


# ---- over real sockets -------------------------------------------------------------------------


@asynccontextmanager
async def hostile_site() -> AsyncIterator[str]:
    runner = web.AppRunner(build_hostile_app(), access_log=None)
    await runner.setup()
    try:
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest.mark.slow
async def test_the_report_of_the_comb_lists_each_hop_once() -> None:
    async with hostile_site() as base:
        crawler = Crawler(CrawlConfig(roots=(base + COMB,), max_tasks=10, per_host=0))
        await asyncio.wait_for(crawler.crawl(), 120)
    assert len(crawler.ledger.done) == 2 * TEETH + 2 and not crawler.ledger.failed
    assert len(crawler.ledger.redirects) == 2 * TEETH
    assert_accounted(crawler)
    out = io.StringIO()
    write_report(crawler, out)
    report = out.getvalue()
    after = report.splitlines()[report.splitlines().index("Redirect chains:") + 1 :]
    lines = list(itertools.takewhile(lambda line: line.startswith("  http"), after))
    assert len(lines) == crawler.ledger.redirects.chain_count
    # One arrow per hop (a chain per tooth with the whole tail: 2.9 million, 217 MB).
    assert sum(line.count(" -> ") for line in lines) == len(crawler.ledger.redirects)
    assert len(report) < 300 * len(crawler.ledger.done)
    chains = crawler.ledger.chains()
    assert [c.end for c in chains].count(ChainEnd.FETCHED) == 1
    assert {c.end for c in chains} == {ChainEnd.FETCHED, ChainEnd.MEETS}


@pytest.mark.slow
async def test_a_replay_keeps_its_chains_right_back_and_forth(tmp_path: Path) -> None:
    path = tmp_path / "comb.rec"
    async with hostile_site() as base:
        crawler = Crawler(CrawlConfig(roots=(base + comb_url(200),), max_tasks=4, per_host=0))
        recorder = Recorder(crawler, path)
        await crawler.crawl()
        recorder.close()
    replay = ReplayedCrawl.load(path)
    for fraction in (0.5, 1.0, 0.25, 0.75, 0.0, 1.0):
        t = replay.duration * fraction
        replay.seek(t)
        fresh = ReplayedCrawl.load(path)
        fresh.seek(t)
        assert replay.chains() == fresh.chains(), f"at {fraction}"
        assert replay.chain_preview(50, 5) == fresh.chain_preview(50, 5)
    assert replay.chains() == crawler.ledger.chains()


@pytest.mark.slow
async def test_the_tui_crawls_the_comb_to_the_end_and_draws_what_it_can_show() -> None:
    async with hostile_site() as base:
        redraws = 0
        show = RedirectTree.show

        def counted(tree: RedirectTree, chains: list[Chain], total: int | None = None) -> None:
            nonlocal redraws
            redraws += 1
            show(tree, chains, total)

        app = CrawlScopeApp(LiveCrawl((base + COMB,), make_config=config(10, per_host=0)))
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(RedirectTree, "show", counted)
            async with app.run_test(size=(160, 50)) as pilot:
                crawler = await crawler_of(pilot)
                await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
                await frames(pilot, 10)
                tree = app.query_one(RedirectTree)
                shown, total = crawler.chain_preview(MAX_CHAINS, MAX_HOPS)
                drawn = tree._chains
                assert list(drawn.values()) == shown  # the last redraw came after the end
                assert total == crawler.ledger.redirects.chain_count >= TEETH
                assert len(drawn) == MAX_CHAINS
                assert (
                    tree.plain_lines()[-1]
                    == f"… {total - MAX_CHAINS:,} more chains (all are in the report)"
                )
                # A chain's head, then at most MAX_HOPS hops and "… N more hops".
                assert all(len(tree.chain_lines(s)) <= MAX_HOPS + 2 for s in drawn)
                longest = max(shown, key=lambda c: c.hops)
                assert longest.hops > MAX_HOPS and longest.end is ChainEnd.FETCHED
                assert redraws >= 2
                assert app.is_running


@pytest.mark.slow
async def test_the_tree_shows_an_end_that_comes_after_the_last_hop(serve: Serve) -> None:
    # /a -> /b is the crawl's last hop, and /b answers only once the tree has drawn the
    # chain as pending: the tree must still catch up with its end.
    answer = asyncio.Event()

    async def a(_request: web.Request) -> web.Response:
        raise web.HTTPFound("/b")

    async def b(_request: web.Request) -> web.Response:
        await answer.wait()
        return web.Response(text="the end", content_type="text/html")

    root = await serve({"/": html('<a href="/a">a</a>'), "/a": a, "/b": b})
    app = CrawlScopeApp(LiveCrawl((root,), make_config=config(2)))
    try:
        async with app.run_test(size=(160, 40)) as pilot:
            crawler = await crawler_of(pilot)
            tree = app.query_one(RedirectTree)

            def drawn() -> Chain | None:
                return tree._chains.get(root + "a")

            def drawn_pending() -> bool:
                chain = drawn()
                return chain is not None and chain.end is ChainEnd.PENDING

            await until(pilot, drawn_pending, "the chain drawn, its end pending")
            answer.set()
            await until(pilot, lambda: crawler.phase is Phase.FINISHED, "the crawl ends")
            await frames(pilot, 10)
            chain = drawn()
            assert chain is not None and (chain.end, chain.status) == (ChainEnd.FETCHED, 200)
    finally:
        answer.set()


@pytest.mark.slow
async def test_a_viewer_of_the_comb_gets_the_chains_the_panel_draws() -> None:
    # The limits are said once (engine/redirects.py): what a monitor sends its viewers is
    # what the redirect panel of the crawl's own screen shows, chain for chain.
    async with hostile_site() as base:
        crawler = Crawler(CrawlConfig(roots=(base + COMB,), max_tasks=10, per_host=0))
        async with Monitor(crawler, crawler, listen("127.0.0.1", 0), fps=30.0) as monitor:
            crawl = asyncio.create_task(crawler.crawl())
            remote = RemoteCrawl(monitor.url)
            reading = asyncio.create_task(remote.run())
            try:
                await crawl
                drawn = crawler.chain_preview(MAX_CHAINS, MAX_HOPS)
                assert len(drawn[0]) == MAX_CHAINS < drawn[1]
                await wait_until(
                    lambda: remote.chain_preview(MAX_CHAINS, MAX_HOPS) == drawn,
                    "the viewer has the chains the panel draws",
                    timeout=30.0,
                )
            finally:
                reading.cancel()
                with suppress(asyncio.CancelledError):
                    await reading
