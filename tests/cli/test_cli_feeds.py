"""What a user coming from Scrapy or wget reaches for first: feeds by extension, `-o -`,
--version, `python -m crawlscope`, a root without a scheme, a subcommand's own error,
--help in human units, --report."""

from __future__ import annotations

import csv
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crawlscope.cli import build_parser, main
from crawlscope.cli.options import byte_size, subcommands, with_scheme
from crawlscope.engine.exchange.feeds import feed_format
from crawlscope.engine.records import FIELDS
from helpers import CLI, demo_site_process, run_cli

NO_HANG = 60.0  # a guard against a hang on a loaded machine, never a speed target


@pytest.fixture(scope="module")
def demo_site() -> Iterator[str]:
    with demo_site_process() as url:
        yield url


@pytest.fixture(scope="module")
def slow_site() -> Iterator[str]:
    """Slow enough that a crawl of it is still running when the test acts."""
    with demo_site_process("--pages", "400", "--latency", "0.2") as url:
        yield url


def report_count(report: str, word: str) -> int:
    return int(next(line for line in report.splitlines() if line.startswith(f"{word}: "))[6:])


# ---- feeds ------------------------------------------------------------------------------


@pytest.mark.slow
def test_each_output_takes_the_format_its_extension_names(demo_site: str, tmp_path: Path) -> None:
    jsonl, table, array = tmp_path / "out.jsonl", tmp_path / "out.csv", tmp_path / "out.json"
    result = run_cli("crawl", demo_site, "-o", str(jsonl), "-o", str(table), "-o", str(array))
    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    with table.open(newline="", encoding="utf-8") as file:
        reader = csv.DictReader(file)
        assert tuple(reader.fieldnames or ()) == FIELDS
        rows = list(reader)
    assert all(None not in row and tuple(row) == FIELDS for row in rows)  # every field
    items = json.loads(array.read_text(encoding="utf-8"))
    assert isinstance(items, list)
    assert [r["url"] for r in rows] == [r["url"] for r in lines] == [r["url"] for r in items]
    assert len(lines) > 60
    # The same values; in CSV, None is an empty cell and every value is text.
    for row, line in zip(rows, lines, strict=True):
        assert row == {k: "" if v is None else str(v) for k, v in line.items()}
    assert items == lines
    assert report_count(result.stdout, "Done") == sum(1 for r in items if not r["filtered"])


def test_dash_writes_json_lines_to_stdout_and_the_report_to_stderr(demo_site: str) -> None:
    result = run_cli("crawl", demo_site, "-o", "-", "--max-pages", "5")
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in result.stdout.splitlines()]
    assert len([r for r in records if not r["filtered"]]) == 5
    assert "*** Report ***" in result.stderr
    assert not Path("-").exists()


def test_format_forces_one_format_whatever_the_name(demo_site: str, tmp_path: Path) -> None:
    out = tmp_path / "records.txt"
    result = run_cli("crawl", demo_site, "-o", str(out), "--format", "csv", "--max-pages", "3")
    assert result.returncode == 0, result.stderr
    assert out.read_text(encoding="utf-8").splitlines()[0] == ",".join(FIELDS)


def test_formats_by_name() -> None:
    assert feed_format("a.jsonl") == feed_format("a.jl") == feed_format("a.txt") == "jsonl"
    assert feed_format("A.CSV") == "csv"
    assert feed_format("a.json") == "json"
    assert feed_format("-") == "jsonl"
    assert feed_format("a.json", "csv") == "csv"


@pytest.mark.slow
def test_the_json_array_is_whole_after_ctrl_c(slow_site: str, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    crawl = subprocess.Popen(
        [*CLI, "crawl", slow_site, "-o", str(out)], stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + NO_HANG
        while _lines(out) < 4:  # "[" and three records
            assert crawl.poll() is None, "the crawl ended before the signal"
            assert time.monotonic() < deadline, "gave up waiting for records in the file"
            time.sleep(0.01)
        crawl.send_signal(signal.SIGINT)
        stdout, stderr = crawl.communicate(timeout=NO_HANG)
    finally:
        if crawl.poll() is None:
            crawl.kill()
            crawl.wait()
    assert crawl.returncode == 130, stderr
    items = json.loads(out.read_text(encoding="utf-8"))
    assert report_count(stdout, "Done") == sum(1 for r in items if not r["filtered"])
    assert report_count(stdout, "Todo") > 0  # it was stopped, not finished


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


# ---- the command itself -----------------------------------------------------------------


def test_version_and_python_dash_m_crawlscope() -> None:
    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("crawlscope 0.")
    module = subprocess.run(
        [sys.executable, "-m", "crawlscope", "--version"], capture_output=True, text=True,
        timeout=NO_HANG, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert module.returncode == 0, module.stderr
    assert module.stdout == result.stdout


def test_a_root_without_a_scheme_is_taken_as_https(
    demo_site: str, capsys: pytest.CaptureFixture[str]
) -> None:
    hostport = demo_site.removeprefix("http://").rstrip("/")
    # The demo site speaks plain HTTP: https:// cannot reach it (status 1), which shows
    # what was asked.
    assert main(["crawl", hostport, "--max-tries", "1", "-q"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        f"crawlscope: {hostport} has no scheme: crawling https://{hostport}/"
    )


@pytest.mark.parametrize(
    ("given", "taken"),
    [
        ("example.com", "https://example.com/"),
        ("example.com/docs/a?b=1", "https://example.com/docs/a?b=1"),
        ("localhost:8353", "https://localhost:8353/"),
        ("[::1]:80/x", "https://[::1]:80/x"),
        ("http://example.com/", None),
        ("ftp://example.com/", None),
        ("/just/a/path", None),
        ("", None),
        ("exa mple.com", None),
    ],
)
def test_which_roots_get_a_scheme(given: str, taken: str | None) -> None:
    assert with_scheme(given) == taken


def test_an_unknown_option_names_the_subcommand_and_its_help(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["crawl", "--bogus", "http://127.0.0.1/"])
    assert exit.value.code == 2
    assert capsys.readouterr().err == (
        "crawlscope crawl: error: unrecognized arguments: --bogus (see crawlscope crawl --help)\n"
    )


def help_of(command: str) -> str:
    """The command's --help, its lines joined (argparse wraps them to the terminal)."""
    return " ".join(subcommands(build_parser())[command].format_help().split())


def test_help_shows_defaults_in_human_units() -> None:
    crawl = help_of("crawl")
    assert "(default 10 MiB)" in crawl
    assert "10485760" not in crawl
    assert "with --state, earlier runs' pages count too (default 0: no limit)" in crawl
    assert "follow links N levels deep (default 0: no limit)" in crawl
    assert "(default 60 s)" in crawl
    assert "A ROOT without a scheme (example.com) is taken as https://example.com/" in crawl
    replay = help_of("replay")
    assert "10%" in replay and "10%%" not in replay
    demo = help_of("demo-site")
    tui = help_of("tui")
    assert "pages on the demo site (default 60)" in demo
    assert "the TUI's own demo site is 1000 pages" in demo
    assert "pages on the demo site (default 1000)" in tui


def test_max_size_takes_units(capsys: pytest.CaptureFixture[str]) -> None:
    assert byte_size("10MiB") == byte_size("10 M") == 10 * 1024 * 1024
    assert byte_size("512KiB") == 512 * 1024
    assert byte_size("4096") == 4096
    with pytest.raises(SystemExit):
        main(["crawl", "--max-size", "ten", "http://127.0.0.1/"])
    assert "not a size in bytes like 10MiB or 4096: 'ten'" in capsys.readouterr().err


# ---- --report ---------------------------------------------------------------------------


def test_report_file_gets_the_report_and_stdout_its_totals(demo_site: str, tmp_path: Path) -> None:
    report = tmp_path / "report.txt"
    result = run_cli("crawl", demo_site, "--report", str(report))
    assert result.returncode == 0, result.stderr
    whole = report.read_text(encoding="utf-8").splitlines()
    assert whole[0] == "*** Report ***"
    summary = result.stdout.splitlines()
    assert summary[0].startswith("Finished ")
    assert summary[-1] == f"The full report is in {report}"
    assert summary[-3].endswith("(all accounted for)")
    start = next(n for n, line in enumerate(whole) if line.startswith("Finished "))
    assert whole[start:-1] == summary[:-2]  # the report's own totals, but for the date
    assert not any(line.startswith("http") for line in summary)


def test_a_report_file_that_cannot_be_written_fails_before_the_crawl(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["crawl", "http://127.0.0.1:9/", "--report", "/no/such/dir/r.txt"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("crawlscope: cannot write the report:")  # as tui and serve say it
    assert out == ""  # no crawl ran


@pytest.mark.slow
def test_after_the_tui_only_the_totals_are_printed_and_the_report_goes_to_its_file(
    tmp_path: Path,
) -> None:
    """The real TUI, in a pseudo-terminal: q quits it, and what it leaves on the terminal
    is the totals and where the report went, not a thousand report lines."""
    report = tmp_path / "report.txt"
    main_fd, child_fd = pty.openpty()
    fcntl.ioctl(child_fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    tui = subprocess.Popen(
        [*CLI, "tui", "--pages", "20", "--latency", "0", "--jitter", "0",
         "--report", str(report), "-o", str(tmp_path / "f.csv"), "-o", str(tmp_path / "f.jsonl")],
        stdin=child_fd, stdout=child_fd, stderr=child_fd, close_fds=True,
        env={**os.environ, "TERM": "xterm-256color"},
    )  # fmt: skip
    os.close(child_fd)
    seen = b""
    try:
        deadline = time.monotonic() + NO_HANG
        while b"stopped" not in seen:  # the workers table says so once the crawl is over
            assert time.monotonic() < deadline, "the TUI never showed the crawl's end"
            seen += _read_some(main_fd)
        os.write(main_fd, b"q")
        while tui.poll() is None:
            assert time.monotonic() < deadline, "the TUI did not quit"
            seen += _read_some(main_fd)
        seen += _read_some(main_fd)
    finally:
        if tui.poll() is None:
            tui.kill()
        tui.wait()
        os.close(main_fd)
    assert tui.returncode == 0
    after = seen.rsplit(b"\x1b[?1049l", 1)[-1].decode("utf-8", "replace")  # past the screen
    after = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", after)  # the terminal's modes reset
    lines = [line for line in after.splitlines() if line.strip()]
    assert lines[0].startswith("Finished ")
    assert lines[-1] == f"The full report is in {report}"
    assert "*** Report ***" not in after
    assert report.read_text(encoding="utf-8").startswith("*** Report ***")
    # The TUI writes its --output files as crawl does, whole when it has quit.
    with (tmp_path / "f.csv").open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    lines = (tmp_path / "f.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(rows) == len(lines) > 20
    assert {r["url"] for r in rows} == {json.loads(line)["url"] for line in lines}


def test_the_tui_refuses_to_write_records_over_its_own_screen(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["tui", "-o", "-"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("crawlscope: -o - would write over") and err.count("\n") == 1


def _read_some(fd: int) -> bytes:
    ready, _, _ = select.select([fd], [], [], 0.1)
    if not ready:
        return b""
    try:
        return os.read(fd, 65536)
    except OSError:  # the child closed its end
        return b""
