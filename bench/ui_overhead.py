"""UI overhead: the same crawl with the TUI attached against headless.

Two ways, each interleaving TUI and headless crawls (the order alternates from round to
round; every crawl is a fresh process). The tables show medians; a ratio is the median of
the rounds' own ratios, each round's two crawls having run one after the other:

- terminal: whole processes, as a user runs them. The TUI draws into a pseudo-terminal
  whose output the benchmark reads and discards (bench/terminal.py), timed from start
  to FINISHED on its screen, against `crawlscope crawl -q` from start to exit, on a
  20,000-page site with no latency served by another process.
- driver: crawlscope's Textual app on the crawler's loop with Textual's headless driver
  (all the work but writing to a terminal), against the engine alone, 5,000 pages.

Then one TUI crawl is profiled to show what the UI costs.

    python -m bench.ui_overhead [--quick] [--ways terminal driver] [--workers 100 500]
        [--latencies 0 0.1]
"""

from __future__ import annotations

import sys
from typing import Any

from bench.common import (
    DemoSite,
    SiteOptions,
    fastest_ratio,
    machine_line,
    median,
    paired_ratios,
    parser,
    ratio_at_equal_steal,
    table,
    write_results,
)
from bench.inprocess import TUI_SIZE, crawl_tui, tui_available
from bench.loop_lag import crawl_case
from bench.profiling import available, profile
from bench.terminal import SIZE, run_headless, run_tui

TARGET = 0.97  # TUI >= 0.97x headless (Textual's headless driver)
TARGET_TERMINAL = 0.95  # TUI >= 0.95x headless in a real terminal
TARGET_FPS = 12.0  # of the 15 asked, while the crawl saturates its core


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, nargs="+", metavar="N", help="default 100 500")
    p.add_argument("--latencies", type=float, nargs="+", metavar="S", help="default 0 0.1")
    p.add_argument("--pages", type=int, help="demo site pages (default 5000; quick 400)")
    p.add_argument("--rounds", type=int, help="default 3; quick 1")
    p.add_argument(
        "--ways",
        nargs="+",
        choices=("terminal", "driver"),
        default=["terminal", "driver"],
        help="a real terminal (pty), Textual's headless driver, or both (default)",
    )
    p.add_argument(
        "--terminal-pages",
        type=int,
        help="demo site pages for the terminal (default 20000; quick 2000)",
    )
    p.add_argument("--no-profile", dest="profile", action="store_false")
    args = p.parse_args(argv)
    if args.profile and not available():
        print("pyinstrument is not installed: no profile (pip install pyinstrument)")
        args.profile = False
    args.workers = args.workers or ([100] if args.quick else [100, 500])
    args.latencies = args.latencies or ([0.0] if args.quick else [0.0, 0.1])
    args.pages = args.pages or (400 if args.quick else 5000)
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.terminal_pages = args.terminal_pages or (2000 if args.quick else 20_000)

    print(f"UI overhead: TUI vs headless; {machine_line()}")
    why_not = tui_available()
    if why_not is not None:
        print(f"the TUI cannot be loaded ({why_not}): nothing to measure")
        write_results("ui_overhead", args, {"tui": why_not, "summary": {}}, [why_not])
        return 0

    terminal: dict[str, Any] = {}
    notes: list[str] = []
    if "terminal" in args.ways:
        terminal = measure_terminal(args)
        notes += terminal["notes"]
    driver: dict[str, Any] = {}
    if "driver" in args.ways:
        driver = measure_driver(args)
        notes += driver.pop("notes")
    if terminal:
        print_terminal(terminal)  # again, next to the driver's figures
    for note in notes:
        print(note)
    write_results("ui_overhead", args, {**driver, "terminal": terminal}, notes)
    return 0


def measure_terminal(args: Any) -> dict[str, Any]:
    print(
        f"\nin a real terminal: the TUI in a {SIZE[0]}x{SIZE[1]} pty vs `crawlscope crawl -q`,"
        f" {args.terminal_pages:,}-page site, no latency"
    )
    crawls: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    with DemoSite(SiteOptions(pages=args.terminal_pages)) as site:
        run_headless(site.url, max(args.workers))  # warm-up, not measured
        for workers in args.workers:
            for rnd in range(args.rounds):
                modes = ["tui", "headless"] if rnd % 2 == 0 else ["headless", "tui"]
                for mode in modes:
                    row = (
                        run_tui(site.url, workers)
                        if mode == "tui"
                        else run_headless(site.url, workers)
                    )
                    row.update(round=rnd + 1, site_pages=args.terminal_pages)
                    row["pages_per_s"] = args.terminal_pages / row["wall_s"]
                    if mode == "tui":
                        _frame_figures(row)
                    crawls.append(row)
                    extra = (
                        f"  {row['fps']:4.1f} fps drawn, {row['skipped_per_s']:4.1f}/s skipped,"
                        f" frame {row['frame_ms_mean']:.1f} ms"
                        if mode == "tui"
                        else ""
                    )
                    print(
                        f"  {workers:4d} workers  round {rnd + 1}  {mode:8s}"
                        f" {row['wall_s']:6.2f} s  {row['pages_per_s']:6.0f} pages/s"
                        f"  host took {_share(row['stolen'])}{extra}"
                    )
            mine = [r for r in crawls if r["workers"] == workers]
            tui = [r for r in mine if r["mode"] == "tui"]
            headless = [r for r in mine if r["mode"] == "headless"]
            entry = {
                "workers": workers,
                "headless_wall_s": median(r["wall_s"] for r in headless),
                "tui_wall_s": median(r["wall_s"] for r in tui),
                "tui_fps": median(r["fps"] for r in tui),
                "tui_skipped_per_s": median(r["skipped_per_s"] for r in tui),
                "tui_frame_ms_mean": median(r["frame_ms_mean"] for r in tui),
                "tui_frame_ms_p99": median(r["frame_ms_p99"] for r in tui),
                "tui_ui_share": median(r["ui_share"] for r in tui),
                # From the process's start to the crawl's first moment: a cost the frames
                # do not show, paid once, so it weighs most on a short fast crawl.
                "tui_start_s": median(r.get("start_s", float("nan")) for r in tui),
                "tui_screen_updates_per_s": median(r["screen_updates"] / r["wall_s"] for r in tui),
                "tui_bytes_per_s": median(r["bytes_drawn"] / r["wall_s"] for r in tui),
            }
            # The median of the rounds' own ratios (see paired_ratios).
            entry["ratios"] = paired_ratios(mine, "wall_s", "headless", "tui")
            entry["ratio"] = median(entry["ratios"])
            entry["fastest_ratio"] = fastest_ratio(mine, "wall_s", "headless", "tui")
            # The same work for less CPU: steadier than wall time when others share the
            # machine (it counts the TUI's start-up and quit too, so it errs against it).
            entry["headless_cpu_s"] = median(r["cpu_s"] for r in headless)
            entry["tui_cpu_s"] = median(r["cpu_s"] for r in tui)
            entry["cpu_ratio"] = median(paired_ratios(mine, "cpu_s", "headless", "tui"))
            # How much of the machine its host took during each round's headless and TUI
            # crawl: a round whose two crawls met different shares measured the machine
            # as much as the TUI. The fit estimates the ratio with that taken out.
            stolen = {(r["round"], r["mode"]): r["stolen"] for r in mine}
            entry["stolen"] = [
                [stolen[rnd + 1, "headless"], stolen[rnd + 1, "tui"]] for rnd in range(args.rounds)
            ]
            entry["ratio_at_equal_steal"] = ratio_at_equal_steal(mine, "wall_s", "headless", "tui")
            summary[str(workers)] = entry
    for row in crawls:
        row.pop("frame_costs_ms", None)  # summarised above; thousands of numbers
    notes = [
        f"terminal, {e['workers']} workers: TUI {e['ratio']:.2f}x headless (target"
        f" {TARGET_TERMINAL}x: {'met' if e['ratio'] >= TARGET_TERMINAL else 'NOT met'}),"
        f" {e['fastest_ratio']:.2f}x fastest against fastest, {e['cpu_ratio']:.2f}x by CPU time,"
        f" {e['tui_fps']:.1f} frames/s drawn (target {TARGET_FPS:g}:"
        f" {'met' if e['tui_fps'] >= TARGET_FPS else 'NOT met'})"
        for e in summary.values()
    ]
    result = {"summary": summary, "crawls": crawls, "notes": notes, "rounds": args.rounds}
    print_terminal(result)
    return result


def _share(value: float | None) -> str:
    return "?" if value is None else f"{value:.0%}"


def _frame_figures(row: dict[str, Any]) -> None:
    """Frames drawn and skipped a second of crawling, and what a drawn frame cost."""
    seconds = row["crawl_seconds"] or float("nan")
    costs = sorted(row.get("frame_costs_ms") or [float("nan")])
    row["fps"] = row["frames"] / seconds
    row["skipped_per_s"] = row["frames_skipped"] / seconds
    row["frame_ms_mean"] = sum(costs) / len(costs)
    row["frame_ms_p99"] = costs[min(len(costs) - 1, int(len(costs) * 0.99))]
    row["ui_share"] = row.get("ui_seconds", float("nan")) / seconds


def print_terminal(result: dict[str, Any]) -> None:
    print(f"\nin a real terminal, median of {result['rounds']} round(s)")
    headers = ["workers", "headless s", "TUI s", "TUI/headless", "each round",
               f">= {TARGET_TERMINAL}x", "fastest", "by CPU s", "frames/s", "skipped/s", "_tick ms",
               "_tick p99", "UI share", "TUI start s", "updates/s", "KB/s",
               "host took, each round (headless/TUI)",
               "TUI/headless at equal host share (fit)"]  # fmt: skip
    lines = [
        [e["workers"], e["headless_wall_s"], e["tui_wall_s"], f"{e['ratio']:.2f}x",
         " ".join(f"{r:.2f}" for r in e["ratios"]),
         "met" if e["ratio"] >= TARGET_TERMINAL else "NOT met", f"{e['fastest_ratio']:.2f}x",
         f"{e['cpu_ratio']:.2f}x",
         e["tui_fps"],
         e["tui_skipped_per_s"], e["tui_frame_ms_mean"], e["tui_frame_ms_p99"],
         f"{e['tui_ui_share']:.1%}", e["tui_start_s"], e["tui_screen_updates_per_s"],
         e["tui_bytes_per_s"] / 1000,
         " ".join(f"{_share(h)}/{_share(t)}" for h, t in e["stolen"]),
         "?" if e["ratio_at_equal_steal"] is None else f"{e['ratio_at_equal_steal']:.2f}x"]
        for e in result["summary"].values()
    ]  # fmt: skip
    print(table(headers, lines))


def measure_driver(args: Any) -> dict[str, Any]:
    print(f"\nTextual's headless driver ({TUI_SIZE[0]}x{TUI_SIZE[1]}) vs the engine alone")
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
                            f"  {row['fps']:4.1f} fps, {row.get('frames_skipped', 0)} skipped,"
                            f" frame {row.get('frame_ms_mean', 0):.1f} ms"
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
                    "tui_skipped_per_s": median(
                        r.get("frames_skipped", 0) / r["seconds"] for r in tui
                    ),
                    "tui_tick_ms": median(r.get("frame_ms_mean", float("nan")) for r in tui),
                    "tui_ui_share": median(r.get("ui_share", float("nan")) for r in tui),
                    "tui_cpu_share": median(r["cpu_seconds"] / r["seconds"] for r in tui),
                    "headless_cpu_share": median(r["cpu_seconds"] / r["seconds"] for r in headless),
                    "server_cpu_share": median(r["server_cpu_share"] for r in mine),
                }
                # The median of the rounds' own ratios (see paired_ratios).
                entry["ratios"] = paired_ratios(mine, "pages_per_s", "tui", "headless")
                entry["ratio"] = median(entry["ratios"])
                entry["fastest_ratio"] = fastest_ratio(mine, "pages_per_s", "tui", "headless", max)
                # Pages per CPU second: steadier than pages/s on a shared machine.
                entry["cpu_ratio"] = median(paired_ratios(mine, "cpu_seconds", "headless", "tui"))
                summary[f"{latency:g}s/{workers}"] = entry
            if args.profile and latency == args.latencies[0]:
                workers = args.workers[0]
                result = profile(lambda w=workers: crawl_tui(site.url, w, False))  # type: ignore[misc]
                prof = {"latency": latency, "workers": workers, **result.to_json()}

    print(f"\nTextual's headless driver, median of {args.rounds} round(s)")
    headers = ["site latency", "workers", "headless p/s", "TUI p/s", "TUI/headless",
               "each round", f">= {TARGET}x", "fastest", "by CPU s", "TUI fps", "skipped/s",
               "_tick ms", "UI share", "CPU headless", "CPU TUI"]  # fmt: skip
    lines = [
        [f"{e['latency'] * 1000:g} ms", e["workers"], e["headless_pages_per_s"],
         e["tui_pages_per_s"], f"{e['ratio']:.2f}x", " ".join(f"{r:.2f}" for r in e["ratios"]),
         "met" if e["ratio"] >= TARGET else "NOT met", f"{e['fastest_ratio']:.2f}x",
         f"{e['cpu_ratio']:.2f}x", e["tui_fps"], e["tui_skipped_per_s"], e["tui_tick_ms"],
         f"{e['tui_ui_share']:.1%}", f"{e['headless_cpu_share']:.0%}", f"{e['tui_cpu_share']:.0%}"]
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
        f"driver {key}: TUI {e['ratio']:.2f}x headless (target {TARGET}x:"
        f" {'met' if e['ratio'] >= TARGET else 'NOT met'}),"
        f" {e['fastest_ratio']:.2f}x fastest against fastest, {e['cpu_ratio']:.2f}x by CPU time,"
        f" {e['tui_fps']:.1f} frames/s"
        for key, e in summary.items()
    ]
    return {"summary": summary, "crawls": rows, "profile": prof, "notes": notes}


if __name__ == "__main__":
    sys.exit(main())
