"""What the always-on flight recorder costs: the same headless crawl with the Recorder
writing to its ring (as every crawl a plan opens does) and with no recorder at all.

The demo site runs in a process of its own; each crawl runs in a fresh process, the two
modes in turn, the order swapped every round; the ratios are medians of the rounds'
paired ratios (pages/s with the recorder over pages/s without; CPU per page likewise).
The "on" crawls also print what the ring holds: events per page, the estimate of bytes
per event the bound uses, and bytes per event measured object by object (each object
once; a URL string the crawler's books share counted as the ring's: an upper bound).

    python -m bench.recorder_cost [--quick] [--pages N] [--rounds N] [--workers N]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
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
from bench.trial import engine_config, steady_rate

MODES = ("on", "off")
TARGET = 0.97  # pages/s with the recorder >= 0.97x without


def held_bytes(items: list[Any]) -> int:
    """What the ring's items hold, object by object, each once; dict keys (the code's
    literals, shared by every event) and fetch records (the ledger's) left out."""
    seen: set[int] = set()
    total = 0
    todo: list[Any] = list(items)
    while todo:
        obj = todo.pop()
        if id(obj) in seen or type(obj).__name__ == "FetchRecord":
            continue  # a record is the ledger's, kept for the whole crawl anyway
        seen.add(id(obj))
        total += sys.getsizeof(obj)
        if isinstance(obj, dict):
            todo.extend(obj.values())
        elif isinstance(obj, list | tuple):
            todo.extend(obj)
    return total


async def crawl(mode: str, root: str, workers: int) -> dict[str, Any]:
    from crawlscope.engine.crawler import Crawler
    from crawlscope.engine.trace.flight import FlightRing
    from crawlscope.engine.trace.recording import Recorder

    crawler = Crawler(engine_config(root, workers))
    ring = FlightRing()
    recorder = Recorder(crawler, None, ring) if mode in ("on", "timed") else None
    spent = [0.0]
    if recorder is not None and mode == "timed":
        # The recorder's own time, read around each call it gets (the wrapper's two clock
        # reads counted in: an upper bound); not one of the pair compared.
        def timed(listener: Any) -> Any:
            def call(arg: Any) -> None:
                t = time.perf_counter()
                listener(arg)
                spent[0] += time.perf_counter() - t

            return call

        crawler.tap = timed(recorder.on_state)
        crawler.ledger.record_listeners.remove(recorder.on_record)
        crawler.ledger.record_listeners.append(timed(recorder.on_record))
    stamps: list[float] = []
    crawler.ledger.record_listeners.append(lambda _record: stamps.append(time.perf_counter()))
    t0, c0 = time.perf_counter(), time.process_time()
    await crawler.crawl()
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    if recorder is not None and mode == "on":
        recorder.close()
    pages = len(crawler.ledger.done) + len(crawler.ledger.failed)
    figures: dict[str, Any] = {
        "pages": pages, "seconds": seconds, "cpu_seconds": cpu,
        "steady_pages_per_s": steady_rate(stamps),
    }  # fmt: skip
    if mode == "timed":
        figures["recorder_us_per_page"] = spent[0] / pages * 1e6
    if mode == "on":
        kept = ring.items()
        figures["events"] = len(kept)
        figures["events_per_page"] = len(kept) / pages
        figures["estimated_bytes_per_event"] = ring.bytes / len(kept)
        figures["measured_bytes_per_event"] = held_bytes(kept) / len(kept)
    return figures


def one_crawl(mode: str, url: str, workers: int) -> dict[str, Any]:
    return child_figures("bench.recorder_cost", "--child", mode, url, "--workers", str(workers))


def tui_side_by_side(args: argparse.Namespace) -> int:
    """The whole TUI in a pty (bench/terminal.py), timed to FINISHED on its screen: with
    `t` typed at its first frames (the crawl watched on the timeline) and without."""
    from bench.terminal import run_tui

    pages = args.pages or (2000 if args.quick else 20_000)
    rounds = args.rounds or (1 if args.quick else 3)
    rows: list[dict[str, Any]] = []
    with DemoSite(SiteOptions(pages=pages)) as site:
        for r in range(rounds):
            for mode in ("workers", "timeline") if r % 2 == 0 else ("timeline", "workers"):
                got = run_tui(site.url, 100, keys=b"t" if mode == "timeline" else b"")
                rows.append({"round": r, "mode": mode, "wall_s": got["wall_s"],
                             "speed": 1 / got["wall_s"]})  # fmt: skip
                print(f"round {r} {mode}: {got['wall_s']:.2f} s to FINISHED", flush=True)
    ratio = median(paired_ratios(rows, "speed", "timeline", "workers"))
    print(machine_line())
    print(
        f"the TUI on the timeline / on the workers screen: {ratio:.3f}x the speed "
        f"(goal >= 0.95x), {pages:,} pages, 100 workers, median of {rounds} paired rounds"
    )
    write_results("recorder_cost_tui", args, {"rows": rows, "ratio": ratio, "pages": pages})
    return 0


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, help="demo site pages (default 3000; quick 300)")
    p.add_argument(
        "--rounds", type=int,
        help="rounds of one crawl per mode (default 30: fewer cannot tell 3%% here)",
    )  # fmt: skip
    p.add_argument("--workers", type=int, default=50)
    p.add_argument("--child", nargs=2, metavar=("MODE", "URL"), help=argparse.SUPPRESS)
    p.add_argument(
        "--tui", action="store_true",
        help="instead: the TUI in a real terminal watching on the timeline against on the "
        "workers screen (20,000 pages, 100 workers)",
    )  # fmt: skip
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(crawl(args.child[0], args.child[1], args.workers))))
        return 0
    if args.tui:
        return tui_side_by_side(args)
    pages = args.pages or (300 if args.quick else 3000)
    rounds = args.rounds or (1 if args.quick else 30)
    rows: list[dict[str, Any]] = []
    with DemoSite(SiteOptions(pages=pages)) as site:
        for r in range(rounds):
            for mode in MODES if r % 2 == 0 else MODES[::-1]:
                figures = one_crawl(mode, site.url, args.workers)
                rows.append({
                    "round": r, "mode": mode, **figures,
                    "pages_per_s": figures["pages"] / figures["seconds"],
                    "cpu_us_per_page": 1e6 * figures["cpu_seconds"] / figures["pages"],
                })  # fmt: skip
                print(f"round {r} {mode}: {rows[-1]['pages_per_s']:.0f} pages/s", flush=True)
        timed = one_crawl("timed", site.url, args.workers)
    direct = timed["recorder_us_per_page"]
    direct_share = direct / (1e6 * timed["cpu_seconds"] / timed["pages"])
    rate = median(paired_ratios(rows, "pages_per_s", "on", "off"))
    steady = median(paired_ratios(rows, "steady_pages_per_s", "on", "off"))
    cpu = median(paired_ratios(rows, "cpu_us_per_page", "off", "on"))  # above 1 is better
    best = fastest_ratio(rows, "pages_per_s", "on", "off", fastest=max)
    on = [r for r in rows if r["mode"] == "on"]
    per_page = median(r["events_per_page"] for r in on)
    estimated = median(r["estimated_bytes_per_event"] for r in on)
    measured = median(r["measured_bytes_per_event"] for r in on)
    print(machine_line())
    print(table(
        ("mode", "pages/s (median)", "CPU us/page (median)"),
        [(m, median(r["pages_per_s"] for r in rows if r["mode"] == m),
          median(r["cpu_us_per_page"] for r in rows if r["mode"] == m)) for m in MODES],
    ))  # fmt: skip
    print(f"recorder on / off: pages/s {rate:.3f}x (steady {steady:.3f}x), CPU per page "
          f"{cpu:.3f}x (goal >= {TARGET}x); fastest crawl of each: {best:.3f}x")  # fmt: skip
    print(f"the recorder's own time in its calls (one more crawl, timed inside): "
          f"{direct:.1f} us a page, {direct_share:.1%} of that crawl's CPU")  # fmt: skip
    print(f"the ring: {per_page:.1f} events a page, {measured:.0f} bytes an event measured, "
          f"{estimated:.0f} estimated (the bound counts the estimate): 64 MB holds "
          f"{(64 << 20) / estimated / per_page:,.0f} pages")  # fmt: skip
    results = {
        "rows": rows, "pages_per_s_ratio": rate, "steady_ratio": steady,
        "cpu_per_page_ratio": cpu, "fastest_ratio": best, "target": TARGET,
        "events_per_page": per_page, "measured_bytes_per_event": measured,
        "estimated_bytes_per_event": estimated, "direct_us_per_page": direct,
        "direct_share": direct_share,
        "pages": pages, "workers": args.workers, "rounds": rounds,
    }  # fmt: skip
    write_results("recorder_cost", args, results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
