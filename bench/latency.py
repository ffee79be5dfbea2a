"""High latency: the demo site answering after 100 ms, crawled by 500 workers.

With every page 100 ms away, N workers can at best fetch N / 0.1 pages a second; the
ratio to that ideal shows how much of the waiting the crawler overlaps. Each worker
count gets a site large enough for a few seconds of crawling at the ideal rate, and the
bare baseline crawls it too, side by side.

    python -m bench.latency [--quick] [--latency S] [--workers 100 500] [--rounds N]
"""

from __future__ import annotations

import sys
from typing import Any

from bench import trial
from bench.common import DemoSite, SiteOptions, machine_line, median, parser, table, write_results

KINDS = ("baseline", "engine")


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--latency", type=float, default=0.1, help="seconds per page (default 0.1)")
    p.add_argument("--workers", type=int, nargs="+", metavar="N", help="default 100 500; quick 50")
    p.add_argument("--rounds", type=int, help="default 2; quick 1")
    p.add_argument(
        "--seconds",
        type=float,
        help="size each site for this long a crawl at the ideal rate (default 4; quick 1)",
    )
    p.add_argument("--links", type=int, default=10, help="links per demo page (default 10)")
    args = p.parse_args(argv)
    args.workers = args.workers or ([50] if args.quick else [100, 500])
    args.rounds = args.rounds or (1 if args.quick else 2)
    args.seconds = args.seconds or (1.0 if args.quick else 4.0)

    print(f"latency: {args.latency * 1000:g} ms per page; {machine_line()}")
    rows: list[dict[str, Any]] = []
    summary: dict[str, Any] = {}
    for workers in args.workers:
        ideal = workers / args.latency
        pages = max(200, round(ideal * args.seconds))
        options = SiteOptions(pages=pages, links=args.links, latency=args.latency)
        with DemoSite(options) as site:
            print(f"{workers} workers: {pages} pages at {site.url}, ideal {ideal:,.0f} pages/s")
            trial.run("engine", site, workers)  # /flaky's drops and a cold server: not measured
            for rnd in range(args.rounds):
                for kind in KINDS[rnd % 2 :] + KINDS[: rnd % 2]:
                    row = trial.run(kind, site, workers)
                    row.update(round=rnd + 1, ideal_pages_per_s=ideal)
                    row["pages_per_s"] = row["pages"] / row["seconds"]
                    rows.append(row)
                    print(
                        f"  round {rnd + 1}  {kind:8s} {row['pages_per_s']:7.0f} pages/s"
                        f" ({row['pages_per_s'] / ideal:.2f} of ideal; at full speed"
                        f" {row['steady_pages_per_s']:,.0f})"
                        f"  crawler {row['crawler_cpu_share']:.0%}"
                        f"  server {row['server_cpu_share']:.0%}  limit: {row['limit']}"
                    )
        entry: dict[str, Any] = {"pages": pages, "ideal_pages_per_s": ideal}
        for kind in KINDS:
            mine = [r for r in rows if r["workers"] == workers and r["kind"] == kind]
            rate = median(r["pages_per_s"] for r in mine)
            steady = median(r["steady_pages_per_s"] for r in mine)
            entry[kind] = {
                "pages_per_s": rate,
                "ratio_to_ideal": rate / ideal,
                "steady_pages_per_s": steady,
                "steady_ratio_to_ideal": steady / ideal,
                "crawler_cpu_share": median(r["crawler_cpu_share"] for r in mine),
                "server_cpu_share": median(r["server_cpu_share"] for r in mine),
                "limits": [r["limit"] for r in mine],
            }
        entry["engine_vs_baseline"] = (
            entry["engine"]["pages_per_s"] / entry["baseline"]["pages_per_s"]
        )
        summary[str(workers)] = entry

    print(f"\nmedian of {args.rounds} round(s); ideal = workers / latency")
    headers = [
        "workers", "ideal p/s", "engine p/s", "engine/ideal", "full-speed p/s", "full/ideal",
        "baseline p/s", "base/ideal", "engine/base", "engine CPU", "server CPU", "limit",
    ]  # fmt: skip
    lines = []
    for workers, e in summary.items():
        en, ba = e["engine"], e["baseline"]
        lines.append([
            int(workers), e["ideal_pages_per_s"], en["pages_per_s"], f"{en['ratio_to_ideal']:.2f}x",
            en["steady_pages_per_s"], f"{en['steady_ratio_to_ideal']:.2f}x", ba["pages_per_s"],
            f"{ba['ratio_to_ideal']:.2f}x", f"{e['engine_vs_baseline']:.2f}x",
            f"{en['crawler_cpu_share']:.0%}", f"{en['server_cpu_share']:.0%}",
            ", ".join(sorted(set(en["limits"]))),
        ])  # fmt: skip
    print(table(headers, lines))
    notes = []
    for workers, e in summary.items():
        en = e["engine"]
        why = {
            "crawler": "the crawler ran out of CPU (one core): pages/s is its CPU ceiling, "
            "not the latency",
            "server": "the SERVER was the bottleneck",
            "machine busy": "other processes took the CPU",
            "neither": "latency-bound, as it should be",
        }
        for limit in sorted(set(en["limits"])):
            notes.append(f"{workers} workers: {why.get(limit, limit)}")
    for note in notes:
        print(note)
    write_results("latency", args, {"summary": summary, "trials": rows}, notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
