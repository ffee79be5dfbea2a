"""Event-loop lag: how late a 10 ms timer fires during a crawl, and how long parsing one
1 MB page holds the loop.

Part 1 crawls the demo site (its own process) with the TUI attached (Textual's headless
driver, normal frame rate) and headless, at 100 and 500 workers, with crawlscope's default
per-host limit (8 requests in flight) and with it off, with a probe coroutine that sleeps
10 ms in a loop and records how late it wakes. With the limit off, the engine alone is also
crawled with its parse turns off (engine/timing/turns.py), to show what they bound. Part 2 serves
one 1 MB page from a tiny aiohttp app (its own process), times parse_links on it, crawls it with the
probe running, and measures the same parse done in a thread and in a process pool.

    python -m bench.loop_lag [--quick] [--workers 100 500] [--pages N]
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

from bench.bigpage import make_page
from bench.common import (
    REPO,
    CpuWatch,
    DemoSite,
    SiteOptions,
    machine_line,
    median,
    parser,
    table,
    write_results,
)
from bench.inprocess import LagProbe, tui_available
from crawlscope.engine import links
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler

TARGET_P99_MS = 40.0
TARGET_HOLD_MS = 50.0


def crawl_case(
    mode: str, site: DemoSite, workers: int, per_host: int = 0, turns: bool = True
) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.inprocess", mode, site.url]
    cmd += ["--workers", str(workers), "--per-host", str(per_host), "--lag"]
    if not turns:
        cmd.append("--no-turns")
    with CpuWatch(site) as watch:
        proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
        figures = watch.stop(crawler_cpu=0.0)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result.update(mode=mode, workers=workers, latency=site.options.latency, per_host=per_host)
    result["turns"] = turns
    result["server_cpu_share"] = figures["server_cpu_s"] / result["seconds"]
    return result


# ---- the 1 MB page -----------------------------------------------------------------------


def _parse_cold(body: bytes, url: str) -> tuple[str, list[str]]:
    # A page seen for the first time: none of its links normalised before.
    links._resolved.clear()
    return links.parse_links(body, url, "utf-8", CrawlConfig(roots=(url,)).max_links)


async def _hold(call: Callable[[], Any]) -> tuple[float, float]:
    """(wall seconds of `call`, the probe's worst lateness meanwhile)."""
    probe = LagProbe()
    probe.start()
    await asyncio.sleep(0.05)  # the probe is running and on time
    t0 = time.perf_counter()
    await call()
    wall = time.perf_counter() - t0
    await asyncio.sleep(0.03)  # the wake-up that was held back gets recorded
    await probe.stop()
    return wall, max(probe.lags, default=0.0)


async def big_page_holds(body: bytes, url: str, reps: int) -> dict[str, dict[str, float]]:
    loop = asyncio.get_running_loop()
    results: dict[str, dict[str, float]] = {}

    async def inline() -> None:
        _parse_cold(body, url)

    executors: dict[str, Executor] = {
        "thread pool": ThreadPoolExecutor(1),
        "process pool": ProcessPoolExecutor(1),
    }
    try:
        for executor in executors.values():
            # Start the worker (and import bs4 in it) before anything is timed.
            await loop.run_in_executor(executor, _parse_cold, b"<a href=x>", url)
        cases: dict[str, Callable[[], Any]] = {"inline (as today)": inline}
        for name, executor in executors.items():
            cases[name] = functools.partial(loop.run_in_executor, executor, _parse_cold, body, url)
        for name, call in cases.items():
            walls, holds = [], []
            for _ in range(reps):
                wall, hold = await _hold(call)
                walls.append(wall)
                holds.append(hold)
            results[name] = {
                "parse_wall_ms": median(walls) * 1000,
                "loop_held_ms": median(holds) * 1000,
                "loop_held_max_ms": max(holds) * 1000,
            }
    finally:
        for executor in executors.values():
            executor.shutdown()
    return results


async def crawl_big_page(url: str, reps: int) -> dict[str, float]:
    """The real thing: crawlscope fetching the page, parsing it, admitting its links."""
    worst = []
    for _ in range(reps):
        links._resolved.clear()
        # max_pages=1: the links are parsed and admitted, but not fetched afterwards.
        crawler = Crawler(CrawlConfig(roots=(url,), max_tasks=10, max_pages=1, per_host=0))
        probe = LagProbe()
        probe.start()
        await crawler.crawl()
        await asyncio.sleep(0.03)
        await probe.stop()
        worst.append(max(probe.lags, default=0.0))
    return {"max_lag_ms": median(worst) * 1000, "max_lag_max_ms": max(worst) * 1000}


def big_page(size: int, reps: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bench.bigpage", "--size", str(size)]
    server = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        match = re.search(r"http://\S+/", server.stdout.readline())
        if match is None:
            raise RuntimeError("the big-page server did not start")
        url = match.group(0)
        body = make_page(size)
        cold = []
        for _ in range(reps):
            t0 = time.perf_counter()
            _encoding, found = _parse_cold(body, url)
            cold.append(time.perf_counter() - t0)
        holds = asyncio.run(big_page_holds(body, url, reps))
        crawl = asyncio.run(crawl_big_page(url, reps))
    finally:
        server.terminate()
        server.wait()
    return {
        "bytes": len(body),
        "a_tags": body.count(b"<a "),
        "links_kept": len(found),
        "parse_links_ms": median(cold) * 1000,
        "parse_links_ms_all": [c * 1000 for c in cold],
        "crawl": crawl,
        "alternatives": holds,
    }


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, nargs="+", metavar="N", help="default 100 500")
    p.add_argument("--pages", type=int, help="demo site pages (default 5000; quick 400)")
    p.add_argument(
        "--latencies",
        type=float,
        nargs="+",
        metavar="S",
        help="demo site latencies to crawl (default 0 0.1; quick 0)",
    )
    p.add_argument(
        "--per-host",
        type=int,
        nargs="+",
        metavar="N",
        help="per-host limits (default 8 0: crawlscope's default, and off; quick 0); a limit"
        " is only used on the site with no latency",
    )
    p.add_argument("--size", type=int, default=1_000_000, help="big page bytes (default 1 MB)")
    args = p.parse_args(argv)
    args.workers = args.workers or ([100] if args.quick else [100, 500])
    args.pages = args.pages or (400 if args.quick else 5000)
    args.latencies = args.latencies or ([0.0] if args.quick else [0.0, 0.1])
    args.per_host = args.per_host or ([0] if args.quick else [8, 0])
    reps = 2 if args.quick else 5

    print(f"loop lag: 10 ms probe; {machine_line()}")
    why_no_tui = tui_available()
    modes = ["tui", "headless"] if why_no_tui is None else ["headless"]
    if why_no_tui is not None:
        print(f"the TUI cannot be loaded ({why_no_tui}): headless only")
    rows: list[dict[str, Any]] = []
    for latency in args.latencies:
        with DemoSite(SiteOptions(pages=args.pages, latency=latency)) as site:
            crawl_case("headless", site, max(args.workers))  # warm-up, not measured
            for per_host, workers, mode in itertools.product(args.per_host, args.workers, modes):
                if per_host and latency:
                    # 8 in flight to a host 100 ms away is 80 pages/s whatever the workers:
                    # nothing to learn about the loop, and minutes of crawling.
                    continue
                # With no limit and no latency the crawl saturates the loop: there the
                # engine alone is also measured with its parse turns off, side by side.
                both = not per_host and not latency and mode == "headless"
                for turns in (True, False) if both else (True,):
                    row = crawl_case(mode, site, workers, per_host, turns)
                    rows.append(row)
                    lag = row["lag"]
                    print(
                        f"  {latency * 1000:4.0f} ms site  per-host {per_host or 'off':>3}"
                        f"  {mode:8s} {workers:4d} workers  turns {'on' if turns else 'off':3}"
                        f"  {row['pages_per_s']:6.0f} pages/s  lag p50 {lag['p50_ms']:6.1f}"
                        f"  p99 {lag['p99_ms']:6.1f}  max {lag['max_ms']:6.1f} ms"
                        f"  ({lag['samples']} samples)"
                    )

    print(f"\n1 MB page: {reps} repetitions")
    page = big_page(args.size, reps)

    print("\nlateness of a 10 ms timer during a crawl (ms)")
    headers = ["site latency", "per-host limit", "mode", "workers", "parse turns", "pages/s",
               "p50 ms", "p99 ms", "max ms", f"p99 <= {TARGET_P99_MS:g}"]  # fmt: skip
    print(
        table(
            headers,
            [
                [f"{r['latency'] * 1000:g} ms", r["per_host"] or "off", r["mode"], r["workers"],
                 "on" if r["turns"] else "off", r["pages_per_s"],
                 r["lag"]["p50_ms"], r["lag"]["p99_ms"], r["lag"]["max_ms"],
                 "met" if r["lag"]["p99_ms"] <= TARGET_P99_MS else "NOT met"]
                for r in rows
            ],
        )
    )  # fmt: skip
    print(
        f"\n1 MB page ({page['bytes']:,} bytes, {page['a_tags']:,} <a> tags,"
        f" {page['links_kept']:,} unique links): parse_links {page['parse_links_ms']:.1f} ms;"
        f" crawled by crawlscope, the loop was held {page['crawl']['max_lag_ms']:.1f} ms"
        " (worst probe lateness)"
    )
    alt = page["alternatives"]
    print(
        table(
            ["parse_links runs", "parse wall ms", "loop held ms (median)", "loop held ms (max)"],
            [
                [name, a["parse_wall_ms"], a["loop_held_ms"], a["loop_held_max_ms"]]
                for name, a in alt.items()
            ],
        )
    )
    notes = _notes(rows, page)
    for note in notes:
        print(note)
    write_results(
        "loop_lag",
        args,
        {"crawls": rows, "big_page": page, "tui": why_no_tui or "attached"},
        notes,
    )
    return 0


def _notes(rows: list[dict[str, Any]], page: dict[str, Any]) -> list[str]:
    notes = []
    for r in rows:
        if r["lag"]["p99_ms"] > TARGET_P99_MS and r["turns"]:
            notes.append(
                f"p99 {r['lag']['p99_ms']:.0f} ms over target: {r['mode']}, {r['workers']}"
                f" workers, per-host limit {r['per_host'] or 'off'},"
                f" {r['latency'] * 1000:g} ms site"
            )
    if any(r["lag"]["p99_ms"] > TARGET_P99_MS and r["turns"] for r in rows):
        notes.append(
            "why: asyncio runs every callback that is ready before it looks at its timers"
            " again, so when the crawler is CPU-bound a loop pass lasts about (responses in"
            " flight) x (CPU per page): bounded by the per-host limit, or by parsing off the"
            " loop (docs/measurements.md)"
        )
    held = page["crawl"]["max_lag_ms"]
    verdict = "met" if held <= TARGET_HOLD_MS else "NOT met"
    notes.append(f"1 MB page held the loop {held:.1f} ms (target {TARGET_HOLD_MS:g} ms: {verdict})")
    if held > TARGET_HOLD_MS:
        alt = page["alternatives"]
        inline = alt["inline (as today)"]["loop_held_ms"]
        best = min(alt.items(), key=lambda kv: kv[1]["loop_held_ms"])
        notes.append(
            f"fix: parse_links in a {best[0]} holds the loop {best[1]['loop_held_ms']:.1f} ms"
            f" instead of {inline:.1f} ms (admitting the page's links stays on the loop)"
        )
    return notes


if __name__ == "__main__":
    sys.exit(main())
