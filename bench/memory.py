"""Memory: what an idle worker costs, coroutine against thread, and the peak RSS of a
100,000-page crawl.

Part 1 starts, in a fresh process each, 10,000 of: crawlscope's own worker tasks
(Crawler.add_worker() with nothing queued, so each waits in `await q.get()`), bare
coroutines waiting on an asyncio.Queue, and threads blocked in queue.Queue.get(); the
growth of the resident set, divided by 10,000, is the cost of one. Part 2 serves a
100,000-page demo site (`crawlscope demo-site`, its own process, build time measured)
and crawls it all in a fresh process whose peak RSS (ru_maxrss) is the figure.

    python -m bench.memory [--quick] [--idle N] [--pages N] [--workers N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import queue
import subprocess
import sys
import threading
import time
from typing import Any

from bench import trial
from bench.common import REPO, DemoSite, SiteOptions, machine_line, parser, table, write_results
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler
from crawlscope.engine.sites.demo import DemoConfig, build_demo_app

TARGET_PEAK_MB = 400
KINDS = ("crawlscope worker", "bare coroutine", "thread")


def rss_bytes() -> int:
    """The resident set right now (not the peak), from /proc/self/status."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


# ---- part 1, in the child process ----------------------------------------------------------


async def _idle_workers(kind: str, n: int) -> dict[str, Any]:
    q: asyncio.Queue[str] = asyncio.Queue()

    async def bare() -> None:
        await q.get()

    crawler = Crawler(CrawlConfig(roots=("http://127.0.0.1:9/",), max_tasks=n))
    # One of each first, so that what is paid once (code, caches) is not counted per worker.
    warm = crawler.add_worker() if kind == "crawlscope worker" else asyncio.create_task(bare())
    await asyncio.sleep(0.05)
    gc.collect()
    before = rss_bytes()
    tasks = []
    for _ in range(n):
        if kind == "crawlscope worker":
            tasks.append(crawler.add_worker().task)
        else:
            tasks.append(asyncio.create_task(bare()))
    await asyncio.sleep(0.2)  # every task has run to its first await and is suspended there
    gc.collect()
    after = rss_bytes()
    waiting = sum(1 for t in tasks if t is not None and not t.done())
    warm_task = warm if isinstance(warm, asyncio.Task) else warm.task
    for t in [*tasks, warm_task]:
        if t is not None:
            t.cancel()
    return {"before": before, "after": after, "alive": waiting}


def _idle_threads(n: int) -> dict[str, Any]:
    q: queue.Queue[object] = queue.Queue()
    stop = object()
    started = threading.Semaphore(0)

    def work() -> None:
        started.release()
        q.get()

    warm = threading.Thread(target=work, daemon=True)
    warm.start()
    started.acquire()
    gc.collect()
    before = rss_bytes()
    threads = []
    error = None
    for _ in range(n):
        t = threading.Thread(target=work, daemon=True)
        try:
            t.start()
        except RuntimeError as exc:  # "can't start new thread": a system limit
            error = str(exc)
            break
        threads.append(t)
    for _ in threads:
        started.acquire()
    time.sleep(0.2)
    after = rss_bytes()
    alive = sum(1 for t in threads if t.is_alive())
    for _ in range(len(threads) + 1):
        q.put(stop)
    for t in threads:
        t.join()
    return {"before": before, "after": after, "alive": alive, "error": error}


def child(kind: str, n: int) -> None:
    result = _idle_threads(n) if kind == "thread" else asyncio.run(_idle_workers(kind, n))
    print(json.dumps(result))


# ---- the parent --------------------------------------------------------------------------


def idle_cost(kind: str, n: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.memory", "--child", kind, "--idle", str(n)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    alive = r["alive"] or 1
    return {
        "kind": kind,
        "count": r["alive"],
        "rss_growth_bytes": r["after"] - r["before"],
        "bytes_each": (r["after"] - r["before"]) / alive,
        "error": r.get("error"),
    }


def server_peak_rss(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def big_crawl(pages: int, workers: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    build_demo_app(DemoConfig(pages=pages, links_per_page=10))
    build = time.perf_counter() - t0
    print(f"demo site of {pages:,} pages: build_demo_app takes {build:.2f}s in-process")
    with DemoSite(SiteOptions(pages=pages, links=10)) as site:
        print(f"  `crawlscope demo-site` answering after {site.startup_seconds:.2f}s")
        result = trial.run("engine", site, workers)
        # The crawling child's own ru_maxrss, in KiB on Linux.
        peak = int(result["max_rss_kib"]) * 1024
        server_peak = server_peak_rss(site.pid)
        # The same crawl with the flight recorder on (as every command has it): its bound,
        # 64 MB, on top of the peak without it at most.
        recorded = trial.run("recorded", site, workers)
        recorded_peak = int(recorded["max_rss_kib"]) * 1024
    return {
        "pages_on_site": pages,
        "pages_crawled": result["pages"],
        "workers": workers,
        "seconds": result["seconds"],
        "pages_per_s": result["pages"] / result["seconds"],
        "peak_rss_bytes": peak,
        "peak_rss_bytes_per_page": peak / max(1, result["pages"]),
        "recorded_peak_rss_bytes": recorded_peak,
        "recorder_rss_bytes": recorded_peak - peak,
        "server_peak_rss_bytes": server_peak,
        "site_build_s": build,
        "site_startup_s": site.startup_seconds,
    }


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--idle", type=int, help="idle workers of each kind (default 10000; quick 2000)")
    p.add_argument("--pages", type=int, help="pages of the big crawl (default 100000; quick 2000)")
    p.add_argument("--workers", type=int, default=100, help="workers of the big crawl")
    p.add_argument("--child", choices=KINDS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.idle = args.idle or (2000 if args.quick else 10_000)
    if args.child:
        child(args.child, args.idle)
        return 0
    args.pages = args.pages or (2000 if args.quick else 100_000)

    print(f"memory: {args.idle:,} idle workers of each kind; {machine_line()}")
    idle = [idle_cost(kind, args.idle) for kind in KINDS]
    print(
        table(
            ["idle worker", "count", "RSS growth MB", "bytes each"],
            [
                [r["kind"], r["count"], r["rss_growth_bytes"] / 1e6, round(r["bytes_each"])]
                for r in idle
            ],
        )
    )
    for r in idle:
        if r["error"]:
            print(f"  {r['kind']}: stopped at {r['count']:,}: {r['error']}")
    by_kind = {r["kind"]: r["bytes_each"] for r in idle}
    thread_vs = by_kind["thread"] / by_kind["crawlscope worker"]
    print(f"a thread costs {thread_vs:.1f}x a crawlscope worker,"
          f" {by_kind['thread'] / by_kind['bare coroutine']:.1f}x a bare coroutine")  # fmt: skip

    print(f"\npeak RSS of a {args.pages:,}-page crawl, {args.workers} workers")
    crawl = big_crawl(args.pages, args.workers)
    peak_mb = crawl["peak_rss_bytes"] / 1e6
    met = "met" if peak_mb <= TARGET_PEAK_MB else "NOT met"
    print(
        table(
            ["pages", "workers", "seconds", "pages/s", "peak RSS MB", "bytes/page",
             f"<= {TARGET_PEAK_MB} MB", "server peak MB"],
            [[crawl["pages_crawled"], crawl["workers"], crawl["seconds"], crawl["pages_per_s"],
              peak_mb, round(crawl["peak_rss_bytes_per_page"]), met,
              (crawl["server_peak_rss_bytes"] or 0) / 1e6]],
        )
    )  # fmt: skip
    recorder_mb = crawl["recorder_rss_bytes"] / 1e6
    within = "within" if recorder_mb <= 64 * 1.048576 else "NOT within"
    print(f"with the flight recorder on: peak RSS {crawl['recorded_peak_rss_bytes'] / 1e6:.0f} MB,"
          f" {recorder_mb:+.0f} MB ({within} its 64 MB bound)")  # fmt: skip
    notes = [
        f"idle worker: crawlscope {by_kind['crawlscope worker']:,.0f} B, bare coroutine"
        f" {by_kind['bare coroutine']:,.0f} B, thread {by_kind['thread']:,.0f} B",
        f"{crawl['pages_crawled']:,}-page crawl: peak RSS {peak_mb:.0f} MB"
        f" (target {TARGET_PEAK_MB} MB: {met})",
        f"demo site build for {args.pages:,} pages: {crawl['site_build_s']:.2f}s",
    ]
    write_results("memory", args, {"idle": idle, "big_crawl": crawl}, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
