"""A plain crawl against `crawl --procs 1`, `--procs 2` and `--procs 4`: what spreading one
command over processes costs a page, and the speed-up that cost allows on more cores.

The demo site runs in a process of its own (40,000 pages by default); each round crawls
it once with each setup, in turn, the order rotated from round to round, with
crawlscope's default options (only --procs differs), as a user runs it. Pages/s is the
steady rate (10th to 90th percent of the pages, by their records' end times), so the
start-up of the interpreters and of the embedded Redis does not count; the wall time is
given too. Other helpers may load the machine: the CPU the machine spent on anything but
this benchmark's processes is measured over each crawl and shown as "other load", in cores.

The CPU a page of each kind of process (the crawl's children, its Redis, the parent, the
site) is printed side by side, and from it a model of the speed-up over a plain crawl on
4, 8 and 16 free cores (the site elsewhere): these 2-core machines cannot show it.

    python -m bench.procs [--quick] [--pages N] [--rounds N] [--setups 0 1 2 4]
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
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
    proc_cpu_seconds,
    table,
    write_results,
)
from bench.trial import steady_rate

GOAL = 1.6  # --procs 2 over --procs 1, on a 2-core machine whose site takes part of one
MODEL_CORES = (4, 8, 16)


def name(procs: int) -> str:
    return f"--procs {procs}" if procs else "plain"


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children", encoding="ascii") as f:
                for child in f.read().split():
                    found += [int(child), *_descendants(int(child))]
    return found


def _role(pid: int) -> str:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        words = f.read().split(b"\0")
    # Redis rewrites its title: "/path/redis-server unixsocket:/...", one word.
    if b"redis-server" in words[0]:
        return "redis"
    return "child" if b"crawlscope.engine.cluster.child" in words else "other"


class TreeWatch(threading.Thread):
    """The CPU of each process under the crawl command, by role (children, Redis), read
    from /proc ten times a second: the last reading of a process before it ends is what
    it is counted for (so up to 0.1 s of each one's last work is missed)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.last: dict[int, tuple[str, float]] = {}
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.1):
            for pid in _descendants(self.pid):
                with contextlib.suppress(OSError, ValueError):
                    # A process seen between fork and exec still has its parent's
                    # command line: "other" is read again until it names what it runs.
                    known = self.last.get(pid)
                    role = known[0] if known and known[0] != "other" else _role(pid)
                    self.last[pid] = (role, proc_cpu_seconds(pid))

    def by_role(self) -> dict[str, float]:
        roles: dict[str, float] = {}
        for role, seconds in self.last.values():
            roles[role] = roles.get(role, 0.0) + seconds
        return roles


def crawl_once(site: DemoSite, procs: int, options: list[str]) -> dict[str, Any]:
    """One crawl of the site: with --procs `procs`, or a plain one (0)."""
    outdir = Path(tempfile.mkdtemp(prefix="bench-procs-"))
    out = outdir / "all.jsonl"
    # --report to nowhere, not -q: -q prints no per-process figures either.
    spread = ["--procs", str(procs)] if procs else []
    command = [sys.executable, "-m", "crawlscope", "crawl", site.url, "--report", os.devnull,
               "-o", str(out), *spread, *options]  # fmt: skip
    busy0, ours0, site0 = machine_busy_seconds(), children_cpu(), site.cpu_seconds()
    t0 = time.perf_counter()
    proc = subprocess.Popen(command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    watch = TreeWatch(proc.pid)
    watch.start()
    _out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    watch.done.set()
    watch.join()
    site_cpu = site.cpu_seconds() - site0
    command_cpu = children_cpu() - ours0  # the parent and everything under it, reaped
    ours = command_cpu + site_cpu
    other = max(0.0, machine_busy_seconds() - busy0 - ours) / seconds
    if proc.returncode != 0:
        raise RuntimeError(f"crawl {' '.join(spread)} failed: {err[-2000:]}")
    stamps = []
    for line in out.read_text().splitlines():
        record = json.loads(line)
        if not record.get("filtered"):
            stamps.append(float(record["t_end"]))
    shutil.rmtree(outdir)
    each = re.search(r"pages fetched each: ([^(]*)", err)  # pages, not filtered URLs
    per_process = [int(n) for n in re.findall(r"#\d+ (\d+)", each.group(1))] if each else []
    return {
        "pages": len(stamps), "seconds": seconds, "pages_per_s": steady_rate(stamps),
        "per_process": per_process, "other_load_cores": other, "cpu_seconds": ours,
        "cpu_by_role": cpu_by_role(watch.by_role(), command_cpu, site_cpu),
        # Which kinds of process were seen under the command: a short crawl's Redis can
        # end before its CPU reaches /proc's 10 ms tick, so seen is not "used CPU".
        "roles_seen": sorted(watch.by_role()),
    }  # fmt: skip


def cpu_by_role(watched: dict[str, float], command: float, site: float) -> dict[str, float]:
    """CPU seconds of the crawl's children, its Redis, its parent (the rest of the
    command's: a plain crawl's all of it) and the site. The children's and Redis's are
    /proc readings; the parent's is what is left of the whole command's, so the parts
    add up."""
    children, redis = watched.get("child", 0.0), watched.get("redis", 0.0)
    return {"children": children, "redis": redis,
            "parent": max(0.0, command - children - redis), "site": site}  # fmt: skip


ROLES = ("children", "redis", "parent", "site")


def cost_per_page(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Medians over the rows of each part's CPU a page, in microseconds, and the cores
    the whole crawl kept busy."""
    cost = {role: median(r["cpu_by_role"][role] / r["pages"] * 1e6 for r in rows) for role in ROLES}
    cost["total"] = sum(cost[role] for role in ROLES)
    cost["cores_busy"] = median(sum(r["cpu_by_role"].values()) / r["seconds"] for r in rows)
    return cost


def ceiling(
    costs: dict[int, dict[str, float]], walls: dict[int, float], rows: list[dict[str, Any]]
) -> dict[str, float]:
    """How much faster than --procs 1 two processes could be on this machine's cores, if
    every core were busy: at the CPU a page --procs 2 took, and at --procs 1's. With the
    site on the same cores, its share, Redis's and the parent's are taken from what the
    children can use; this is the gap's arithmetic, not a measurement."""
    cores = len(os.sched_getaffinity(0))
    pages = median(r["pages"] for r in rows)
    rate1 = pages / walls[1]
    return {
        "cores": cores,
        "at_its_cost": cores / (costs[2]["total"] / 1e6) / rate1,
        "at_procs1_cost": cores / (costs[1]["total"] / 1e6) / rate1,
    }


def speedup_model(plain: dict[str, float], spread: dict[str, float], cores: int) -> float:
    """The speed-up over a plain crawl (one process: one core at most) of `cores`
    processes on as many free cores, the site elsewhere, at the CPU a page measured for
    a spread crawl (`spread`): the slowest of the children together (the cores, less
    what Redis and the parent take of them), Redis alone (one thread) and the parent
    alone. Arithmetic from measured costs, not a measurement."""
    crawl = spread["children"] + spread["redis"] + spread["parent"]
    limits = [cores / crawl, 1 / max(spread["redis"], 1e-9), 1 / max(spread["parent"], 1e-9)]
    plain_cost = plain["children"] + plain["redis"] + plain["parent"]
    return min(limits) * plain_cost


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--pages", type=int, help="demo site pages (default 40000; quick 3000)")
    p.add_argument("--rounds", type=int, help="rounds (default 2; quick 1)")
    p.add_argument("--per-host", type=int, metavar="N",
                   help="crawl with --per-host N (default: crawlscope's own default)")  # fmt: skip
    p.add_argument("--setups", type=int, nargs="+", metavar="N",
                   help="--procs values, 0 plain (default 0 1 2 4; quick 0 1 2)")  # fmt: skip
    args = p.parse_args(argv)
    setups = sorted(set(args.setups or ((0, 1, 2) if args.quick else (0, 1, 2, 4))) | {0, 1, 2})
    options = [] if args.per_host is None else ["--per-host", str(args.per_host)]
    args.pages = args.pages or (3000 if args.quick else 40_000)
    args.rounds = args.rounds or (1 if args.quick else 2)
    print(machine_line())
    print(f"load average at the start: {loadavg():.2f}")
    rows: list[dict[str, Any]] = []
    with DemoSite(SiteOptions(pages=args.pages)) as site:
        for round_no in range(args.rounds):
            turn = round_no % len(setups)
            for procs in setups[turn:] + setups[:turn]:
                row = {"procs": procs, **crawl_once(site, procs, options)}
                rows.append(row)
                print(f"  round {round_no + 1}: {name(procs)}: {row['pages']} pages, "
                      f"{row['pages_per_s']:.0f} pages/s, {row['seconds']:.1f} s, each "
                      f"{row['per_process']}, other load {row['other_load_cores']:.2f} "
                      "cores")  # fmt: skip
    rates = {n: median(r["pages_per_s"] for r in rows if r["procs"] == n) for n in setups}
    walls = {n: median(r["seconds"] for r in rows if r["procs"] == n) for n in setups}
    ratios = [
        next(r for r in rows[i:] if r["procs"] == 2)["pages_per_s"]
        / next(r for r in rows[i:] if r["procs"] == 1)["pages_per_s"]
        for i in range(0, len(rows), len(setups))
    ]
    print()
    print(table(
        ["setup", "pages", "pages/s", "wall s", "vs --procs 1", "goal"],
        [[name(n), median(r["pages"] for r in rows if r["procs"] == n), round(rates[n]),
          round(walls[n], 1), f"{rates[n] / rates[1]:.2f}x", f">= {GOAL}x" if n == 2 else ""]
         for n in setups],
    ))  # fmt: skip
    print("\nper round (--procs 2 / --procs 1, side by side): "
          + ", ".join(f"{r:.2f}x" for r in ratios))  # fmt: skip
    costs = {n: cost_per_page([r for r in rows if r["procs"] == n]) for n in setups}
    crawl_cost = {n: costs[n]["total"] - costs[n]["site"] for n in setups}
    print("\nCPU a page (us), by process, whole runs; the tax: the crawl's own (site left out)")
    print("over a plain crawl's (goal: --procs 1 <= 1.15x, --procs 2 <= 1.25x):")
    print(table(
        ["setup", *ROLES, "total", "cores busy", "tax"],
        [[name(n), *(round(costs[n][role]) for role in ROLES), round(costs[n]["total"]),
          f"{costs[n]['cores_busy']:.2f}", f"{crawl_cost[n] / crawl_cost[0]:.2f}x"]
         for n in setups],
    ))  # fmt: skip
    widest = max(setups)
    model = {cores: speedup_model(costs[0], costs[widest], cores) for cores in MODEL_CORES}
    print(f"\nthe model, at {name(widest)}'s CPU a page: the speed-up over a plain crawl of "
          "as many processes as free cores (site elsewhere): "
          + ", ".join(f"{cores} cores {x:.1f}x" for cores, x in model.items()))  # fmt: skip
    bound = ceiling(costs, walls, rows)
    print(f"\nthe ceiling on {bound['cores']} cores: --procs 2 at most {bound['at_its_cost']:.2f}x "
          f"--procs 1 at the CPU a page it took, {bound['at_procs1_cost']:.2f}x had it cost what "
          "--procs 1 did a page (whole-run rates)")  # fmt: skip
    figures = {
        "rows": rows,
        "pages_per_s": rates,
        "wall_seconds": walls,
        "ratio": rates[2] / rates[1],
        "ratios_per_round": ratios,
        "cpu_us_per_page": costs,
        "tax": {n: crawl_cost[n] / crawl_cost[0] for n in setups},
        "ceiling": bound,
        "model": {"at": widest, "speedup": model},
    }
    write_results("procs" if args.per_host is None else "procs-per-host", args, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
