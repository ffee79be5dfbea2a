"""Two processes of one cluster on one host share the work, with the default options."""

from __future__ import annotations

from pathlib import Path

from redis_support import (
    RedisServer,
    balanced_books,
    crawl,
    fetched,
    finish,
    records,
    redis_server,
    wait_until,
)

from helpers import demo_site_process

__all__ = ["redis_server"]  # a fixture, used by name


def test_a_process_that_joins_later_gets_its_share(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    # One host, so the default --per-host 8 is what both processes contend for: the
    # first holds every slot when the second comes. Slow pages (about 25 s of crawl) so
    # that the second's start-up on a loaded machine is a small part of it.
    with demo_site_process("--pages", "1000", "--latency", "0.2") as site:
        first, second = tmp_path / "first.jsonl", tmp_path / "second.jsonl"
        procs = [crawl(site, redis_server.url, first)]
        try:
            wait_until(lambda: len(fetched(first)) >= 10, "the first process 10 pages in",
                       seen=lambda: len(fetched(first)), procs=procs)  # fmt: skip
            procs.append(crawl(site, redis_server.url, second))
            for proc in procs:
                finish(proc, timeout=300)
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
    pages = {str(r["url"]) for out in (first, second) for r in records(out)}
    assert len(pages) > 1000
    for out in (first, second):
        assert len(fetched(out)) >= len(pages) / 3, [len(fetched(o)) for o in (first, second)]
    assert balanced_books(redis_server)
