"""Whole crawls in a real terminal: the TUI in a pseudo-terminal against `crawlscope crawl -q`.

`run_tui` starts this module as a process of its own on the slave side of a pty (the
size of a big terminal window), answers the terminal queries Textual makes, reads and
discards everything the app draws, and stops the clock when FINISHED appears on the
screen; then it presses q. `run_headless` times `crawlscope crawl -q` from start to exit.
Both crawl with the same options (`crawlscope crawl`'s defaults, the per-host limit off),
so the ratio of their wall times is what the TUI costs a user at a terminal.

    python -m bench.terminal URL --workers 100 --figures FILE   (what runs in the pty)
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pty
import resource
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path
from typing import Any

from bench.common import REPO, cpu_ticks, stolen_share

SIZE = (160, 48)  # columns, rows: a big terminal window, about 40 worker rows shown
FINISHED = b"FINISHED"
# Textual asks whether the terminal supports synchronized output; a modern terminal says
# yes, and then each update is drawn between the two markers below, as it would be there.
_ASK_SYNC = b"\x1b[?2026$p"
_SYNC_YES = b"\x1b[?2026;2$y"
_SYNC_START = b"\x1b[?2026h"


def crawl_options(workers: int) -> list[str]:
    return ["--max-tasks", str(workers), "--per-host", "0"]


def children_cpu() -> float:
    """CPU seconds of this process's waited-for children: on a shared machine, what a
    crawl cost is steadier than how long it took."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_headless(url: str, workers: int, timeout: float = 600.0) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "crawlscope", "crawl", "-q", url, *crawl_options(workers)]
    t0, c0, s0 = time.perf_counter(), children_cpu(), cpu_ticks()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, timeout=timeout, check=False)
    wall, stolen = time.perf_counter() - t0, stolen_share(s0, cpu_ticks())
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]!r}")
    cpu = children_cpu() - c0
    return {"mode": "headless", "workers": workers, "wall_s": wall, "cpu_s": cpu, "stolen": stolen}


def run_tui(url: str, workers: int, timeout: float = 600.0, keys: bytes = b"") -> dict[str, Any]:
    """Spawn the TUI in a pty; wall seconds from spawn to FINISHED on its screen. `keys`
    are typed once the crawl runs (b"t": the crawl watched on the timeline)."""
    with tempfile.TemporaryDirectory() as tmp:
        figures_path = Path(tmp) / "figures.json"
        cmd = [sys.executable, "-m", "bench.terminal", url, "--workers", str(workers)]
        cmd += ["--figures", str(figures_path)]
        master, slave = pty.openpty()
        cols, rows = SIZE
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor"}
        env["COLUMNS"], env["LINES"] = str(cols), str(rows)  # the pty's, whatever we inherit
        t0, c0, s0 = time.perf_counter(), children_cpu(), cpu_ticks()
        proc = subprocess.Popen(
            cmd,
            cwd=REPO,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        try:
            updates = [0]
            shown, drawn = _read_until_finished(master, proc, t0 + timeout, updates, keys)
            wall, stolen = time.perf_counter() - t0, stolen_share(s0, cpu_ticks())
            # Out of the screen the keys opened (the timeline's own q closes it), then quit.
            os.write(master, (b"t" if keys == b"t" else b"") + b"q")
            _drain_until_exit(master, proc, time.perf_counter() + 60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(master)
        cpu = children_cpu() - c0
        if not shown:
            raise RuntimeError(f"the TUI never showed FINISHED (exit status {proc.returncode})")
        if not figures_path.exists():
            raise RuntimeError(f"the TUI wrote no figures (exit status {proc.returncode})")
        app = json.loads(figures_path.read_text(encoding="utf-8"))
    return {
        "mode": "tui",
        "workers": workers,
        "wall_s": wall,
        # Start to exit: with the quit after FINISHED and the report (a fraction of a second).
        "cpu_s": cpu,
        # The share of the machine's CPU time its host took while this crawl ran.
        "stolen": stolen,
        "bytes_drawn": drawn,
        "screen_updates": updates[0],
        **app,
    }


def _read(master: int, wait: float) -> bytes:
    ready, _, _ = select.select([master], [], [], wait)
    if not ready:
        return b""
    try:
        return os.read(master, 1 << 16)
    except OSError:  # the slave side closed: the process is gone
        return b""


def _read_until_finished(
    master: int,
    proc: subprocess.Popen[bytes],
    deadline: float,
    updates: list[int],
    keys: bytes = b"",
) -> tuple[bool, int]:
    """Read the app's output until FINISHED is drawn; counts in `updates[0]` the screen
    updates (each drawn between synchronized-output markers). `keys` go in once the
    crawl shows RUNNING (before, the keys that need a crawl do nothing)."""
    tail = b""
    drawn = 0
    while time.perf_counter() < deadline:
        chunk = _read(master, 0.5)
        if not chunk:
            if proc.poll() is not None:
                return False, drawn
            continue
        drawn += len(chunk)
        seen = tail + chunk
        updates[0] += seen.count(_SYNC_START) - tail.count(_SYNC_START)
        if keys and b"RUNNING" in seen:  # the crawl has started: its keys apply
            os.write(master, keys)
            keys = b""
        if _ASK_SYNC in seen:
            os.write(master, _SYNC_YES)
        if FINISHED in seen:
            return True, drawn
        tail = seen[-16:]
    return False, drawn


def _drain_until_exit(master: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    # The app's last frames and the report go to the pty: read them, or it blocks.
    while proc.poll() is None and time.perf_counter() < deadline:
        _read(master, 0.2)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


# ---- the TUI side, running in the pty ------------------------------------------------------


def main() -> None:
    p = argparse.ArgumentParser(description="the TUI crawling URL, as `crawlscope tui` does")
    p.add_argument("url")
    p.add_argument("--workers", type=int, default=100)
    p.add_argument("--figures", type=Path, required=True, help="where to write the frame figures")
    args = p.parse_args()

    from crawlscope.cli import build_parser
    from crawlscope.cli.options import crawl_config
    from crawlscope.tui.app import CrawlScopeApp
    from crawlscope.tui.startup import LiveCrawl

    cli = build_parser().parse_args(["tui", args.url, *crawl_options(args.workers)])
    live = LiveCrawl((args.url,), make_config=lambda roots: crawl_config(cli, list(roots)))
    app = CrawlScopeApp(live)
    # The screen is gone from the app once it has quit; its frame counts are kept here.
    screens: list[Any] = []
    make_screen = app.get_default_screen

    def keep_screen() -> Any:
        screens.append(make_screen())
        return screens[-1]

    app.get_default_screen = keep_screen  # type: ignore[method-assign]
    app.run()
    args.figures.write_text(json.dumps(app_figures(screens[0], live)), encoding="utf-8")


def since_process_start(moment: float) -> float:
    """Seconds from this process's start to `moment` (time.monotonic()), to the kernel's
    10 ms: the interpreter's own start-up counted, as a user waits through it."""
    ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
    started = ticks / os.sysconf("SC_CLK_TCK")
    return time.clock_gettime(time.CLOCK_BOOTTIME) - started - (time.monotonic() - moment)


def app_figures(panels: Any, live: Any) -> dict[str, Any]:
    """The app's own account of its frames during the crawl."""
    crawler = live.crawler
    seconds = crawler.elapsed if crawler is not None else float("nan")
    t0 = crawler.t0 if crawler is not None else None
    pages = len(crawler.ledger.done) + len(crawler.ledger.failed) if crawler else 0
    return {
        "pages": pages,
        "crawl_seconds": seconds,
        # From the process's start to the crawl's first moment: imports, mounting the
        # screen and its first frames.
        "start_s": since_process_start(t0) if t0 is not None else float("nan"),
        "frames": panels.frames,
        "frames_skipped": getattr(panels, "frames_skipped", 0),
        "frame_costs_ms": [c * 1000 for c in panels.frame_costs],
        # Ticks and Textual's drawing, start-up and quit included (it errs against the TUI).
        "ui_seconds": getattr(panels, "ui_seconds", float("nan")),
    }


if __name__ == "__main__":
    main()
