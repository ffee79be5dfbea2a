"""Start-up: how long `crawlscope --version` and `crawlscope crawl --help` take, against
`python -c pass` timed in the same run (the goal: within 0.15 s of it).

Each command runs --runs times, the three interleaved so that a change in the machine's
load falls on all of them alike; the medians are printed, and each one's excess over
`python -c pass`.

    python -m bench.startup [--runs N] [--module NAME]

--module NAME times `python -m NAME` instead of the `crawlscope` script beside this
Python (with PYTHONPATH set, that measures another tree: `--module crawlscope.tui` on
a checkout from before the command line moved to crawlscope/cli).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL = 0.15  # seconds over `python -c pass`


def launcher(module: str | None) -> list[str]:
    script = Path(sys.executable).with_name("crawlscope")
    if module is None and script.exists():
        return [str(script)]
    return [sys.executable, "-m", module or "crawlscope"]


def wall_time(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=20, help="runs of each command (default 20)")
    p.add_argument("--module", metavar="NAME", help="time `python -m NAME` instead")
    args = p.parse_args(argv)
    run = launcher(args.module)
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "crawlscope --version": [*run, "--version"],
        "crawlscope crawl --help": [*run, "crawl", "--help"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for command in commands.values():
        wall_time(command)  # once unmeasured: the files are in the page cache after
    for _ in range(args.runs):
        for name, command in commands.items():
            times[name].append(wall_time(command))
    base = statistics.median(times["python -c pass"])
    where = os.environ.get("PYTHONPATH")
    print(f"{' '.join(run)}; {args.runs} runs each, interleaved; median wall time"
          + (f"; PYTHONPATH={where}" if where else ""))  # fmt: skip
    for name, samples in times.items():
        median = statistics.median(samples)
        excess = "" if name.startswith("python") else f"  +{median - base:.3f} s over pass"
        verdict = "" if not excess else ("  ok" if median - base <= GOAL else "  over the goal")
        print(f"  {name:<26} {median:.3f} s{excess}{verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
