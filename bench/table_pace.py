"""How often the workers table is redrawn while a crawl saturates its core.

A crawl of the demo site (no latency, per-host limit off) at 500 workers under the TUI
(Textual's headless driver, 160x48), in a fresh process: for `--seconds` after the first
two, the frames drawn by kind (table: every panel; rows: the table's rows and the status
line; pulse: the status line alone), the table redraws a second (table and rows frames),
and the screen's share of the loop. With `--before DIR`, the same in a checkout there
(its own .venv), alternately.

    python -m bench.table_pace [--quick] [--workers 500] [--seconds 8] [--before ../old]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

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
from bench.inprocess import TUI_SIZE
from bench.trial import engine_config

GOAL = 5.0  # table redraws a second (issue 32)


async def child(url: str, workers: int, seconds: float) -> dict[str, Any]:
    from crawlscope.tui.app import CrawlScopeApp
    from crawlscope.tui.startup import LiveCrawl

    live = LiveCrawl((url,), make_config=lambda r: engine_config(r[0], workers))
    app = CrawlScopeApp(live)
    running = asyncio.create_task(app.run_async(headless=True, size=TUI_SIZE))
    while live.crawler is None or not live.crawler.t0:
        if running.done():
            running.result()
        await asyncio.sleep(0.05)
    panels = app.panels
    kinds: Counter[str] = Counter()
    costs: dict[str, list[float]] = {}
    draw = panels._draw

    def counted(kind: Any) -> None:
        # A frame's whole cost in its slot: the tick, and the drawing done there (straight
        # to the terminal, or through the compositor).
        started = time.perf_counter()
        draw(kind)
        kinds[kind] += 1
        costs.setdefault(kind, []).append(time.perf_counter() - started)

    panels._draw = counted  # type: ignore[method-assign]
    await asyncio.sleep(2.0)  # the start: one page, the frontier growing
    kinds.clear()
    costs.clear()
    ui0, t0 = panels.ui_seconds, time.perf_counter()
    await asyncio.sleep(seconds)
    wall = time.perf_counter() - t0
    result = {
        "tables_per_s": (kinds["table"] + kinds["rows"]) / wall,
        "kinds_per_s": {kind: n / wall for kind, n in kinds.items()},
        "ms_by_kind": {kind: 1000 * median(c) for kind, c in costs.items()},
        "ui_share": (panels.ui_seconds - ui0) / wall,
        "saturated": panels.budget.saturated,
    }
    app.exit(0)
    await running
    return result


def run_child(url: str, workers: int, seconds: float, before: Path | None) -> dict[str, Any]:
    python = sys.executable if before is None else str(before / ".venv" / "bin" / "python")
    # This file, run by its path with the other checkout's code (bench/ included) first on
    # the path: the checkout need not have this script.
    where = REPO if before is None else before
    cmd = [python, str(Path(__file__).resolve()), "--child", "--url", url]
    cmd += ["--workers", str(workers), "--seconds", str(seconds)]
    env = {**os.environ, "PYTHONPATH": str(where)}
    proc = subprocess.run(cmd, cwd=where, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=500)
    p.add_argument("--seconds", type=float, help="measured (default 8; quick 2)")
    p.add_argument("--rounds", type=int, help="default 2; quick 1")
    p.add_argument("--before", type=Path, help="a checkout to measure alongside (its .venv)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    args = p.parse_args()
    args.seconds = args.seconds or (2.0 if args.quick else 8.0)
    args.rounds = args.rounds or (1 if args.quick else 2)
    if args.child:
        print(json.dumps(asyncio.run(child(args.url, args.workers, args.seconds))))
        return
    versions = {"now": None, **({"before": args.before} if args.before else {})}
    runs: list[dict[str, Any]] = []
    with DemoSite(SiteOptions(pages=40_000 if not args.quick else 5000)) as site:
        for n in range(args.rounds):
            for version, where in versions.items():
                figures = run_child(site.url, args.workers, args.seconds, where)
                runs.append({"version": version, "round": n, **figures})
    summary = {
        version: {
            "tables_per_s": median(r["tables_per_s"] for r in runs if r["version"] == version),
            "ui_share": median(r["ui_share"] for r in runs if r["version"] == version),
        }
        for version in versions
    }
    print(f"table_pace: {args.workers} workers, {args.seconds:g} s a run; {machine_line()}")
    rows = [(v, s["tables_per_s"], f"{s['ui_share']:.1%}") for v, s in summary.items()]
    print(table(["code", "table redraws/s", "screen's share of the loop"], rows))
    print(f"goal {GOAL:g} table redraws a second: {summary['now']['tables_per_s']:.1f}")
    write_results("table_pace", args, {"summary": summary, "runs": runs})


if __name__ == "__main__":
    main()
