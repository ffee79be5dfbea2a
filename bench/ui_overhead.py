"""UI overhead: the same crawl with the TUI attached against headless.

The TUI is crawlscope's Textual app (CrawlScopeApp) on the crawler's loop, run with
Textual's headless driver at its normal frame rate, so it does all its work (snapshots,
widget updates, layout, rendering) except writing to a terminal. Each crawl runs in a
fresh process; the order alternates from round to round; the table shows medians.
Then one TUI crawl is profiled to show what the UI costs.

    python -m bench.ui_overhead [--quick] [--workers 100 500] [--latencies 0 0.1]
"""

from __future__ import annotations

import sys
from typing import Any

from bench.common import DemoSite, SiteOptions, machine_line, median, parser, table, write_results
from bench.inprocess import TUI_SIZE, crawl_tui, tui_available
from bench.loop_lag import crawl_case
from bench.profiling import available, profile

TARGET = 0.9  # TUI >= 0.9x headless


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, nargs="+", metavar="N", help="default 100 500")
    p.add_argument("--latencies", type=float, nargs="+", metavar="S", help="default 0 0.1")
    p.add_argument("--pages", type=int, help="demo site pages (default 5000; quick 400)")
    p.add_argument("--rounds", type=int, help="default 3; quick 1")
    p.add_argument("--no-profile", dest="profile", action="store_false")
    args = p.parse_args(argv)
    if args.profile and not available():
        print("pyinstrument is not installed: no profile (pip install pyinstrument)")
        args.profile = False
    args.workers = args.workers or ([100] if args.quick else [100, 500])
    args.latencies = args.latencies or ([0.0] if args.quick else [0.0, 0.1])
    args.pages = args.pages or (400 if args.quick else 5000)
    args.rounds = args.rounds or (1 if args.quick else 3)

    print(f"UI overhead: TUI ({TUI_SIZE[0]}x{TUI_SIZE[1]}, headless driver) vs headless;"
          f" {machine_line()}")  # fmt: skip
    why_not = tui_available()
    if why_not is not None:
        print(f"the TUI cannot be loaded ({why_not}): nothing to measure")
        write_results("ui_overhead", args, {"tui": why_not, "summary": {}}, [why_not])
        return 0

    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    prof: dict[str, Any] = {}
    for latency in args.latencies:
        with DemoSite(SiteOptions(pages=args.pages, latency=latency)) as site:
            crawl_case("headless", site, max(args.workers))  # warm-up, not measured
            for workers in args.workers:
                for rnd in range(args.rounds):
                    modes = ["tui", "headless"] if rnd % 2 == 0 else ["headless", "tui"]
                    for mode in modes:
                        row = crawl_case(mode, site, workers)
                        row["round"] = rnd + 1
                        rows.append(row)
                        extra = (
                            f"  {row['fps']:4.1f} fps, frame {row.get('frame_ms_mean', 0):.1f} ms"
                            if mode == "tui"
                            else ""
                        )
                        print(
                            f"  {latency * 1000:4.0f} ms site  {workers:4d} workers  round"
                            f" {rnd + 1}  {mode:8s} {row['pages_per_s']:6.0f} pages/s{extra}"
                        )
                mine = [r for r in rows if r["workers"] == workers and r["latency"] == latency]
                tui = [r for r in mine if r["mode"] == "tui"]
                headless = [r for r in mine if r["mode"] == "headless"]
                entry = {
                    "latency": latency,
                    "workers": workers,
                    "headless_pages_per_s": median(r["pages_per_s"] for r in headless),
                    "tui_pages_per_s": median(r["pages_per_s"] for r in tui),
                    "tui_fps": median(r["fps"] for r in tui),
                    "tui_tick_ms": median(r.get("frame_ms_mean", float("nan")) for r in tui),
                    "tui_cpu_share": median(r["cpu_seconds"] / r["seconds"] for r in tui),
                    "headless_cpu_share": median(r["cpu_seconds"] / r["seconds"] for r in headless),
                    "server_cpu_share": median(r["server_cpu_share"] for r in mine),
                }
                entry["ratio"] = entry["tui_pages_per_s"] / entry["headless_pages_per_s"]
                summary[f"{latency:g}s/{workers}"] = entry
            if args.profile and latency == args.latencies[0]:
                workers = args.workers[0]
                result = profile(lambda w=workers: crawl_tui(site.url, w, False))  # type: ignore[misc]
                prof = {"latency": latency, "workers": workers, **result.to_json()}

    print(f"\nmedian of {args.rounds} round(s)")
    headers = ["site latency", "workers", "headless p/s", "TUI p/s", "TUI/headless",
               f">= {TARGET}x", "TUI fps", "_tick ms", "CPU headless", "CPU TUI"]  # fmt: skip
    lines = [
        [f"{e['latency'] * 1000:g} ms", e["workers"], e["headless_pages_per_s"],
         e["tui_pages_per_s"], f"{e['ratio']:.2f}x", "met" if e["ratio"] >= TARGET else "NOT met",
         e["tui_fps"], e["tui_tick_ms"], f"{e['headless_cpu_share']:.0%}",
         f"{e['tui_cpu_share']:.0%}"]
        for e in summary.values()
    ]  # fmt: skip
    print(table(headers, lines))
    if prof:
        print(
            f"\nprofile: TUI crawl, {prof['workers']} workers, {prof['latency'] * 1000:g} ms site"
        )
        print(
            table(["share", "category"], [[f"{v:.1%}", k] for k, v in prof["categories"].items()])
        )
        print(
            table(
                ["share", "function (self time)"],
                [[f"{t['share']:.1%}", t["function"]] for t in prof["top_self_time"]],
            )
        )
    notes = [
        f"{key}: TUI {e['ratio']:.2f}x headless (target {TARGET}x:"
        f" {'met' if e['ratio'] >= TARGET else 'NOT met'})"
        for key, e in summary.items()
    ]
    for note in notes:
        print(note)
    write_results("ui_overhead", args, {"summary": summary, "crawls": rows, "profile": prof}, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
