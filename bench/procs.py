"""`crawl --procs 1` against `crawl --procs 2`: the scaling of one command over cores.

The demo site runs in a process of its own (40,000 pages by default); each round crawls
it once with each setup, in turn, the order swapped from round to round, with
crawlscope's default options (only --procs differs), as a user runs it. Pages/s is the
steady rate (10th to 90th percent of the pages, by their records' end times), so the
start-up of the interpreters and of the embedded Redis does not count; the wall time is
given too. Other helpers may load the machine: the CPU the machine spent on anything but
this benchmark's processes is measured over each crawl and shown as "other load", in cores.

    python -m bench.procs [--quick] [--pages N] [--rounds N]
"""

from __future__ import annotations

import json
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import (
    REPO,
    DemoSite,
    SiteOptions,
    loadavg,
    machine_busy_seconds,
    machine_line,
    median,
    parser,
    table,
    write_results,
)
from bench.trial import steady_rate

GOAL = 1.6  # --procs 2 over --procs 1, on a 2-core machine whose site takes part of one


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def crawl_once(site: DemoSite, procs: int, options: list[str]) -> dict[str, Any]:
    outdir = Path(tempfile.mkdtemp(prefix="bench-procs-"))
    out = outdir / "all.jsonl"
    command = [sys.executable, "-m", "crawlscope", "crawl", site.url, "-q", "-o", str(out),
               "--procs", str(procs), *options]  # fmt: skip
    busy0, ours0, site0 = machine_busy_seconds(), children_cpu(), site.cpu_seconds()
    t0 = time.perf_counter()
    done = subprocess.run(command, cwd=REPO, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, check=False)  # fmt: skip
    seconds = time.perf_counter() - t0
    ours = children_cpu() - ours0 + site.cpu_seconds() - site0
    other = max(0.0, machine_busy_seconds() - busy0 - ours) / seconds
    if done.returncode != 0:
        raise RuntimeError(f"crawl --procs {procs} failed: {done.stderr[-2000:]}")
    stamps = []
    for line in out.read_text().splitlines():
        record = json.loads(line)
        if not record.get("filtered"):
            stamps.append(float(record["t_end"]))
    shutil.rmtree(outdir)
    each = re.search(r"pages each: (.*)", done.stderr)
    per_process = [int(n) for n in re.findall(r"#\d+ (\d+)", each.group(1))] if each else []
    return {
        "pages": len(stamps), "seconds": seconds, "pages_per_s": steady_rate(stamps),
        "per_process": per_process, "other_load_cores": other, "cpu_seconds": ours,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, help="demo site pages (default 40000; quick 3000)")
    p.add_argument("--rounds", type=int, help="rounds (default 2; quick 1)")
    p.add_argument("--per-host", type=int, metavar="N",
                   help="crawl with --per-host N (default: crawlscope's own default)")  # fmt: skip
    args = p.parse_args(argv)
    options = [] if args.per_host is None else ["--per-host", str(args.per_host)]
    args.pages = args.pages or (3000 if args.quick else 40_000)
    args.rounds = args.rounds or (1 if args.quick else 2)
    print(machine_line())
    print(f"load average at the start: {loadavg():.2f}")
    rows: list[dict[str, Any]] = []
    with DemoSite(SiteOptions(pages=args.pages)) as site:
        for round_no in range(args.rounds):
            for procs in (1, 2) if round_no % 2 == 0 else (2, 1):
                row = {"procs": procs, **crawl_once(site, procs, options)}
                rows.append(row)
                print(f"  round {round_no + 1}: --procs {procs}: {row['pages']} pages, "
                      f"{row['pages_per_s']:.0f} pages/s, {row['seconds']:.1f} s, each "
                      f"{row['per_process']}, other load {row['other_load_cores']:.2f} "
                      "cores")  # fmt: skip
    rates = {n: median(r["pages_per_s"] for r in rows if r["procs"] == n) for n in (1, 2)}
    walls = {n: median(r["seconds"] for r in rows if r["procs"] == n) for n in (1, 2)}
    ratios = [
        two["pages_per_s"] / one["pages_per_s"]
        for one, two in zip(rows[0::2], rows[1::2], strict=True)
        for one, two in [sorted((one, two), key=lambda r: r["procs"])]
    ]
    print()
    print(table(
        ["setup", "pages", "pages/s", "wall s", "vs --procs 1", "goal"],
        [[f"--procs {n}", median(r["pages"] for r in rows if r["procs"] == n), round(rates[n]),
          round(walls[n], 1), f"{rates[n] / rates[1]:.2f}x", f">= {GOAL}x" if n == 2 else ""]
         for n in (1, 2)],
    ))  # fmt: skip
    print("\nper round (--procs 2 / --procs 1, side by side): "
          + ", ".join(f"{r:.2f}x" for r in ratios))  # fmt: skip
    figures = {
        "rows": rows,
        "pages_per_s": rates,
        "wall_seconds": walls,
        "ratio": rates[2] / rates[1],
        "ratios_per_round": ratios,
    }
    write_results("procs" if args.per_host is None else "procs-per-host", args, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
