"""What a shared queue costs the process that crawls, a lease at a time: the chapter's
calls (put_nowait, get, task_done, join) with no crawl around them, on the in-memory
frontier, on the Redis frontier over its own connection (engine/cluster/wire.py), and on
the Redis frontier over redis-py's pipeline, side by side.

Each mode runs in a fresh process, the modes in turn and the order rotated every round,
against one redis-server of its own (started as `--procs` starts one: a unix socket); 8
workers each take a lease, wait a millisecond (a fetch), and end it, as a crawl's
per-host limit of 8 on one host has them. The figure is
the process's CPU a lease (Redis's own CPU is not in it: bench/procs.py counts that).

    python -m bench.frontier_cost [--quick] [--leases N] [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from typing import Any

from bench.common import child_figures, machine_line, median, parser, table, write_results

MODES = ("memory", "wire", "pipeline")
WORKERS = 8
ROOT = "http://127.0.0.1:9/"
URL_VARIABLE = "CRAWLSCOPE_BENCH_REDIS"


async def leases(mode: str, count: int) -> dict[str, Any]:
    import redis.asyncio as aioredis

    from crawlscope.engine.cluster.redis_frontier import RedisFrontier
    from crawlscope.engine.config import CrawlConfig
    from crawlscope.engine.frontier import MemoryFrontier
    from crawlscope.engine.ledger import Ledger
    from crawlscope.engine.records import FetchRecord

    ledger = Ledger(CrawlConfig(roots=(ROOT,)))
    if mode == "memory":
        q: Any = MemoryFrontier()
    else:
        client = aioredis.Redis.from_url(os.environ[URL_VARIABLE])
        await client.flushall()
        q = RedisFrontier(client, "bench", ledger, per_host=WORKERS)
        q._wire.usable = mode == "wire"
    for i in range(count):
        url = f"{ROOT}p/{i}"
        ledger.admit(url, 10, 1, ROOT)
        q.put_nowait((url, 10))

    async def worker() -> None:
        while True:
            lease = await q.get()
            await asyncio.sleep(0.001)
            ledger.keep(FetchRecord(
                url=lease.url, status=200, next_url=None, exception=None, size=0,
                content_type=None, encoding=None, num_urls=0, num_new_urls=0, tries=1,
                depth=1, referrer=ROOT, worker=0, t_start=0.0, t_end=0.0,
            ))  # fmt: skip
            q.task_done(lease)

    tasks = [asyncio.create_task(worker()) for _ in range(WORKERS)]
    c0, t0 = time.process_time(), time.perf_counter()
    await q.join()
    cpu, seconds = time.process_time() - c0, time.perf_counter() - t0
    for task in tasks:
        task.cancel()
    rounds = q.store_time()[1] if mode != "memory" else 0
    if mode != "memory":
        await q.close()
    return {"cpu_us_per_lease": 1e6 * cpu / count, "wall_us_per_lease": 1e6 * seconds / count,
            "leases_per_round": count / rounds if rounds else None}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    from crawlscope.engine.cluster.embedded import EmbeddedRedis

    p = parser(__doc__.splitlines()[0])
    p.add_argument("--leases", type=int, help="leases a mode takes (default 5000; quick 500)")
    p.add_argument("--rounds", type=int, help="rounds of the three modes (default 9; quick 1)")
    p.add_argument("--child", nargs=2, metavar=("MODE", "N"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        mode, count = args.child
        print(json.dumps(asyncio.run(leases(mode, int(count)))))
        return 0
    count = args.leases or (500 if args.quick else 5000)
    rounds = args.rounds or (1 if args.quick else 9)
    # The Redis --procs starts for itself (a unix socket, a password), its URL handed to
    # each child in the environment: a password stays off command lines.
    with EmbeddedRedis() as server:
        os.environ[URL_VARIABLE] = server.url_with_password
        rows: list[dict[str, Any]] = []
        for r in range(rounds):
            for mode in MODES[r % 3 :] + MODES[: r % 3]:
                figures = child_figures("bench.frontier_cost", "--child", mode, str(count))
                rows.append({"round": r, "mode": mode, **figures})
                print(f"round {r} {mode}: {figures['cpu_us_per_lease']:.0f} us a lease",
                      flush=True)  # fmt: skip
    cpu = {m: median(r["cpu_us_per_lease"] for r in rows if r["mode"] == m) for m in MODES}
    wall = {m: median(r["wall_us_per_lease"] for r in rows if r["mode"] == m) for m in MODES}
    per_round = median(r["leases_per_round"] for r in rows if r["mode"] == "wire")
    print(machine_line())
    print(table(
        ("frontier", "CPU us a lease (median)", "over memory", "wall us a lease"),
        [(m, cpu[m], cpu[m] - cpu["memory"], wall[m]) for m in MODES],
    ))  # fmt: skip
    print(f"Redis's cost a lease over the in-memory queue: {cpu['wire'] - cpu['memory']:.0f} us "
          f"on the pump's own connection, {cpu['pipeline'] - cpu['memory']:.0f} us on redis-py's "
          f"pipeline ({per_round:.1f} leases a round trip)")  # fmt: skip
    write_results("frontier_cost", args, {
        "rows": rows, "cpu_us_per_lease": cpu, "wall_us_per_lease": wall,
        "leases_per_round": per_round, "leases": count, "rounds": rounds,
    })  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
