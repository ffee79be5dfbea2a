"""The hosts over a monitor: the rows reach a viewer as the crawl has them, and the hosts
screen's controls act for the token's holder only, each checked before it acts."""

from __future__ import annotations

from test_monitor import attached, watched

from crawlscope.engine.crawler import Crawler
from crawlscope.engine.hosts.controls import MAX_HOST_DELAY, MAX_HOST_LIMIT, MAX_ORIGIN
from crawlscope.engine.remote.client import RemoteControls
from crawlscope.tui.waiting import wait_until


def origin_of(crawler: Crawler) -> str:
    return crawler.config.roots[0].rstrip("/")


async def test_a_viewer_gets_the_host_rows_and_steers_a_host() -> None:
    async with watched(paused=True) as (crawler, monitor), attached(monitor.url) as remote:
        origin = origin_of(crawler)
        await wait_until(lambda: remote.snapshot().hosts, "a host row")
        assert remote.snapshot().hosts[0].origin == origin
        controls = RemoteControls(remote)
        controls.block_host(origin)
        await wait_until(lambda: remote.snapshot().hosts[0].blocked, "blocked, as seen")
        assert crawler.host_book.blocked(origin)
        controls.set_host_delay(origin, 1.5)
        controls.set_host_limit(origin, 3)
        await wait_until(lambda: remote.snapshot().hosts[0].limit == 3, "the limit, as seen")
        assert (crawler.hosts.delay_of(origin), crawler.hosts.limit_of(origin)) == (1.5, 3)
        controls.unblock_host(origin)
        await wait_until(lambda: not remote.snapshot().hosts[0].blocked, "unblocked")
        assert not remote.errors


async def test_host_controls_without_the_token_or_out_of_bounds_are_refused() -> None:
    async with watched(paused=True) as (crawler, monitor):
        origin = origin_of(crawler)
        async with attached(monitor.view_url) as watcher:
            RemoteControls(watcher).block_host(origin)
            await wait_until(lambda: watcher.answers == 1, "the answer")
            assert list(watcher.errors) == ["read-only: this connection has no control token"]
        async with attached(monitor.url) as remote:
            sent = [
                ("block_host", {"host": 7}),
                ("block_host", {"host": "x" * (MAX_ORIGIN + 1)}),
                ("set_host_delay", {"host": origin, "seconds": MAX_HOST_DELAY + 1}),
                ("set_host_delay", {"host": origin, "seconds": True}),
                ("set_host_limit", {"host": origin, "limit": MAX_HOST_LIMIT + 1}),
                ("set_host_limit", {"host": origin, "limit": 1.5}),
                ("set_host_limit", {"host": origin}),
            ]
            for control, args in sent:
                remote.send(control, **args)
            await wait_until(lambda: remote.answers == len(sent), "every answer")
            assert remote.refused == len(sent)
            assert list(remote.errors)[-1] == "set_host_limit needs 'limit'"
    assert not crawler.host_book.blocked(origin)
    assert (crawler.hosts.delays, crawler.hosts.limits) == ({}, {})


async def test_host_controls_on_a_host_the_crawl_never_met_are_refused() -> None:
    """A typo, or a host not met yet: an error that names it, never "ok" and a phantom row."""
    async with watched(paused=True) as (crawler, monitor), attached(monitor.url) as remote:
        await wait_until(lambda: remote.snapshot().hosts, "a host row")
        stranger = "http://never-met.invalid"
        controls = RemoteControls(remote)
        controls.block_host(stranger)
        controls.set_host_delay(stranger, 2.0)
        controls.set_host_limit(stranger, 2)
        controls.unblock_host(stranger)
        await wait_until(lambda: remote.answers == 4, "every answer")
        assert list(remote.errors) == [f"no host {stranger} in this crawl"] * 4
        assert [row.origin for row in remote.snapshot().hosts] == [origin_of(crawler)]
    assert stranger not in crawler.host_book.hosts and not crawler.host_book.blocked(stranger)
    assert (crawler.hosts.delays, crawler.hosts.limits) == ({}, {})
