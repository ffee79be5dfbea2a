"""Per core: how close one crawling process comes to what aiohttp alone can fetch.

The demo site runs in a process of its own (no latency). Each round crawls it once with
aiohttp fetching its pages and nothing else (the ceiling: `baseline.fetch_only`), the bare
aiohttp + BeautifulSoup crawler (`baseline.crawl`) and crawlscope's engine (default
options but the per-host limit, off as in throughput.py), each in a fresh process, the
order rotated from round to round; and, with `--before DIR`, the engine of another
checkout (with its own .venv) in the same rounds. Rates are steady-state pages/s (10th to
90th percent of the pages) and whole-process pages/s; the table shows medians and the
engine's share of the fetch-only rate, and each crawler's CPU per page (which another
process loading the machine changes least).

Then (unless --no-profile) one fetch-only crawl and one of the engine are profiled in this
process, side by side: each category's share of the crawler's busy time (pyinstrument, the
idle select() left out) times that crawler's median CPU a page, so the table says in
microseconds a page where the engine's page costs more than aiohttp's fetch alone.

    python -m bench.per_core [--quick] [--pages N] [--rounds N] [--before ../old] [--no-profile]
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench import trial
from bench.common import DemoSite, SiteOptions, machine_line, median, parser, table, write_results
from bench.profiling import IDLE, available, profile

KINDS = ("fetch", "baseline", "engine")
GOAL = 4500  # pages/s at steady state, one process (issue 32)


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, default=20_000)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, default=100)
    p.add_argument("--before", type=Path, help="a checkout whose engine to run alongside")
    p.add_argument("--no-profile", dest="profile", action="store_false")
    args = p.parse_args()
    if args.profile and not available():
        print("pyinstrument is not installed: no profile (pip install pyinstrument)")
        args.profile = False
    if args.quick:
        args.pages, args.rounds = 1000, 1
    kinds = [*KINDS, "before"] if args.before else list(KINDS)
    rows: list[dict[str, Any]] = []
    with DemoSite(SiteOptions(pages=args.pages)) as site:
        trial.run("engine", site, args.workers)  # warm-up: the site's caches, the disk's
        for n in range(args.rounds):
            for kind in kinds[n % len(kinds) :] + kinds[: n % len(kinds)]:
                before = args.before if kind == "before" else None
                row = trial.run(kind, site, args.workers, before)
                row["kind"] = kind
                row["round"] = n
                rows.append(row)
        profiles = side_by_side(site, args.workers) if args.profile else {}
    summary: dict[str, Any] = {}
    for kind in kinds:
        mine = [r for r in rows if r["kind"] == kind]
        summary[kind] = {
            "steady_pages_per_s": median(r["steady_pages_per_s"] for r in mine),
            "pages_per_s": median(r["pages"] / r["seconds"] for r in mine),
            "cpu_share": median(r["crawler_cpu_share"] for r in mine),
            # The crawler's own CPU for each page: what a loaded machine changes least.
            "cpu_us_per_page": median(r["cpu_seconds"] / r["pages"] * 1e6 for r in mine),
            "pages": median(r["pages"] for r in mine),
        }
    fetch = summary["fetch"]["steady_pages_per_s"]
    print(f"per_core: {args.pages}-page demo site, {args.workers} workers, {machine_line()}")
    print(
        table(
            [
                "crawler",
                "steady pages/s",
                "whole pages/s",
                "of fetch-only",
                "CPU us a page",
                "crawler CPU",
            ],
            [
                (
                    kind,
                    round(s["steady_pages_per_s"]),
                    round(s["pages_per_s"]),
                    f"{s['steady_pages_per_s'] / fetch:.2f}",
                    round(s["cpu_us_per_page"]),
                    f"{s['cpu_share']:.0%}",
                )
                for kind, s in summary.items()
            ],
        )
    )
    engine = summary["engine"]["steady_pages_per_s"]
    verdict = "met" if engine >= GOAL else "not met"
    print(f"goal {GOAL} pages/s at steady state: {verdict} ({engine:.0f})")
    gap = profile_table(profiles, summary) if profiles else []
    write_results("per_core", args, {"rows": rows, "summary": summary, "profile": gap})


def side_by_side(site: DemoSite, workers: int) -> dict[str, Any]:
    """Each profiled kind's categories and top functions, as shares of its busy time (the
    idle select() left out)."""
    pages = site.options.pages
    runs = {
        "fetch": lambda: trial.crawl_fetch(site.url, workers, pages),
        "engine": lambda: trial.crawl_engine(site.url, workers),
    }
    shares: dict[str, Any] = {}
    for kind, make in runs.items():
        summary = profile(make, top=40)
        busy = 1.0 - summary.categories.get(IDLE, 0.0) or 1.0
        shares[kind] = {
            "categories": {k: v / busy for k, v in summary.categories.items() if k != IDLE},
            "top": [(f, v / busy) for f, v in summary.top if "selectors.py" not in f],
        }
    return shares


def profile_table(profiles: dict[str, Any], summary: dict[str, Any]) -> dict[str, Any]:
    """Print and return the categories in microseconds a page, fetch-only beside the
    engine, and the engine's costliest functions."""
    us = {kind: summary[kind]["cpu_us_per_page"] for kind in profiles}
    fetch, engine = profiles["fetch"]["categories"], profiles["engine"]["categories"]
    names = sorted({*fetch, *engine}, key=lambda name: -engine.get(name, 0.0))
    rows = [
        {"category": name, "fetch_us": fetch.get(name, 0.0) * us["fetch"],
         "engine_us": engine.get(name, 0.0) * us["engine"]}
        for name in names
    ]  # fmt: skip
    rows.append({"category": "all", "fetch_us": us["fetch"], "engine_us": us["engine"]})
    print("\nwhere a page's CPU goes (us a page: the profile's share of busy time x the median")
    print("CPU a page above), aiohttp fetching alone beside crawlscope's engine:")
    print(
        table(
            ["category", "fetch-only", "engine", "engine - fetch-only"],
            [
                (r["category"], round(r["fetch_us"]), round(r["engine_us"]),
                 f"{r['engine_us'] - r['fetch_us']:+.0f}")
                for r in rows
            ],
        )
    )  # fmt: skip
    top = [(f, share * us["engine"]) for f, share in profiles["engine"]["top"][:15]]
    print("\nthe engine's costliest functions (self time, us a page):")
    print(table(["function", "us a page"], [(f, f"{cost:.1f}") for f, cost in top]))
    return {"categories": rows, "engine_top": top}


if __name__ == "__main__":
    main()
