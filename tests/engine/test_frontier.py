"""The frontier's contract: leases, an idempotent task_done, a join on unfinished == 0."""

from __future__ import annotations

import asyncio

from crawlscope.engine.frontier import MemoryFrontier


async def test_task_done_counts_a_lease_once() -> None:
    q = MemoryFrontier()
    q.put_nowait(("http://a/", 10))
    q.put_nowait(("http://b/", 10))
    lease = await q.get()
    assert lease.pair == ("http://a/", 10) and q.unfinished == 2
    q.task_done(lease)
    q.task_done(lease)  # a second call for the same lease counts nothing
    assert q.unfinished == 1
    other = await q.get()
    q.task_done(other)
    await asyncio.wait_for(q.join(), 5)


async def test_a_lease_put_back_is_queued_again_and_still_ends() -> None:
    q = MemoryFrontier()
    q.put_nowait(("http://a/", 3))
    lease = await q.get()
    q.put_back(lease)
    q.task_done(lease)
    assert q.unfinished == 1 and q.qsize() == 1
    again = await q.get()
    assert again.pair == ("http://a/", 3)
    q.task_done(again)
    assert q.unfinished == 0
