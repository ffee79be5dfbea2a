"""Smoke test of the benchmarks: each script's quick mode runs, exits 0 and writes its JSON
with the expected keys. No timing is asserted: the machine running the tests is shared."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

# script -> keys its "figures" must have
EXPECTED: dict[str, tuple[str, ...]] = {
    "throughput": ("summary", "trials", "profile", "startup_s"),
    "latency": ("summary", "trials"),
    "loop_lag": ("crawls", "big_page", "tui"),
    "ui_overhead": ("summary", "terminal"),
    "screen_scale": ("kb_per_worker_screen", "frame_ms_mean", "frames_skipped"),
    "memory": ("idle", "big_crawl"),
    "timing_cost": ("rows", "pages_per_s_ratio", "cpu_per_page_ratio", "fastest_ratio"),
    "per_core": ("rows", "summary", "profile"),
    "table_pace": ("summary", "runs"),
    "procs": ("rows", "pages_per_s", "ratio", "cpu_us_per_page", "ceiling", "tax", "model"),
    "frontier_cost": ("rows", "cpu_us_per_lease", "wall_us_per_lease", "leases_per_round"),
    "recorder_cost": (
        "rows",
        "pages_per_s_ratio",
        "cpu_per_page_ratio",
        "measured_bytes_per_event",
        "estimated_bytes_per_event",
        "direct_share",
    ),
    "time_screens": ("frames", "seeks", "rewind_open_s", "ring_events", "lanes"),
}


def run_quick(script: str, results: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", f"bench.{script}", "--quick", "--results-dir", str(results)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.strip(), "a benchmark prints its table"
    document: dict[str, Any] = json.loads((results / f"{script}.json").read_text())
    return document


@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_quick_mode_writes_its_results(script: str, tmp_path: Path) -> None:
    document = run_quick(script, tmp_path)
    assert document["benchmark"] == script
    assert document["date"]
    for key in ("nproc", "cpu_model", "python"):
        assert key in document["machine"]
    assert document["settings"]["quick"] is True
    for key in EXPECTED[script]:
        assert key in document["figures"], key
    if script == "procs":
        # Every part of a --procs crawl was found under the command and measured.
        rows = document["figures"]["rows"]
        assert {row["procs"] for row in rows} == {0, 1, 2}  # plain, side by side
        for row in rows:
            parts = row["cpu_by_role"]
            if row["procs"] == 0:  # a plain crawl: one process, no Redis
                assert parts["children"] == parts["redis"] == 0 < parts["parent"], parts
                continue
            assert {"child", "redis"} <= set(row["roles_seen"]), row["roles_seen"]
            assert parts["children"] > 0 and parts["site"] > 0, parts
    if script == "per_core":
        # The profile side by side: each side's categories add up to its CPU a page, and
        # only the engine parses.
        *parts, whole = document["figures"]["profile"]["categories"]
        assert whole["category"] == "all"
        for side in ("fetch_us", "engine_us"):
            assert sum(p[side] for p in parts) == pytest.approx(whole[side], rel=0.01)
        (parsing,) = [p for p in parts if p["category"].startswith("parsing")]
        assert parsing["fetch_us"] == 0 < parsing["engine_us"]
    if script == "recorder_cost":
        on = [row for row in document["figures"]["rows"] if row["mode"] == "on"]
        # What the ring holds is measured, and the bound's estimate is not below it.
        assert on and all(r["estimated_bytes_per_event"] >= r["measured_bytes_per_event"]
                          for r in on)  # fmt: skip
    if script == "throughput":
        for workers in ("8", "100"):
            entry = document["figures"]["summary"][workers]
            for kind in ("baseline", "engine", "command"):
                assert entry[kind]["pages_per_s"] > 0
            # Both crawled the same site (the baseline follows one redirect chain further).
            assert abs(entry["engine"]["pages"] - entry["baseline"]["pages"]) <= 5


def test_a_ratio_pairs_the_two_crawls_of_each_round() -> None:
    from bench.common import paired_ratios

    rows = [
        {"round": 1, "mode": "tui", "wall_s": 10.0},
        {"round": 1, "mode": "headless", "wall_s": 9.0},
        {"round": 2, "mode": "headless", "wall_s": 18.0},  # a busy minute slows both
        {"round": 2, "mode": "tui", "wall_s": 20.0},
        {"round": 3, "mode": "tui", "wall_s": 12.0},  # its headless crawl never ran
    ]
    assert paired_ratios(rows, "wall_s", "headless", "tui") == [0.9, 0.9]


def test_the_fastest_ratio_sets_each_mode_s_fastest_crawl_against_the_other_s() -> None:
    from bench.common import fastest_ratio

    rows = [
        {"round": 1, "mode": "tui", "wall_s": 10.0, "pages_per_s": 2000.0},
        {"round": 1, "mode": "headless", "wall_s": 12.0, "pages_per_s": 1800.0},  # slowed
        {"round": 2, "mode": "headless", "wall_s": 9.5, "pages_per_s": 2200.0},
        {"round": 2, "mode": "tui", "wall_s": 11.0, "pages_per_s": 1900.0},
    ]
    assert fastest_ratio(rows, "wall_s", "headless", "tui") == 0.95
    assert fastest_ratio(rows, "pages_per_s", "tui", "headless", max) == 2000 / 2200


def test_the_host_s_share_is_read_between_two_readings_of_the_machine_s_ticks() -> None:
    from bench.common import cpu_ticks, stolen_share

    # 20 of 100 ticks taken by the host; no ticks at all: no figure rather than 0/0.
    assert stolen_share((10, 1000), (30, 1100)) == 0.2
    assert stolen_share((0, 0), (0, 0)) is None
    stolen, ticks = cpu_ticks()
    assert ticks > 0 and 0 <= stolen <= ticks  # this machine has a /proc/stat


def test_the_ratio_at_equal_steal_is_the_fit_s_value_where_both_crawls_lost_the_same() -> None:
    from bench.common import ratio_at_equal_steal

    # Each point of share the TUI's crawl lost beyond the headless one costs it 2% here.
    rows = []
    for rnd, (headless_share, tui_share) in enumerate([(0.01, 0.01), (0.01, 0.06), (0.05, 0.02)]):
        ratio = 0.95 - 2 * (tui_share - headless_share)
        rows += [
            {"round": rnd, "mode": "headless", "wall_s": 20 * ratio, "stolen": headless_share},
            {"round": rnd, "mode": "tui", "wall_s": 20.0, "stolen": tui_share},
        ]
    assert round(ratio_at_equal_steal(rows, "wall_s", "headless", "tui") or 0, 6) == 0.95
    # Two rounds, or shares that never differ, fit no line.
    assert ratio_at_equal_steal(rows[:4], "wall_s", "headless", "tui") is None
    same = [dict(row, stolen=0.02) for row in rows]
    assert ratio_at_equal_steal(same, "wall_s", "headless", "tui") is None


def test_a_demo_site_started_twice_is_one_process_and_ends_with_its_block() -> None:
    # timing_cost entered `DemoSite(...).start()`: two servers, the first never stopped.
    from bench.common import DemoSite, SiteOptions

    site = DemoSite(SiteOptions(pages=10)).start()
    first = site.proc
    assert first is not None
    with site as same:
        assert same is site and site.proc is first
    assert first.poll() is not None  # ended, not left running
