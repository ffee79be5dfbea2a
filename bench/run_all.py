"""Run every benchmark, one after the other: `python -m bench [--quick]`, or
`python bench/run_all.py [--quick]`. Each prints its tables and writes its JSON under
bench/results/ (or --results-dir); --quick is the smoke-test size (all of them < 60 s)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# Loop lag and the UI overhead come after throughput, whose figures they are read against;
# memory's 100,000-page crawl is the longest, so it comes last.
SCRIPTS = ("throughput", "latency", "loop_lag", "ui_overhead", "screen_scale", "memory")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small and fast: a smoke test")
    p.add_argument("--results-dir", type=Path, metavar="DIR", help="default bench/results")
    p.add_argument("--only", nargs="+", choices=SCRIPTS, metavar="NAME", help="run these only")
    args = p.parse_args(argv)
    failed = []
    spent: dict[str, float] = {}
    for name in args.only or SCRIPTS:
        cmd = [sys.executable, "-m", f"bench.{name}"]
        if args.quick:
            cmd.append("--quick")
        if args.results_dir is not None:
            cmd += ["--results-dir", str(args.results_dir.resolve())]
        print(f"\n===== {' '.join(cmd[1:])}", flush=True)
        t0 = time.perf_counter()
        code = subprocess.run(cmd, cwd=REPO, check=False).returncode
        spent[name] = time.perf_counter() - t0
        if code != 0:
            failed.append(name)
            print(f"===== {name} FAILED (exit {code})", flush=True)
    print("\n===== " + ", ".join(f"{n} {s:.0f}s" for n, s in spent.items()))
    if failed:
        print(f"failed: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
