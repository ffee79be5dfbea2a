"""A mistyped option, as a new user makes one: one line saying what was wrong and where
to read more, exit status 2, never argparse's whole usage block. Real processes."""

from __future__ import annotations

import pytest

from crawlscope.cli import build_parser
from crawlscope.cli.options import subcommands
from helpers import run_cli

COMMANDS = sorted(subcommands(build_parser()))


def assert_one_line(args: list[str], prog: str, says: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert "usage:" not in result.stderr
    assert lines[0].startswith(f"{prog}: error: "), lines[0]
    assert says in lines[0], lines[0]
    assert lines[0].endswith(f"(see {prog} --help)"), lines[0]
    assert result.stdout == ""


def test_every_command_is_known() -> None:
    # So a command added later is covered by the tests below without editing them.
    assert {"crawl", "tui", "lecture", "replay", "demo-site", "attach", "serve"} <= set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_option_is_one_line_for_every_command(command: str) -> None:
    # A positional each command needs, so the unknown option is the only mistake.
    needs = {
        "crawl": ["http://127.0.0.1:9/"],
        "replay": ["x.jsonl"],
        "export": ["x.jsonl", "--trace", "x.json"],
        "why": ["http://h/", "x.jsonl"],
        "attach": ["ws://127.0.0.1:9/"],
        "completion": ["bash"],
    }.get(command, [])
    assert_one_line(
        [command, *needs, "--no-such-option"],
        f"crawlscope {command}",
        "unrecognized arguments: --no-such-option",
    )


@pytest.mark.parametrize(
    ("args", "prog", "says"),
    [
        (["crawl", "--max-tasks", "x", "http://127.0.0.1/"], "crawlscope crawl",
         "--max-tasks/--max_tasks: not a whole number: 'x'"),
        (["crawl"], "crawlscope crawl", "the following arguments are required: ROOT"),
        (["crawl", "--engine", "threads", "http://127.0.0.1/"], "crawlscope crawl",
         "invalid choice: 'threads'"),
        (["tui", "--fps", "99"], "crawlscope tui", "must be from 1 to 30, not 99"),
        (["lecture", "--max-tasks", "0"], "crawlscope lecture", "must be from 1 to 20, not 0"),
        (["demo-site", "--port", "x"], "crawlscope demo-site", "invalid int value: 'x'"),
        (["completion", "tcsh"], "crawlscope completion", "invalid choice: 'tcsh'"),
        (["no-such-command"], "crawlscope", "invalid choice: 'no-such-command'"),
        # --config is looked for before the parse, by a parser of its own: it too is one line.
        (["crawl", "http://127.0.0.1/", "--config"], "crawlscope crawl",
         "argument --config: expected one argument"),
        (["crawl", "http://127.0.0.1/", "--max-t", "3"], "crawlscope crawl",
         "ambiguous option: --max-t could match"),
    ],
)  # fmt: skip
def test_a_bad_value_is_one_line(args: list[str], prog: str, says: str) -> None:
    assert_one_line(args, prog, says)


def test_bare_crawlscope_points_to_the_help_that_lists_its_options() -> None:
    # Bare `crawlscope` takes the TUI's options: `crawlscope --help` does not list them.
    result = run_cli("--pages", "x")
    assert result.returncode == 2
    assert result.stderr == (
        "crawlscope: error: argument --pages: not a whole number: 'x' (see crawlscope tui --help)\n"
    )


def test_what_was_typed_is_shown_escaped_on_its_one_line() -> None:
    result = run_cli("crawl", "--max-tasks", "\x1b]0;owned\x07\nsecond", "http://127.0.0.1/")
    assert result.returncode == 2
    assert len(result.stderr.splitlines()) == 1
    assert "\x1b" not in result.stderr and "\x07" not in result.stderr
    assert "\\x1b]0;owned\\x07\\nsecond" in result.stderr
