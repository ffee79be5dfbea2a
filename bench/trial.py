"""One measured crawl in a fresh process, printed as one JSON line; `run` starts one.

Every trial of a comparison runs in a process of its own, so that no trial inherits the
heap, the caches or the garbage of the one before, and crawlscope's engine, the bare
baseline and the `crawlscope crawl` command are all measured under the same conditions.

    python -m bench.trial engine http://127.0.0.1:8353/ --workers 100
    python -m bench.trial baseline http://127.0.0.1:8353/ --workers 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import baseline
from bench.common import REPO, CpuWatch, DemoSite, verdict
from crawlscope.engine.config import CrawlConfig
from crawlscope.engine.crawler import Crawler


def steady_rate(stamps: list[float]) -> float:
    """Pages/s between the 10th and the 90th percent of the pages: the crawl at full speed,
    without the start (one root page, the frontier still growing) or the tail."""
    if len(stamps) < 20:
        return float("nan")
    stamps = sorted(stamps)
    lo, hi = len(stamps) // 10, len(stamps) * 9 // 10
    span = stamps[hi] - stamps[lo]
    return (hi - lo) / span if span > 0 else float("nan")


def engine_config(root: str, workers: int, per_host: int = 0) -> CrawlConfig:
    """crawlscope's defaults, but with the per-host limit off unless asked: the benchmarks
    crawl one host, and the worker count, not the politeness limit, is what they compare."""
    return CrawlConfig(roots=(root,), max_tasks=workers, per_host=per_host)


async def crawl_recorded(root: str, workers: int) -> dict[str, Any]:
    """The engine with the flight recorder on, as every command's crawl has it."""
    return await crawl_engine(root, workers, recorded=True)


async def crawl_engine(root: str, workers: int, recorded: bool = False) -> dict[str, Any]:
    crawler = Crawler(engine_config(root, workers))
    if recorded:
        from crawlscope.engine.trace.flight import FlightRing
        from crawlscope.engine.trace.recording import Recorder

        Recorder(crawler, None, FlightRing())
    stamps: list[float] = []
    crawler.ledger.record_listeners.append(lambda _record: stamps.append(time.perf_counter()))
    t0, c0 = time.perf_counter(), time.process_time()
    await crawler.crawl()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {
        "pages": len(crawler.ledger.done) + len(crawler.ledger.failed),
        "errors": len(crawler.ledger.failed),
        "seconds": seconds,
        "cpu_seconds": cpu,
        "steady_pages_per_s": steady_rate(stamps),
    }


async def crawl_baseline(root: str, workers: int) -> dict[str, Any]:
    stamps: list[float] = []
    result = await baseline.crawl(root, workers, stamps)
    figures: dict[str, Any] = asdict(result)
    # The baseline counts responses; crawlscope counts URLs finished, with or without one.
    figures["pages"] += figures["errors"]
    figures["steady_pages_per_s"] = steady_rate(stamps)
    return figures


async def crawl_fetch(root: str, workers: int, pages: int) -> dict[str, Any]:
    stamps: list[float] = []
    figures: dict[str, Any] = asdict(await baseline.fetch_only(root, workers, pages, stamps))
    figures["pages"] += figures["errors"]
    figures["steady_pages_per_s"] = steady_rate(stamps)
    return figures


RUNNERS = {"engine": crawl_engine, "recorded": crawl_recorded, "baseline": crawl_baseline}


# ---- the parent's side ------------------------------------------------------------------


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(kind: str, site: DemoSite, workers: int, before: Path | None = None) -> dict[str, Any]:
    """Crawl `site` once in a fresh process: "engine", "baseline", "fetch" (aiohttp
    fetching alone) or "command" (the CLI); with `before`, the engine of the checkout
    there (with its own .venv), for a side-by-side of two versions."""
    if before is not None:
        python = str(before / ".venv" / "bin" / "python")
        cmd = [python, "-m", "bench.trial", "engine", site.url, "--workers", str(workers)]
    elif kind == "command":
        cmd = [sys.executable, "-m", "crawlscope", "crawl", site.url]
        cmd += ["--max-tasks", str(workers), "--per-host", "0", "-q"]
    else:
        cmd = [sys.executable, "-m", "bench.trial", kind, site.url, "--workers", str(workers)]
        if kind == "fetch":
            cmd += ["--pages", str(site.options.pages)]
    cpu0 = _children_cpu()
    with CpuWatch(site) as watch:
        cwd = REPO if before is None else before
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
        outside = watch.stop(crawler_cpu=_children_cpu() - cpu0)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    row: dict[str, Any] = {"kind": kind, "workers": workers, "process_wall_s": outside["wall_s"]}
    if kind == "command":
        # The command's own time is all there is: interpreter start, imports and the crawl.
        row.update(pages=None, seconds=outside["wall_s"], cpu_seconds=outside["crawler_cpu_s"])
    else:
        inside = json.loads(proc.stdout.strip().splitlines()[-1])
        row.update(
            pages=inside["pages"],
            errors=inside["errors"],
            seconds=inside["seconds"],
            cpu_seconds=inside["cpu_seconds"],
            steady_pages_per_s=inside["steady_pages_per_s"],
            max_rss_kib=inside["max_rss_kib"],
        )
    # Shares of one core over the crawl itself; the server idles while a trial starts up.
    window = {
        "wall_s": row["seconds"],
        "crawler_cpu_s": row["cpu_seconds"],
        "server_cpu_s": outside["server_cpu_s"],
        "others_cpu_s": outside["others_cpu_s"] * row["seconds"] / outside["wall_s"],
    }
    row["crawler_cpu_share"] = window["crawler_cpu_s"] / window["wall_s"]
    row["server_cpu_share"] = window["server_cpu_s"] / window["wall_s"]
    row["others_cpu_share"] = window["others_cpu_s"] / window["wall_s"]
    row["limit"] = verdict(window)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description="one measured crawl, as a JSON line")
    p.add_argument("kind", choices=sorted([*RUNNERS, "fetch"]))
    p.add_argument("root")
    p.add_argument("--workers", type=int, default=100)
    p.add_argument("--pages", type=int, default=0, help="the site's pages (fetch: its URLs)")
    args = p.parse_args()
    if args.kind == "fetch":
        figures = asyncio.run(crawl_fetch(args.root, args.workers, args.pages))
    else:
        figures = asyncio.run(RUNNERS[args.kind](args.root, args.workers))
    figures["max_rss_kib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
