"""What the always-on timing costs: the same headless crawl with engine/timing/per_worker.py's
instrumentation and without it (timing.ENABLED, the benchmark's switch only).

The demo site runs in a process of its own; each crawl runs in a fresh process, the two
modes in turn, the order swapped every round; the ratios are medians of the rounds'
paired ratios (pages/s with timing over pages/s without; CPU per page likewise).

    python -m bench.timing_cost [--quick] [--pages N] [--rounds N] [--workers N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

from bench.common import (
    DemoSite,
    SiteOptions,
    child_figures,
    fastest_ratio,
    machine_line,
    median,
    paired_ratios,
    parser,
    table,
    write_results,
)
from bench.trial import crawl_engine

MODES = ("on", "off")
TARGET = 0.97  # pages/s with timing >= 0.97x without


def child(mode: str, root: str, workers: int) -> None:
    from crawlscope.engine.timing import per_worker as timing

    timing.ENABLED = mode == "on"
    figures = asyncio.run(crawl_engine(root, workers))
    print(json.dumps(figures))


def one_crawl(mode: str, url: str, workers: int) -> dict[str, Any]:
    return child_figures("bench.timing_cost", "--child", mode, url, "--workers", str(workers))


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, help="demo site pages (default 3000; quick 300)")
    p.add_argument("--rounds", type=int, help="rounds of one crawl per mode (default 10)")
    p.add_argument("--workers", type=int, default=50)
    p.add_argument("--child", nargs=2, metavar=("MODE", "URL"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        child(args.child[0], args.child[1], args.workers)
        return 0
    pages = args.pages or (300 if args.quick else 3000)
    rounds = args.rounds or (1 if args.quick else 10)
    rows: list[dict[str, Any]] = []
    with DemoSite(SiteOptions(pages=pages)) as site:
        for r in range(rounds):
            for mode in MODES if r % 2 == 0 else MODES[::-1]:
                figures = one_crawl(mode, site.url, args.workers)
                per_page = 1000 * figures["cpu_seconds"] / figures["pages"]
                rate = figures["pages"] / figures["seconds"]
                rows.append(
                    {"round": r, "mode": mode, **figures, "pages_per_s": rate,
                     "cpu_ms_per_page": per_page}
                )  # fmt: skip
                print(f"round {r} {mode}: {rows[-1]['pages_per_s']:.0f} pages/s", flush=True)
    rate = median(paired_ratios(rows, "pages_per_s", "on", "off"))
    # CPU per page the other way round: off over on, so that above 1 is better too.
    cpu = median(paired_ratios(rows, "cpu_ms_per_page", "off", "on"))
    # Beside the paired medians: each mode's best crawl, likely one the machine's other
    # load did not hit (bench/common.py fastest_ratio).
    best = fastest_ratio(rows, "pages_per_s", "on", "off", fastest=max)
    print(machine_line())
    print(table(
        ("mode", "pages/s (median)", "CPU ms/page (median)"),
        [(m, median(r["pages_per_s"] for r in rows if r["mode"] == m),
          median(r["cpu_ms_per_page"] for r in rows if r["mode"] == m)) for m in MODES],
    ))  # fmt: skip
    print(f"timing on / off: pages/s {rate:.3f}x, CPU per page {cpu:.3f}x (goal >= {TARGET}x)")
    print(f"fastest crawl of each mode, on / off: {best:.3f}x")
    figures = {
        "rows": rows, "pages_per_s_ratio": rate, "cpu_per_page_ratio": cpu, "target": TARGET,
        "fastest_ratio": best,
        "pages": pages, "workers": args.workers, "rounds": rounds,
    }  # fmt: skip
    write_results("timing_cost", args, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
