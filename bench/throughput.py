"""Throughput: crawlscope's engine and `crawlscope crawl -q` against the bare baseline.

The demo site runs in a process of its own (`crawlscope demo-site`, no latency). Each
round crawls it once per (workers, crawler) pair, every crawl in a fresh process, the
order rotated from round to round so that a noisy moment hits every crawler alike; the
table shows medians. Then one crawl of each kind is profiled to show where the time goes.

    python -m bench.throughput [--quick] [--pages N] [--rounds N] [--workers 8 100]
"""

from __future__ import annotations

import subprocess
import sys
import time
from typing import Any

from bench import trial
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
from bench.profiling import available, profile

KINDS = ("baseline", "engine", "command")
TARGET = 0.9  # crawlscope >= 0.9x the baseline


def startup_seconds(site: DemoSite) -> float:
    """What `crawlscope crawl` pays whatever it crawls: the interpreter, the imports, the
    session, robots.txt, the exit. Measured as the command crawling one file with no links."""
    cmd = [sys.executable, "-m", "crawlscope", "crawl", site.url + "files/diagram.png"]
    t0 = time.perf_counter()
    subprocess.run([*cmd, "--per-host", "0", "-q"], cwd=REPO, check=True)
    return time.perf_counter() - t0


def _rotated(items: tuple[str, ...], by: int) -> list[str]:
    by %= len(items)
    return list(items[by:] + items[:by])


def summarize(rows: list[dict[str, Any]], startup: float) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for workers in sorted({r["workers"] for r in rows}):
        mine = [r for r in rows if r["workers"] == workers]
        pages = median(r["pages"] for r in mine if r["kind"] == "engine")
        entry: dict[str, Any] = {}
        for kind in KINDS:
            runs = [r for r in mine if r["kind"] == kind]
            rates = [(r["pages"] or pages) / r["seconds"] for r in runs]
            entry[kind] = {
                "pages": median((r["pages"] or pages) for r in runs),
                "pages_per_s": median(rates),
                "pages_per_s_all": rates,
                "crawler_cpu_share": median(r["crawler_cpu_share"] for r in runs),
                "server_cpu_share": median(r["server_cpu_share"] for r in runs),
                "others_cpu_share": median(r["others_cpu_share"] for r in runs),
                "limits": [r["limit"] for r in runs],
            }
        net = median(pages / (r["seconds"] - startup) for r in mine if r["kind"] == "command")
        entry["command"]["pages_per_s_net_of_startup"] = net
        base = entry["baseline"]["pages_per_s"]
        entry["engine_vs_baseline"] = entry["engine"]["pages_per_s"] / base
        entry["command_vs_baseline"] = entry["command"]["pages_per_s"] / base
        entry["command_net_vs_baseline"] = net / base
        summary[str(workers)] = entry
    return summary


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, help="demo site pages (default 5000; quick 500)")
    p.add_argument("--links", type=int, default=10, help="links per demo page (default 10)")
    p.add_argument("--rounds", type=int, help="rounds (default 3; quick 1)")
    p.add_argument("--workers", type=int, nargs="+", default=[8, 100], metavar="N")
    p.add_argument("--no-profile", dest="profile", action="store_false")
    args = p.parse_args(argv)
    if args.profile and not available():
        print("pyinstrument is not installed: no profile (pip install pyinstrument)")
        args.profile = False
    args.pages = args.pages or (500 if args.quick else 5000)
    args.rounds = args.rounds or (1 if args.quick else 3)

    print(f"throughput: {args.pages} pages, {args.links} links each, no latency; {machine_line()}")
    rows: list[dict[str, Any]] = []
    startups: list[float] = []
    with DemoSite(SiteOptions(pages=args.pages, links=args.links)) as site:
        print(f"demo site {site.url} (pid {site.pid}) answering after {site.startup_seconds:.2f}s")
        # The first crawl of a fresh site meets /flaky's dropped connections and a cold
        # server; it is not measured.
        trial.run("engine", site, max(args.workers))
        for rnd in range(args.rounds):
            startups.append(startup_seconds(site))
            for i, workers in enumerate(_rotated(tuple(map(str, args.workers)), rnd)):
                for kind in _rotated(KINDS, rnd + i):
                    row = trial.run(kind, site, int(workers))
                    row["round"] = rnd + 1
                    rows.append(row)
                    rate = (row["pages"] or rows[-2]["pages"] or 0) / row["seconds"]
                    print(
                        f"  round {rnd + 1}  {kind:8s} {workers:>4s} workers"
                        f"  {rate:7.0f} pages/s  crawler {row['crawler_cpu_share']:4.0%}"
                        f"  server {row['server_cpu_share']:4.0%}"
                        f"  others {row['others_cpu_share']:4.0%}  limit: {row['limit']}"
                    )
        startup = median(startups)
        summary = summarize(rows, startup)

        prof: dict[str, Any] = {}
        if args.profile:
            workers = max(args.workers)
            for kind in ("engine", "baseline"):
                runner = trial.RUNNERS[kind]
                result = profile(lambda r=runner: r(site.url, workers))  # type: ignore[misc]
                prof[kind] = result.to_json()

    print(f"\nmedian of {args.rounds} round(s); the command's fixed cost (start, imports,"
          f" robots.txt, exit: a one-file crawl) {startup:.2f}s")  # fmt: skip
    headers = [
        "workers", "baseline p/s", "engine p/s", "engine/base", "command p/s", "cmd/base",
        "cmd net p/s", "cmd net/base", "server CPU", "engine CPU", "limit",
    ]  # fmt: skip
    lines = []
    for workers, e in summary.items():
        lines.append([
            int(workers),
            e["baseline"]["pages_per_s"],
            e["engine"]["pages_per_s"],
            f"{e['engine_vs_baseline']:.2f}x",
            e["command"]["pages_per_s"],
            f"{e['command_vs_baseline']:.2f}x",
            e["command"]["pages_per_s_net_of_startup"],
            f"{e['command_net_vs_baseline']:.2f}x",
            f"{e['engine']['server_cpu_share']:.0%}",
            f"{e['engine']['crawler_cpu_share']:.0%}",
            _limit_text(e["engine"]["limits"]),
        ])  # fmt: skip
    print(table(headers, lines))
    notes = _notes(summary)
    for note in notes:
        print(note)

    for kind, result in prof.items():
        print(f"\nprofile: {kind}, {max(args.workers)} workers ({result['seconds']:.2f}s sampled)")
        print(
            table(["share", "category"], [[f"{v:.1%}", k] for k, v in result["categories"].items()])
        )
        print(
            table(
                ["share", "function (self time)"],
                [[f"{t['share']:.1%}", t["function"]] for t in result["top_self_time"]],
            )
        )

    write_results(
        "throughput",
        args,
        {
            "startup_s": startup,
            "summary": summary,
            "trials": rows,
            "profile": prof,
            "target": TARGET,
        },
        notes,
    )
    return 0


def _limit_text(limits: list[str]) -> str:
    counts = {name: limits.count(name) for name in dict.fromkeys(limits)}
    return ", ".join(f"{name} {n}/{len(limits)}" for name, n in counts.items())


def _notes(summary: dict[str, Any]) -> list[str]:
    notes = []
    for workers, e in summary.items():
        ratio = e["engine_vs_baseline"]
        met = "met" if ratio >= TARGET else "NOT met"
        notes.append(f"{workers} workers: engine {ratio:.2f}x baseline (target {TARGET}x: {met})")
        for kind in KINDS:
            share = e[kind]["server_cpu_share"]
            if "server" in e[kind]["limits"]:
                notes.append(
                    f"{workers} workers, {kind}: the SERVER was the bottleneck"
                    f" (it kept {share:.0%} of a core busy)"
                )
    return notes


if __name__ == "__main__":
    sys.exit(main())
