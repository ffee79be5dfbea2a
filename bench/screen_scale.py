"""10,000 workers on screen: what the TUI costs a frame, and in memory per worker.

A crawl with N workers is opened paused (every worker alive, waiting on its go-ahead),
with the TUI attached (Textual's headless driver, normal frame rate) and, in another
fresh process, headless. The frame figures are the TUI's own (`_tick`: the snapshot and
every widget's update) while the "for" column moves every row on screen; memory per
worker is the difference in resident memory between N and a few workers, TUI and
headless, so what the screen keeps per worker is the TUI's figure minus headless'.

    python -m bench.screen_scale [--quick] [--workers 10000] [--seconds 4]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.common import REPO, DemoSite, SiteOptions, machine_line, parser, table, write_results
from bench.inprocess import TUI_SIZE
from bench.trial import engine_config

TARGET_KB = 5.0  # the screen's memory per worker
TARGET_FRAME_MS = 10.0
FEW = 10  # workers of the reference crawl


def rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _until(done: Any, running: asyncio.Task[Any] | None = None) -> None:
    while not done():
        if running is not None and running.done():
            running.result()
            raise RuntimeError("the TUI exited early")
        await asyncio.sleep(0.01)


async def child_tui(url: str, workers: int, seconds: float) -> dict[str, Any]:
    from crawlscope.tui.app import CrawlScopeApp
    from crawlscope.tui.startup import LiveCrawl

    live = LiveCrawl((url,), make_config=lambda r: engine_config(r[0], workers), paused=True)
    app = CrawlScopeApp(live)
    running = asyncio.create_task(app.run_async(headless=True, size=TUI_SIZE))
    await _until(lambda: live.crawler is not None and len(live.crawler.workers) >= workers, running)
    panels = app.panels
    table: Any = panels.query_one("#workers")
    await _until(lambda: table.row_count >= workers, running)
    await asyncio.sleep(0.5)  # the first frames, the table's first rows
    skipped = lambda: getattr(panels, "frames_skipped", 0)  # noqa: E731 (older screens: none)
    costs0, frames0, skipped0 = len(panels.frame_costs), panels.frames, skipped()
    await asyncio.sleep(seconds / 2)
    # Half the time with the cursor on the last worker: the table scrolled to its end.
    (getattr(table, "action_last", None) or table.action_scroll_bottom)()
    await asyncio.sleep(seconds / 2)
    costs = [c * 1000 for c in list(panels.frame_costs)[costs0:]]
    result = {
        "rss_kib": rss_kib(),
        "frames": panels.frames - frames0,
        "frames_skipped": skipped() - skipped0,
        "frame_ms_mean": statistics.fmean(costs) if costs else float("nan"),
        "frame_ms_p99": sorted(costs)[int(len(costs) * 0.99)] if costs else float("nan"),
        "frame_ms_max": max(costs, default=float("nan")),
        "rows": table.row_count,
    }
    app.exit(0)
    await running
    return result


async def child_headless(url: str, workers: int, seconds: float) -> dict[str, Any]:
    from crawlscope.engine.crawler import Crawler

    crawler = Crawler(engine_config(url, workers))
    crawler.pause_all()
    crawling = asyncio.create_task(crawler.crawl())
    await _until(lambda: len(crawler.workers) >= workers)
    await asyncio.sleep(0.5)
    result = {"rss_kib": rss_kib()}
    crawler.stop()
    await crawling
    return result


def run_child(
    mode: str, url: str, workers: int, seconds: float, before: Path | None = None
) -> dict[str, Any]:
    """One child process; with `before`, the checkout there (and its .venv) runs it."""
    python = sys.executable if before is None else str(before / ".venv" / "bin" / "python")
    cmd = [python, "-m", "bench.screen_scale", "--child", mode, "--url", url]
    cmd += ["--workers", str(workers), "--seconds", str(seconds)]
    cwd = REPO if before is None else before
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    result.update(mode=mode, workers=workers)
    return result


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, nargs="+", help="default 100 1000 10000; quick 2000")
    p.add_argument("--seconds", type=float, help="of frames measured (default 3; quick 1)")
    p.add_argument("--before", type=Path, help="a checkout to measure alongside (its .venv)")
    p.add_argument("--child", choices=("tui", "headless"), help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.workers = args.workers or ([2000] if args.quick else [100, 1000, 10_000])
    args.seconds = args.seconds or (1.0 if args.quick else 3.0)
    if args.child:
        child = child_tui if args.child == "tui" else child_headless
        print(json.dumps(asyncio.run(child(args.url, args.workers[0], args.seconds))))
        return 0

    print(f"{', '.join(f'{n:,}' for n in args.workers)} workers on screen; {machine_line()}")
    versions = {"now": None, **({"before": args.before} if args.before else {})}
    runs: dict[str, dict[str, Any]] = {}
    with DemoSite(SiteOptions(pages=100)) as site:
        # Interleaved: each count of workers, every version and mode, before the next.
        for workers in (FEW, *args.workers):
            for version, where in versions.items():
                for mode in ("tui", "headless"):
                    key = f"{version}/{mode}/{workers}"
                    runs[key] = run_child(mode, site.url, workers, args.seconds, where)

    def per_worker(version: str, mode: str, workers: int) -> float:
        grown = (
            runs[f"{version}/{mode}/{workers}"]["rss_kib"]
            - runs[f"{version}/{mode}/{FEW}"]["rss_kib"]
        )
        return grown * 1024 / (workers - FEW) / 1000  # KB

    rows: list[list[object]] = []
    by_workers: dict[str, dict[str, Any]] = {}
    for workers in args.workers:
        for version in versions:
            big = runs[f"{version}/tui/{workers}"]
            screen = per_worker(version, "tui", workers) - per_worker(version, "headless", workers)
            entry = {
                "kb_per_worker_screen": screen,
                "frame_ms_mean": big["frame_ms_mean"],
                "frame_ms_p99": big["frame_ms_p99"],
                "fps": big["frames"] / args.seconds,
                "frames_skipped": big["frames_skipped"],
            }
            by_workers[f"{version}/{workers}"] = entry
            rows.append([f"{workers:,}", version, entry["frame_ms_mean"], entry["frame_ms_p99"],
                         screen, entry["fps"]])  # fmt: skip
    print(
        table(
            ["workers", "code", "frame ms mean", "frame ms p99", "screen KB/worker", "frames/s"],
            rows,
        )
    )
    most = by_workers[f"now/{max(args.workers)}"]
    figures = {
        "workers": max(args.workers),
        "kb_per_worker_screen": most["kb_per_worker_screen"],
        "frame_ms_mean": most["frame_ms_mean"],
        "frames_skipped": most["frames_skipped"],
        "by_workers": by_workers,
        "runs": runs,
    }
    screen_kb, frame = most["kb_per_worker_screen"], most["frame_ms_mean"]
    notes = [
        f"{max(args.workers):,} workers: the screen keeps {screen_kb:.2f} KB a worker (target"
        f" {TARGET_KB:g}: {'met' if screen_kb <= TARGET_KB else 'NOT met'}); a frame costs"
        f" {frame:.1f} ms (target {TARGET_FRAME_MS:g}:"
        f" {'met' if frame <= TARGET_FRAME_MS else 'NOT met'})"
    ]
    for note in notes:
        print(note)
    write_results("screen_scale", args, figures, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
