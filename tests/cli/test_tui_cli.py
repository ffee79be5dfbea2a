"""`crawlscope tui` and plain `crawlscope` from the command line, in real processes."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from crawlscope.cli import NO_TERMINAL

CLI = [sys.executable, "-m", "crawlscope"]


def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


@pytest.mark.slow
def test_screenshot_runs_headless_and_writes_an_svg(tmp_path: Path) -> None:
    shot = tmp_path / "shots" / "overview.svg"
    result = run(
        "tui", "--pages", "20", "--latency", "0.01", "--jitter", "0",
        "--screenshot", str(shot), "--screenshot-after", "1", "--size", "100x30",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    svg = shot.read_text(encoding="utf-8")
    assert svg.startswith("<svg") and "workers" in svg and "redirect" in svg
    assert "Report" not in result.stdout  # a screenshot is not a crawl to report on


def test_without_a_terminal_the_tui_says_so() -> None:
    result = run("tui")
    assert result.returncode == 2
    assert "needs a terminal" in result.stderr
    assert "Traceback" not in result.stderr


def test_plain_crawlscope_without_a_terminal_crawls_the_demo_headless() -> None:
    result = run("--pages", "10")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("*** Report ***")
    assert "(all accounted for)" in result.stdout


def test_plain_crawlscope_into_a_pipe_says_in_one_line_what_it_runs_instead() -> None:
    # stdout a pipe, as in CI or `crawlscope | less`: one line on stderr before the crawl.
    result = run("--pages", "10")
    assert result.returncode == 0, result.stderr
    assert result.stderr.splitlines() == [NO_TERMINAL]
    assert "headless" in NO_TERMINAL and "demo site" in NO_TERMINAL and "TUI" in NO_TERMINAL
    assert NO_TERMINAL not in result.stdout  # the report stays clean for whoever reads it


def test_plain_crawlscope_with_a_terminal_out_but_none_in_runs_headless_too() -> None:
    """stdout a terminal but stdin not (`echo | crawlscope`): no keys could reach a TUI,
    so the same headless demo crawl, said in the same line, not a refusal."""
    controller, terminal = os.openpty()
    proc = subprocess.Popen(
        [*CLI, "--pages", "10"], stdin=subprocess.DEVNULL, stdout=terminal,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    os.close(terminal)
    shown = b""
    with contextlib.suppress(OSError):  # EIO: the process closed its end
        while chunk := os.read(controller, 65536):
            shown += chunk
    os.close(controller)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert err.splitlines() == [NO_TERMINAL]
    assert b"*** Report ***" in shown and b"(all accounted for)" in shown


def test_tui_options_are_checked_before_the_screen_opens() -> None:
    result = run("tui", "--max-tasks", "0")
    assert result.returncode == 2
    assert "must be at least 1" in result.stderr
    result = run("tui", "ftp://example.com/")
    assert result.returncode == 2
    assert "not an http(s) URL" in result.stderr


def test_tui_help_gives_the_demo_defaults_it_uses() -> None:
    result = run("tui", "--help")
    assert result.returncode == 0
    assert "--screenshot" in result.stdout
    assert "(default 1000)" in result.stdout  # the watched demo site, not the bare one
