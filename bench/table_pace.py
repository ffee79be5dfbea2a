"""How often the workers table is redrawn while a crawl saturates its core.

A crawl of the demo site (no latency, per-host limit off) at 500 workers under the TUI
(Textual's headless driver, 160x48), in a fresh process: for `--seconds` after the first
two, the frames drawn by kind (table: every panel; rows: the table's rows and the status
line; pulse: the status line alone) and what each cost in its slot, the table redraws a
second (table and rows frames), and the screen's share of the loop. With `--before DIR`,
the same in a checkout there (its own .venv), alternately.

With `--terminal`, what a user sees: the TUI in a pseudo-terminal of 160x48, its output
read into a terminal emulator (pyte) one synchronized update at a time, and counted: how
often the table's rows on the screen change a second, and the status line, in the same
window as the app's own figures.

    python -m bench.table_pace [--quick] [--workers 500] [--seconds 8] [--before ../old]
        [--terminal]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from collections import Counter
from pathlib import Path
from typing import Any

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
from bench.inprocess import TUI_SIZE
from bench.trial import engine_config
from crawlscope.engine.observe.snapshot import OVER

GOAL = 5.0  # table redraws a second (issue 32)
# Textual asks whether the terminal supports synchronized output; a modern terminal says
# yes, and each update then comes between these two markers (see bench/terminal.py).
ASK_SYNC, SYNC_YES = b"\x1b[?2026$p", b"\x1b[?2026;2$y"
SYNC_END = b"\x1b[?2026l"


async def child(url: str, workers: int, seconds: float, headless: bool = True) -> dict[str, Any]:
    from crawlscope.tui.app import CrawlScopeApp
    from crawlscope.tui.startup import LiveCrawl

    live = LiveCrawl((url,), make_config=lambda r: engine_config(r[0], workers))
    app = CrawlScopeApp(live)
    size = TUI_SIZE if headless else None  # in a terminal, the terminal's
    running = asyncio.create_task(app.run_async(headless=headless, size=size))
    while live.crawler is None or not live.crawler.t0:
        if running.done():
            running.result()
        await asyncio.sleep(0.05)
    panels = app.panels
    kinds: Counter[str] = Counter()
    costs: dict[str, list[float]] = {}
    draw = panels._draw

    def counted(kind: Any) -> None:
        # A frame's whole cost in its slot: the tick, and the drawing done there (straight
        # to the terminal, or through the compositor).
        started = time.perf_counter()
        draw(kind)
        kinds[kind] += 1
        costs.setdefault(kind, []).append(time.perf_counter() - started)

    panels._draw = counted  # type: ignore[method-assign]
    await asyncio.sleep(2.0)  # the start: one page, the frontier growing
    kinds.clear()
    costs.clear()
    ui0, t0, window0 = panels.ui_seconds, time.perf_counter(), time.time()
    await asyncio.sleep(seconds)
    wall = time.perf_counter() - t0
    snap = panels.snap
    result = {
        "window": [window0, time.time()],
        # The end of a crawl is drawn outside the frame clock (at once, whatever the
        # budget says): a window it falls in counts changes no frame kind drew.
        "over": snap is None or snap.phase in OVER,
        "tables_per_s": (kinds["table"] + kinds["rows"]) / wall,
        "kinds_per_s": {kind: n / wall for kind, n in kinds.items()},
        "ms_by_kind": {kind: 1000 * median(c) for kind, c in costs.items()},
        "ui_share": (panels.ui_seconds - ui0) / wall,
        "saturated": panels.budget.saturated,
    }
    app.exit(0)
    await running
    return result


def child_command(
    url: str, workers: int, seconds: float, before: Path | None
) -> tuple[list[str], Path, dict[str, str]]:
    """The child's command line, where it runs and its environment: this file, run by its
    path with the other checkout's code (bench/ included) first on the path: the checkout
    need not have this script."""
    python = sys.executable if before is None else str(before / ".venv" / "bin" / "python")
    where = REPO if before is None else before
    cmd = [python, str(Path(__file__).resolve()), "--child", "--url", url]
    cmd += ["--workers", str(workers), "--seconds", str(seconds)]
    return cmd, where, {**os.environ, "PYTHONPATH": str(where)}


def run_child(url: str, workers: int, seconds: float, before: Path | None) -> dict[str, Any]:
    cmd, where, env = child_command(url, workers, seconds, before)
    proc = subprocess.run(cmd, cwd=where, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    figures: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return figures


def table_rows(display: list[str]) -> tuple[str, ...]:
    """The workers table's rows as a terminal shows them: the lines below its header, down
    to the bottom of its border."""
    for top, line in enumerate(display):
        if " state " in line and "suspended at" in line:
            rows = []
            for row in display[top + 1 :]:
                if row.lstrip().startswith("╰"):
                    break
                rows.append(row)
            return tuple(rows)
    return ()


def run_in_terminal(url: str, workers: int, seconds: float, before: Path | None) -> dict[str, Any]:
    """The child in a pty, its screen read by a terminal emulator; the times at which the
    table's rows and the status line changed on that screen, counted in the child's window."""
    import pyte

    cmd, where, env = child_command(url, workers, seconds, before)
    env |= {"TERM": "xterm-256color", "COLORTERM": "truecolor"}
    cols, lines = TUI_SIZE
    env |= {"COLUMNS": str(cols), "LINES": str(lines)}  # the pty's, whatever we inherit
    screen = pyte.Screen(cols, lines)
    stream = pyte.ByteStream(screen)
    table_times: list[float] = []
    status_times: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        figures_path = Path(tmp) / "figures.json"
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", lines, cols, 0, 0))
        cmd += ["--figures", str(figures_path)]
        proc = subprocess.Popen(
            cmd, cwd=where, stdin=slave, stdout=slave, stderr=slave, env=env,
            start_new_session=True,
        )  # fmt: skip
        os.close(slave)
        pending = b""
        shown: tuple[tuple[str, ...], str] | None = None
        deadline = time.perf_counter() + seconds + 120
        try:
            while proc.poll() is None and time.perf_counter() < deadline:
                ready, _, _ = select.select([master], [], [], 0.2)
                try:
                    chunk = os.read(master, 1 << 16) if ready else b""
                except OSError:  # the child is gone
                    break
                if ASK_SYNC in pending[-16:] + chunk:
                    os.write(master, SYNC_YES)
                pending += chunk
                # Whole updates only: a screen half drawn would count one change twice.
                end = pending.rfind(SYNC_END)
                if end < 0:
                    continue
                end += len(SYNC_END)
                stream.feed(pending[:end])
                pending = pending[end:]
                now = time.time()
                seen = (table_rows(screen.display), screen.display[0])
                if shown is not None:
                    if seen[0] != shown[0]:
                        table_times.append(now)
                    if seen[1] != shown[1]:
                        status_times.append(now)
                shown = seen
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
            os.close(master)
        if not figures_path.exists():
            raise RuntimeError(f"{' '.join(cmd)} wrote no figures (exit {proc.returncode})")
        figures: dict[str, Any] = json.loads(figures_path.read_text(encoding="utf-8"))
    start, end_at = figures["window"]

    def rate(times: list[float]) -> float:
        return sum(start <= t <= end_at for t in times) / (end_at - start)

    return {
        **figures,
        "seen_tables_per_s": rate(table_times),
        "seen_status_per_s": rate(status_times),
        # Over the whole run: a smoke test asks whether anything moved, not how often.
        "seen_tables": len(table_times),
        "seen_status": len(status_times),
    }


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=500)
    p.add_argument("--seconds", type=float, help="measured (default 8; quick 2)")
    p.add_argument("--rounds", type=int, help="default 2; quick 1")
    p.add_argument("--before", type=Path, help="a checkout to measure alongside (its .venv)")
    p.add_argument("--terminal", action="store_true", help="in a pty, read as a terminal shows it")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--url", help=argparse.SUPPRESS)
    p.add_argument("--figures", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args()
    args.seconds = args.seconds or (2.0 if args.quick else 8.0)
    args.rounds = args.rounds or (1 if args.quick else 2)
    if args.child:
        figures = asyncio.run(child(args.url, args.workers, args.seconds, args.figures is None))
        if args.figures is None:
            print(json.dumps(figures))
        else:  # the terminal is the app's
            args.figures.write_text(json.dumps(figures), encoding="utf-8")
        return
    run = run_in_terminal if args.terminal else run_child
    versions = {"now": None, **({"before": args.before} if args.before else {})}
    runs: list[dict[str, Any]] = []
    # More pages than the fastest crawl fetches in its start and window (2,700 pages/s).
    with DemoSite(SiteOptions(pages=40_000)) as site:
        for n in range(args.rounds):
            for version, where in versions.items():
                figures = run(site.url, args.workers, args.seconds, where)
                runs.append({"version": version, "round": n, **figures})

    def of(version: str, figure: str, kind: str | None = None) -> float:
        mine = [r for r in runs if r["version"] == version]
        if kind is None:
            return median(r[figure] for r in mine if figure in r)
        return median(r[figure].get(kind, 0.0) for r in mine)

    summary: dict[str, dict[str, Any]] = {
        version: {
            "tables_per_s": of(version, "tables_per_s"),
            "ui_share": of(version, "ui_share"),
            "frames_per_s": {k: of(version, "kinds_per_s", k) for k in ("table", "rows", "pulse")},
            "ms_by_kind": {k: of(version, "ms_by_kind", k) for k in ("table", "rows", "pulse")},
            **(
                {k: of(version, k) for k in ("seen_tables_per_s", "seen_status_per_s")}
                if args.terminal
                else {}
            ),
        }
        for version in versions
    }
    way = "in a terminal (pty, read by pyte)" if args.terminal else "headless driver"
    print(f"table_pace: {args.workers} workers, {args.seconds:g} s a run, {way}; {machine_line()}")
    headers = ["code", "table redraws/s", "table + rows + pulses a second", "ms each"]
    headers += ["screen's share of the loop"]
    if args.terminal:
        headers += ["table seen changing/s", "status line seen changing/s"]
    rows: list[list[object]] = []
    for version, f in summary.items():
        kinds, ms = f["frames_per_s"], f["ms_by_kind"]
        row: list[object] = [version, f["tables_per_s"]]
        row.append(" + ".join(f"{kinds[k]:.2f}" for k in ("table", "rows", "pulse")))
        row.append(" / ".join(f"{ms[k]:.2f}" for k in ("table", "rows", "pulse")))
        row.append(f"{f['ui_share']:.1%}")
        if args.terminal:
            row += [f"{f['seen_tables_per_s']:.2f}", f"{f['seen_status_per_s']:.2f}"]
        rows.append(row)
    print(table(headers, rows))
    print(f"goal {GOAL:g} table redraws a second: {summary['now']['tables_per_s']:.1f}")
    write_results("table_pace", args, {"summary": summary, "runs": runs})


if __name__ == "__main__":
    main()
