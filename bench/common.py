"""What every benchmark script shares: the demo site in its own process, CPU clocks, the
machine's description, tables and the JSON results file."""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import TracebackType
from typing import IO, Any

REPO = Path(__file__).resolve().parent.parent
RESULTS_DIR = REPO / "bench" / "results"

_TICKS = os.sysconf("SC_CLK_TCK")

# A process that keeps one core busy this fraction of the wall time is taken to be the
# limit: asyncio runs on one thread, so one core is all either side can use.
SATURATED = 0.85


# ---- the machine ---------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_ticks() -> tuple[int, int]:
    """The machine's CPU ticks since boot, (stolen, all), from /proc/stat; (0, 0) where
    there is none. On a virtual machine "stolen" is time its host gave to other guests:
    what makes one crawl here slower than the same crawl a minute later."""
    try:
        with open("/proc/stat", encoding="utf-8") as f:
            fields = f.readline().split()
    except OSError:
        return (0, 0)
    # user nice system idle iowait irq softirq steal (guest time is within user already)
    ticks = [int(x) for x in fields[1:9]]
    return (ticks[7] if len(ticks) == 8 else 0, sum(ticks))


def stolen_share(before: tuple[int, int], after: tuple[int, int]) -> float | None:
    """The share of the machine's CPU time its host took between two cpu_ticks()."""
    ticks = after[1] - before[1]
    return (after[0] - before[0]) / ticks if ticks > 0 else None


def _mem_total_gib() -> float | None:
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 1)
    except OSError:
        pass
    return None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "cpu_model": cpu_model(),
        "mem_total_gib": _mem_total_gib(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "versions": {
            name: _version(name)
            for name in ("aiohttp", "beautifulsoup4", "lxml", "textual", "crawlscope")
        },
    }


def machine_line() -> str:
    m = machine()
    return f"{m['nproc']} x {m['cpu_model']}, Python {m['python']}, {m['mem_total_gib']} GiB"


# ---- clocks --------------------------------------------------------------------------


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of another process, from /proc (psutil is not a dependency)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        text = f.read()
    # The command name (field 2) may contain spaces and parentheses: split after the last ")".
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def machine_busy_seconds() -> float:
    """CPU seconds all cores spent busy since boot; the delta shows what everyone else used."""
    with open("/proc/stat", encoding="ascii") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / _TICKS


def loadavg() -> float:
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except OSError:
        return float("nan")


# ---- the demo site, served by a process of its own ---------------------------------------


@dataclass(frozen=True)
class SiteOptions:
    pages: int = 5000
    links: int = 10
    latency: float = 0.0
    seed: int = 1


class DemoSite:
    """`crawlscope demo-site` in a subprocess, so the server never shares the crawler's loop.

    Port 0 lets the OS pick a free port; the URL is read from the line the command prints,
    then the site is polled until it answers.
    """

    def __init__(self, options: SiteOptions) -> None:
        self.options = options
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""
        self.startup_seconds = 0.0  # spawn until it answers: interpreter, imports, site build
        self._log: IO[str] | None = None

    def start(self) -> DemoSite:
        if self.proc is not None:
            return self  # started already (`with DemoSite(...).start()` enters it again)
        o = self.options
        cmd = [
            sys.executable, "-m", "crawlscope", "demo-site", "--port", "0",
            "--pages", str(o.pages), "--links", str(o.links), "--latency", str(o.latency),
            "--seed", str(o.seed),
        ]  # fmt: skip
        t0 = time.perf_counter()
        # The site logs each /flaky connection it drops on purpose; that is noise here, but
        # kept in a file to show if the server dies.
        self._log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._log, text=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        match = re.search(r"https?://\S+/", line)
        if match is None:
            log = self.log_tail()
            self.close()
            raise RuntimeError(f"demo site did not announce its URL: {line!r}\n{log}")
        self.url = match.group(0)
        self._wait_until_answering()
        self.startup_seconds = time.perf_counter() - t0
        return self

    def _wait_until_answering(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.url + "robots.txt", timeout=5) as response:
                    response.read()
                return
            except OSError:
                if time.monotonic() > deadline or (self.proc and self.proc.poll() is not None):
                    raise
                time.sleep(0.05)

    def log_tail(self, chars: int = 2000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read()[-chars:]

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def cpu_seconds(self) -> float:
        return proc_cpu_seconds(self.pid)

    def close(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if self._log is not None:
            self._log.close()

    def __enter__(self) -> DemoSite:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class CpuWatch:
    """Wall time, and the CPU time of the server, this process and the whole machine, over
    one measured span; `verdict` names the side that ran out of CPU."""

    def __init__(self, site: DemoSite | None, crawler_pid: int | None = None) -> None:
        self.site = site
        self.crawler_pid = crawler_pid  # None: this process

    def _crawler_cpu(self) -> float:
        if self.crawler_pid is None:
            return time.process_time()
        return proc_cpu_seconds(self.crawler_pid)

    def __enter__(self) -> CpuWatch:
        self.t0 = time.perf_counter()
        self.server0 = self.site.cpu_seconds() if self.site else 0.0
        self.crawler0 = self._crawler_cpu()
        self.busy0 = machine_busy_seconds()
        return self

    def stop(self, crawler_cpu: float | None = None) -> dict[str, float]:
        """Close the span; `crawler_cpu` overrides the crawler's CPU when measured elsewhere."""
        wall = time.perf_counter() - self.t0
        server = (self.site.cpu_seconds() - self.server0) if self.site else 0.0
        crawler = crawler_cpu if crawler_cpu is not None else self._crawler_cpu() - self.crawler0
        busy = machine_busy_seconds() - self.busy0
        self.figures = {
            "wall_s": wall,
            "crawler_cpu_s": crawler,
            "server_cpu_s": server,
            # Whatever else ran on the machine meanwhile (other people's tests, say).
            "others_cpu_s": max(0.0, busy - server - crawler),
        }
        return self.figures

    def __exit__(self, *exc: object) -> None:
        if not hasattr(self, "figures"):
            self.stop()


def verdict(figures: dict[str, float]) -> str:
    """Which side was the limit, from the share of one core each side kept busy."""
    wall = figures["wall_s"] or float("nan")
    server = figures["server_cpu_s"] / wall
    crawler = figures["crawler_cpu_s"] / wall
    if server >= SATURATED and server >= crawler:
        return "server"
    if crawler >= SATURATED:
        return "crawler"
    if figures.get("others_cpu_s", 0.0) / wall > 0.5:
        return "machine busy"
    return "neither"


# ---- figures -------------------------------------------------------------------------


def median(values: Iterable[float]) -> float:
    data = list(values)
    return statistics.median(data) if data else float("nan")


def paired_ratios(rows: Sequence[dict[str, Any]], value: str, over: str, under: str) -> list[float]:
    """Round by round, `value` of the row of mode `over` divided by the one of mode
    `under`. The two crawls of a round ran one after the other: on a shared machine
    their ratio is steadier than the ratio of medians, as a busy minute slows both."""
    by_round: dict[object, dict[str, float]] = {}
    for row in rows:
        by_round.setdefault(row["round"], {})[row["mode"]] = row[value]
    pairs = [pair for pair in by_round.values() if over in pair and under in pair]
    return [pair[over] / pair[under] for pair in pairs]


def fastest_ratio(
    rows: Sequence[dict[str, Any]],
    value: str,
    over: str,
    under: str,
    fastest: Callable[[Iterable[float]], float] = min,
) -> float:
    """`value` of mode `over`'s fastest crawl divided by mode `under`'s. Beside the
    median of paired ratios, never instead of it: this machine's cores are slowed now and
    then for a fraction of a second, so one crawl in a round may be hit and the other not
    (docs/measurements.md), while the fastest crawl of each mode is likely one that was not."""

    def best(mode: str) -> float:
        return fastest(row[value] for row in rows if row["mode"] == mode)

    return best(over) / best(under)


def ratio_at_equal_steal(
    rows: Sequence[dict[str, Any]], value: str, over: str, under: str
) -> float | None:
    """The paired ratio (see paired_ratios) a round would give if the host had taken the
    same share of the machine (each row's "stolen") during both of its crawls: the
    intercept of the least-squares line through (under's share - over's, ratio). An
    estimate, beside the median and never instead of it; None with fewer than three
    rounds or shares that never differ."""
    by_round: dict[object, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_round.setdefault(row["round"], {})[row["mode"]] = row
    points = [
        (pair[under]["stolen"] - pair[over]["stolen"], pair[over][value] / pair[under][value])
        for pair in by_round.values()
        if over in pair
        and under in pair
        and None not in (pair[over].get("stolen"), pair[under].get("stolen"))
    ]
    if len(points) < 3 or len({x for x, _ in points}) < 2:
        return None
    xs, ys = zip(*points, strict=True)
    return statistics.linear_regression(xs, ys).intercept


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """The p-th percentile (0..100) by nearest rank; the data must be sorted."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), round(p / 100 * len(sorted_values) + 0.5)))
    return sorted_values[rank - 1]


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A plain-text table, numbers right-aligned; also valid Markdown."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    numeric = [
        all(_is_number(row[i]) for row in cells) and bool(cells) for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        padded = (
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        )
        return "| " + " | ".join(padded) + " |"

    rule = (
        "|"
        + "|".join(
            "-" * (w + 1) + ":" if num else "-" * (w + 2)
            for w, num in zip(widths, numeric, strict=True)
        )
        + "|"
    )
    return "\n".join([line(headers), rule, *(line(row) for row in cells)])


def _cell(value: object) -> str:
    if isinstance(value, float):
        if value != value:  # NaN
            return "n/a"
        if abs(value) >= 100:
            return f"{value:,.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        return f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def _is_number(text: str) -> bool:
    return bool(re.fullmatch(r"-?[\d,]+(\.\d+)?x?|n/a", text))


# ---- command line and results ----------------------------------------------------------


def child_figures(module: str, *args: str) -> dict[str, Any]:
    """Run `python -m module args...` in a fresh process (this checkout's) and return the
    JSON object its last line of output prints; RuntimeError with its stderr if it fails."""
    cmd = [sys.executable, "-m", module, *args]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def byte_compiled() -> None:
    """Write the bytecode of this checkout's modules, as an installed crawlscope has it.
    These machines set PYTHONDONTWRITEBYTECODE, under which every process a benchmark
    starts would compile crawlscope's 200 modules again (0.11 s of `crawlscope --help`'s
    0.32 s), a start no user pays after their first run. Quick when up to date."""
    import compileall

    for folder in ("crawlscope", "engine", "tui"):
        compileall.compile_dir(REPO / folder, quiet=1)


def parser(description: str) -> argparse.ArgumentParser:
    """Every benchmark's command line; and, as every benchmark starts here, its bytecode."""
    byte_compiled()
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true", help="small and fast: a smoke test")
    p.add_argument(
        "--results-dir",
        type=Path,
        default=RESULTS_DIR,
        metavar="DIR",
        help=f"where to write NAME.json (default {RESULTS_DIR.relative_to(REPO)})",
    )
    return p


def write_results(
    name: str, args: argparse.Namespace, figures: dict[str, Any], notes: Sequence[str] = ()
) -> Path:
    results_dir: Path = args.results_dir
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.json"
    # Where the file went is this machine's business, not a property of the figures: a
    # results file records the settings that shape them, the machine and the versions.
    settings = {k: v for k, v in vars(args).items() if not isinstance(v, Path)}
    document = {
        "benchmark": name,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        "settings": settings,
        "figures": figures,
        "notes": list(notes),
    }
    path.write_text(json.dumps(document, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    print(f"\nwrote {path}")
    return path
